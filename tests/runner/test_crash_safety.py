"""kill -9 at the worst moments, then the same command again: no partial cell is read as done,
no duplicate or dangling MLflow run, the same numbers as an uninterrupted run."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from tests.conftest import TINY

pytestmark = pytest.mark.slow
BIN = Path(sys.executable).parent


GRID = ["chunker=fixed,section"]
BIG_GRID = ["chunker=fixed,section", "pipeline.k=3,5,10"]


def command(out: Path, grid: list[str]) -> list[str]:
    return [str(BIN / "rag-bench"), "run", "-m", *grid, f"dataset.path={TINY}", f"output.root={out}"]


def environ(failpoint: str | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
    if failpoint:
        env["RAG_BENCH_FAILPOINT"] = failpoint
    return env


def rag_bench(out: Path, failpoint: str | None = None, grid: list[str] = GRID) -> subprocess.CompletedProcess:
    return subprocess.run(command(out, grid), env=environ(failpoint), capture_output=True, text=True, timeout=600)


def mlflow_cells(out: Path) -> dict[str, dict[str, float]]:
    """MLflow metrics of each cell run (timings and cache counts left out, and ``rank``: cells tied on
    the primary measure are ordered by their measured latency), keyed by cell id."""
    return {r.data.tags["cell_id"]: {k: v for k, v in r.data.metrics.items()
                                     if (not k.startswith(("latency.", "cost.", "ann.")) or k.startswith("ann.ann_recall"))
                                     and k != "rank"}
            for r in cell_runs(out)}


def cell_runs(out: Path) -> list:
    client = MlflowClient(tracking_uri=f"sqlite:///{out / 'mlflow.db'}")
    exp = client.get_experiment_by_name("default")
    return [r for r in client.search_runs([exp.experiment_id]) if r.data.tags.get("rag_bench.role") == "cell"]


def metrics_by_cell(out: Path) -> dict[str, dict]:
    result = {}
    for done in (out / "default").glob("*/DONE"):
        m = json.loads((done.parent / "metrics.json").read_text())
        m.pop("latency")
        m.pop("cost")  # cache hits depend on what earlier runs left in the cache
        result[done.parent.name] = m
    return result


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    out = tmp_path_factory.mktemp("ref")
    assert rag_bench(out).returncode == 0
    return metrics_by_cell(out)


@pytest.mark.parametrize("point", ["cell_written", "mlflow_run_created", "before_done"])
def test_kill_then_resume(tmp_path, reference, point):
    out = tmp_path / "out"
    killed = rag_bench(out, point)
    assert killed.returncode == -9, killed.stderr[-2000:]
    assert not list((out / "default").glob("*/DONE")), "nothing is done before the kill point passes"
    partial = [p for p in (out / "default").iterdir() if not p.name.startswith(".")]
    # The first cell's files, without DONE; at a point inside MLflow logging, which a sweep does in
    # a child process while the next cell runs (rag_bench.tracking.background), the second
    # cell's files may be written too, and are not DONE either.
    assert len(partial) == 1 if point == "cell_written" else 1 <= len(partial) <= 2, [p.name for p in partial]
    # resume: the same command finishes everything
    again = rag_bench(out)
    assert again.returncode == 0, again.stderr[-2000:]
    runs = cell_runs(out)
    assert sorted(r.data.tags["cell_id"] for r in runs) == sorted(reference), "one run per cell, no duplicates"
    assert all(r.info.status == "FINISHED" for r in runs)
    client = MlflowClient(tracking_uri=f"sqlite:///{out / 'mlflow.db'}")
    exp = client.get_experiment_by_name("default")
    assert not [r for r in client.search_runs([exp.experiment_id]) if r.info.status == "RUNNING"]
    assert metrics_by_cell(out) == reference


@pytest.fixture(scope="module")
def big_reference(tmp_path_factory):
    out = tmp_path_factory.mktemp("bigref")
    assert rag_bench(out, grid=BIG_GRID).returncode == 0
    return out


def test_sigkill_at_a_random_cell_then_resume(tmp_path, big_reference):
    """kill -9 the whole sweep after a random number of finished cells (plus a random delay, so
    the kill lands anywhere inside the next cell), run the same command again: same cells, same
    metrics and MLflow runs as the uninterrupted sweep; nothing duplicated, nothing left RUNNING."""
    seed = int(os.environ.get("RAG_BENCH_KILL_SEED", time.time_ns() % 100_000))
    rng = random.Random(seed)
    after, delay = rng.randint(1, 5), rng.uniform(0, 0.5)
    why = f"RAG_BENCH_KILL_SEED={seed} (kill after {after} cells + {delay:.2f} s)"
    for attempt in range(4):
        out = tmp_path / f"out{attempt}"
        proc = subprocess.Popen(command(out, BIG_GRID), env=environ(), stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 600
        while len(list((out / "default").glob("*/DONE"))) < after and proc.poll() is None:
            assert time.monotonic() < deadline, why
            time.sleep(0.02)
        time.sleep(delay)
        os.killpg(proc.pid, signal.SIGKILL)
        if proc.wait() == -signal.SIGKILL:
            break
        # The last cells and the closing took less than the delay: the kill must land in a running
        # sweep, so the same kill point again, sooner.
        delay /= 4
        why += f"; the sweep ended before the kill, again with {delay:.3f} s"
    else:
        pytest.fail(f"the sweep ended before every kill: {why}")
    done_before = {p.parent.name: p.stat().st_mtime_ns for p in (out / "default").glob("*/DONE")}
    # Usually inside a cell; when the delay outlasts the last cells (a cell can take < 0.5 s), inside
    # the sweep's closing (leaderboard, parent run): a crash point to resume from as well.
    assert after <= len(done_before) <= 6, why

    again = rag_bench(out, grid=BIG_GRID)
    assert again.returncode == 0, again.stderr[-2000:]
    for cell, mtime in done_before.items():  # finished cells were skipped, not redone
        assert (out / "default" / cell / "DONE").stat().st_mtime_ns == mtime, why
    assert metrics_by_cell(out) == metrics_by_cell(big_reference), why
    assert mlflow_cells(out) == mlflow_cells(big_reference), why
    client = MlflowClient(tracking_uri=f"sqlite:///{out / 'mlflow.db'}")
    runs = client.search_runs([client.get_experiment_by_name("default").experiment_id])
    assert not [r for r in runs if r.info.status == "RUNNING"], why
    parents = [r for r in runs if r.data.tags.get("rag_bench.role") == "sweep"]
    assert len(parents) == 1 and parents[0].info.status == "FINISHED", why
    assert all(r.info.status == "FINISHED" for r in cell_runs(out)), why
