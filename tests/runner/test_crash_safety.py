"""kill -9 at the worst moments, then the same command again: no partial cell is read as done,
no duplicate or dangling MLflow run, the same numbers as an uninterrupted run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from tests.conftest import TINY

pytestmark = pytest.mark.slow
BIN = Path(sys.executable).parent


def rag_bench(out: Path, failpoint: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
    if failpoint:
        env["RAG_BENCH_FAILPOINT"] = failpoint
    return subprocess.run([str(BIN / "rag-bench"), "run", "-m", "chunker=fixed,section", f"dataset.path={TINY}",
                           f"output.root={out}"], env=env, capture_output=True, text=True, timeout=600)


def cell_runs(out: Path) -> list:
    client = MlflowClient(tracking_uri=f"sqlite:///{out / 'mlflow.db'}")
    exp = client.get_experiment_by_name("default")
    return [r for r in client.search_runs([exp.experiment_id]) if r.data.tags.get("rag_bench.role") == "cell"]


def metrics_by_cell(out: Path) -> dict[str, dict]:
    result = {}
    for done in (out / "default").glob("*/DONE"):
        m = json.loads((done.parent / "metrics.json").read_text())
        m.pop("latency")
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
    assert len(partial) == 1  # the first cell's files, without DONE
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
