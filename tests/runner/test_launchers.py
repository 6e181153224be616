"""The same 4-cell sweep through Hydra's basic launcher (one process) and the joblib launcher
(parallel worker processes sharing the SQLite MLflow store): identical metrics, one parent run."""

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


def sweep(out: Path, *launcher: str) -> dict[str, dict]:
    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
    done = subprocess.run([str(BIN / "rag-bench"), "run", "-m", *launcher, "chunker=fixed,section", "pipeline.k=3,5",
                           f"dataset.path={TINY}", f"output.root={out}"], env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    result = {}
    for d in (out / "default").glob("*/DONE"):
        m = json.loads((d.parent / "metrics.json").read_text())
        result[d.parent.name] = {k: v for k, v in m.items() if k not in ("latency", "cost")}
    return result


def test_joblib_equals_basic(tmp_path):
    basic = sweep(tmp_path / "basic")
    parallel = sweep(tmp_path / "joblib", "hydra/launcher=joblib")
    assert len(basic) == 4 and basic == parallel
    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'joblib' / 'mlflow.db'}")
    runs = client.search_runs([client.get_experiment_by_name("default").experiment_id])
    parents = [r for r in runs if r.data.tags.get("rag_bench.role") == "sweep"]
    cells = [r for r in runs if r.data.tags.get("rag_bench.role") == "cell"]
    assert len(parents) == 1 and parents[0].info.status == "FINISHED"
    assert len(cells) == 4 and {r.data.tags["mlflow.parentRunId"] for r in cells} == {parents[0].info.run_id}
