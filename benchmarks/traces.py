"""What per-question traces (``tracking.traces``) cost per cell: a cell's MLflow logging with
traces off, with the defaults (a sample of ``tracking.trace_sample`` questions traced) and with
every question traced (``tracking.trace_sample=null``), side by side, in one run; then
``MlflowTracker.complete_traces`` (what ``rag-bench traces CELL`` runs) writing the rest of a
sampled cell.

The cell is computed once (``rag-bench run tracking=none``: squad2-normans, 208 questions, when
../shared is there, else the built-in demo set), then logged ``--repeat`` times each way by
``MlflowTracker.log_cell`` (what the sweep's background finisher calls), the three ways in turn,
each time as a new cell id (the normal path: nothing to replace). The store is a fresh SQLite
file (the default ``tracking.uri``), or with ``--server`` a local ``mlflow server`` on SQLite, or
``--uri``. Printed: the median seconds per cell each way, and per question.

    python benchmarks/traces.py                 # SQLite store, 5 repeats
    python benchmarks/traces.py --server        # through a local mlflow server
    python benchmarks/traces.py --cell /path/to/cell --repeat 3
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rag_bench.tracking.base import questions_table, tracked_metrics  # noqa: E402
from rag_bench.tracking.mlflow_tracker import MlflowTracker  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "datasets" / "squad2-normans"
BIN = Path(sys.executable).parent


def compute_cell(out: Path) -> Path:
    """One cell of the default config on squad2-normans (else the demo set), not tracked."""
    dataset = [f"dataset.path={SHARED}"] if SHARED.exists() else []
    env = {**os.environ, "PYTHONPATH": str(REPO)}  # this checkout's rag_bench
    subprocess.run([str(BIN / "rag-bench"), "run", "tracking=none", f"output.root={out}", "experiment.name=bench",
                    *dataset], check=True, capture_output=True, text=True, env=env)
    return next((out / "bench").glob("*/DONE")).parent


@contextlib.contextmanager
def mlflow_server(root: Path) -> Iterator[str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    uri = f"http://127.0.0.1:{port}"
    env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
    with open(root / "server.log", "w") as log:
        proc = subprocess.Popen([str(BIN / "mlflow"), "server", "--backend-store-uri", f"sqlite:///{root}/server.db",
                                 "--host", "127.0.0.1", "--port", str(port), "--workers", "1"],
                                stdout=log, stderr=subprocess.STDOUT, cwd=root, env=env)
        try:
            for _ in range(240):
                with contextlib.suppress(OSError):
                    with urllib.request.urlopen(uri + "/health", timeout=2):
                        break
                time.sleep(0.5)
            yield uri
        finally:
            proc.terminate()
            proc.wait(timeout=30)


def log_once(tracker: MlflowTracker, cell: Path, cell_id: str) -> float:
    import pandas as pd

    metrics = json.loads((cell / "metrics.json").read_text())
    table = questions_table(pd.read_parquet(cell / "records.parquet"))
    start = time.perf_counter()
    tracker.log_cell(cell_id=cell_id, cell_dir=cell, params={"k": 5}, metrics=tracked_metrics(metrics), tags={},
                     table=table)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cell", type=Path, help="a computed cell folder (default: compute one)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--server", action="store_true", help="log through a local mlflow server")
    ap.add_argument("--uri", help="an MLflow tracking URI to log to")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="rag_bench_traces_") as tmp_name:
        tmp = Path(tmp_name)
        cell = args.cell or compute_cell(tmp / "cells")
        questions = int(json.loads((cell / "metrics.json").read_text()).get("counts", {}).get("questions", 0))
        with contextlib.ExitStack() as stack:
            uri = args.uri or (stack.enter_context(mlflow_server(tmp)) if args.server else None)
            arms = {"off": MlflowTracker(uri=uri, background=False, traces=False),
                    "defaults": MlflowTracker(uri=uri, background=False),
                    "every question": MlflowTracker(uri=uri, background=False, trace_sample=None)}
            for t in arms.values():
                t.bind(output_root=tmp, experiment="traces-bench", sweep_id="bench")
            log_once(arms["off"], cell, "warm-up")  # store creation and imports, not timed
            times: dict[str, list[float]] = {name: [] for name in arms}
            rest: list[float] = []
            for n in range(args.repeat):
                for name, tracker in arms.items():
                    times[name].append(log_once(tracker, cell, f"cell-{n}-{name}"))
                start = time.perf_counter()  # the sampled cell's other questions, as `rag-bench traces` writes them
                arms["defaults"].complete_traces(f"cell-{n}-defaults", cell)
                rest.append(time.perf_counter() - start)
            arms["off"].finish_sweep(ok=True)
        where = uri or "sqlite (tracking.uri default)"
        sample = arms["defaults"].trace_sample
        print(f"cell: {cell} ({questions} questions); store: {where}; median of {args.repeat}")
        print(f"{'traces':<34}{'s/cell':>10}{'ms/question':>14}")
        off = statistics.median(times["off"])
        for name, label in (("off", "off"), ("defaults", f"defaults (a sample of {sample})"),
                            ("every question", "every question (trace_sample=null)")):
            med = statistics.median(times[name])
            print(f"{label:<34}{med:>10.3f}{1000 * med / max(1, questions):>14.2f}   x{med / off:.1f} the logging "
                  "without traces")
        later = statistics.median(rest)
        print(f"{'rag-bench traces CELL (the rest)':<34}{later:>10.3f}{1000 * later / max(1, questions - sample):>14.2f}"
              f"   ({questions - sample} questions, on demand)")


if __name__ == "__main__":
    main()
