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
``--uri``. Printed: the median seconds per cell each way, and per question; then where a cell's
logging goes with the defaults, call by call (the median milliseconds of each MLflow client call
``log_cell`` makes, the traces' writing, and the rest: the questions table, locks). Each cell is
logged with its resolved config as params, its tags, its dataset input and its result in hand, as
the sweep's background process logs it (what the sweep's own thread builds is built before the timing).

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
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import rag_bench.tracking.mlflow_tracker as mlflow_tracker  # noqa: E402
from rag_bench.naming import flat_params  # noqa: E402
from rag_bench.tracking.base import cell_tags, dataset_info, questions_table, tracked_metrics  # noqa: E402
from rag_bench.tracking.mlflow_tracker import MlflowTracker  # noqa: E402

# The MLflow client calls log_cell makes (besides the traces), timed with --repeat's cells.
CALLS = ("create_run", "search_runs", "log_batch", "log_inputs", "log_artifacts", "log_artifact", "set_terminated")

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
    import yaml

    metrics = json.loads((cell / "metrics.json").read_text())
    config = yaml.safe_load((cell / "config.yaml").read_text())
    records = pd.read_parquet(cell / "records.parquet")
    tags = cell_tags(config, dataset_fingerprint=str(metrics.get("dataset_fingerprint", "")), dataset="bench")
    # the cell's result in hand, as the sweep's background process has it (no records read back for the traces)
    written = SimpleNamespace(records=records, metrics=metrics)
    params, tracked, table = flat_params(config), tracked_metrics(metrics), questions_table(records)
    dataset = dataset_info(config, metrics, "bench")
    start = time.perf_counter()
    tracker.log_cell(cell_id=cell_id, cell_dir=cell, params=params, metrics=tracked, tags=tags, dataset=dataset,
                     table=table, written=written)
    return time.perf_counter() - start


@contextlib.contextmanager
def timed_calls(tracker: MlflowTracker) -> Iterator[dict[str, float]]:
    """Within the block, the seconds each of :data:`CALLS` of ``tracker``'s client and the traces'
    writing (``log_traces``) took, summed by name (the traces' calls are inside ``traces``)."""
    spent: dict[str, float] = dict.fromkeys((*CALLS, "traces"), 0.0)
    client = tracker._get_client()

    def timer(name: str, call):  # type: ignore[no-untyped-def]
        def timed(*args, **kwargs):  # type: ignore[no-untyped-def]
            start = time.perf_counter()
            try:
                return call(*args, **kwargs)
            finally:
                spent[name] += time.perf_counter() - start
        return timed

    for name in CALLS:
        setattr(client, name, timer(name, getattr(client, name)))
    writer = mlflow_tracker.log_traces
    mlflow_tracker.log_traces = timer("traces", writer)
    try:
        yield spent
    finally:
        mlflow_tracker.log_traces = writer
        for name in CALLS:
            delattr(client, name)


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
            calls: dict[str, list[float]] = {}
            for n in range(args.repeat):
                for name, tracker in arms.items():
                    if name != "defaults":
                        times[name].append(log_once(tracker, cell, f"cell-{n}-{name}"))
                        continue
                    with timed_calls(tracker) as spent:
                        times[name].append(log_once(tracker, cell, f"cell-{n}-{name}"))
                    for call, seconds in {**spent, "rest": times[name][-1] - sum(spent.values())}.items():
                        calls.setdefault(call, []).append(seconds)
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
        print(f"\nwhere a cell's logging goes with the defaults (median ms of {args.repeat} cells):")
        for call, seconds in sorted(calls.items(), key=lambda kv: -statistics.median(kv[1])):
            print(f"  {call:<32}{1000 * statistics.median(seconds):>8.1f}")


if __name__ == "__main__":
    main()
