"""The same 4-cell sweep through the default launcher (rag_bench's, one process), Hydra's basic
launcher (one process), the joblib launcher (parallel worker processes) and the submitit_local
launcher (one subprocess per cell), all sharing the SQLite MLflow store and the cache folder:
identical metrics, one parent run. And the same sweep with all in-process sharing off
(RAG_BENCH_SHARE=0): identical metrics."""

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


def sweep(out: Path, *launcher: str, env: dict[str, str] | None = None, grid: tuple[str, ...] = ()) -> dict[str, dict]:
    env = {**{k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}, **(env or {})}
    done = subprocess.run([str(BIN / "rag-bench"), "run", "-m", *launcher, *(grid or ("chunker=fixed,section",
                           "pipeline.k=3,5")), f"dataset.path={TINY}", f"output.root={out}"], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    result = {}
    for d in (out / "default").glob("*/DONE"):
        m = json.loads((d.parent / "metrics.json").read_text())
        ann = m.pop("ann", {})
        m["ann_recall"] = {k: v for k, v in ann.items() if k.startswith("ann_recall")}  # not its timings
        result[d.parent.name] = {k: v for k, v in m.items() if k not in ("latency", "cost")}
    return result


@pytest.fixture(scope="module")
def default(tmp_path_factory):
    return sweep(tmp_path_factory.mktemp("default"))


@pytest.mark.parametrize("launcher", ["basic", "joblib", "submitit_local"])
def test_launcher_equals_the_default(tmp_path, default, launcher):
    other = sweep(tmp_path / launcher, f"hydra/launcher={launcher}")
    assert len(default) == 4 and default == other
    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / launcher / 'mlflow.db'}")
    runs = client.search_runs([client.get_experiment_by_name("default").experiment_id])
    parents = [r for r in runs if r.data.tags.get("rag_bench.role") == "sweep"]
    cells = [r for r in runs if r.data.tags.get("rag_bench.role") == "cell"]
    assert len(parents) == 1 and parents[0].info.status == "FINISHED"
    assert len(cells) == 4 and {r.data.tags["mlflow.parentRunId"] for r in cells} == {parents[0].info.run_id}


def test_sharing_off_changes_no_result(tmp_path):
    """Dense + hybrid + reranked cells over two chunkers and two k: the in-process sharing of
    chunks, vectors, indexes and rankings gives exactly what building every cell alone gives."""
    grid = ("chunker=fixed,section", "retriever=dense,hybrid", "reranker=none,mmr", "pipeline.k=3,5", "index=hnsw",
            "tracking=none")
    shared = sweep(tmp_path / "shared", grid=grid)
    alone = sweep(tmp_path / "alone", grid=grid, env={"RAG_BENCH_SHARE": "0"})
    assert len(shared) == 16 and shared == alone
