"""End to end on a real SLURM scheduler (slurmctld + slurmd + munged started by the fixture): a
sweep with +cluster=slurm is submitted through Hydra's submitit launcher as an array job; its
cells are the cells a local run computes (same ids, same metrics apart from timings) and land on
a real MLflow server FINISHED; running the same command again submits nothing. (A job killed
mid-cell and the resume: test_grouped_jobs.py.)"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import TINY

pytestmark = pytest.mark.slow
BIN = Path(sys.executable).parent
GRID = ["chunker=fixed,section", "pipeline.k=3,5", "eval.min_coverage=0.5,0.7", "retriever=bm25",
        f"dataset.path={TINY}", "experiment.name=grid"]
CLUSTER = ["+cluster=slurm", "hydra.launcher.cpus_per_task=1", "hydra.launcher.mem_gb=1",
           "hydra.launcher.timeout_min=10"]


def rag_bench(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "rag-bench"), *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=600)


def _metrics(root: Path) -> dict[str, dict]:
    """cell id -> metrics.json without timing figures, of every finished cell under root."""
    out = {}
    for done in sorted(root.glob("grid/*/DONE")):
        m = json.loads((done.parent / "metrics.json").read_text())
        out[done.parent.name] = {k: v for k, v in m.items() if k not in ("latency", "timing", "timings", "cost")}
    return out


def test_sweep_on_slurm_equals_local(slurm, mlflow_server, tmp_path):
    from mlflow.tracking import MlflowClient

    env = {**slurm, "MLFLOW_TRACKING_URI": mlflow_server, "RAG_BENCH_CACHE": str(tmp_path / "cache")}
    on_cluster = rag_bench(["run", "-m", *CLUSTER, *GRID, f"output.root={tmp_path / 'cluster'}"], env, tmp_path)
    assert on_cluster.returncode == 0, on_cluster.stderr[-3000:]
    assert "cluster plan: 8 cell(s) to run in 2 job(s)" in on_cluster.stdout, on_cluster.stdout  # one per chunker
    jobs = list((tmp_path / "cluster" / "grid" / ".submitit").glob("*"))
    assert jobs, "submitit wrote no job folder: the sweep did not go through the scheduler"
    # The sweep returns once submitit has read each job's result; SLURM marks a job COMPLETED when its
    # process has exited, a moment later on a loaded machine: wait for that, not for a fixed time.
    for _ in range(120):
        acct = subprocess.run(["squeue", "-h", "-t", "all", "-o", "%i %T"], env=slurm, capture_output=True, text=True)
        if not any(state in acct.stdout for state in ("RUNNING", "PENDING", "COMPLETING")):
            break
        time.sleep(0.5)
    assert "COMPLETED" in acct.stdout, acct.stdout + acct.stderr

    local = rag_bench(["run", "-m", *GRID, f"output.root={tmp_path / 'local'}", "tracking=none"], env, tmp_path)
    assert local.returncode == 0, local.stderr[-3000:]
    remote, here = _metrics(tmp_path / "cluster"), _metrics(tmp_path / "local")
    assert len(remote) == 8 and remote.keys() == here.keys(), "cluster settings must not enter the cell id"
    assert remote == here

    client = MlflowClient(tracking_uri=mlflow_server)
    exp = client.get_experiment_by_name("grid")
    runs = client.search_runs([exp.experiment_id])
    nested = [r for r in runs if "mlflow.parentRunId" in r.data.tags]
    assert len(nested) == 8 and len(runs) >= 9
    assert {r.info.status for r in runs} == {"FINISHED"}

    again = rag_bench(["run", "-m", *CLUSTER, *GRID, f"output.root={tmp_path / 'cluster'}"], env, tmp_path)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "cluster plan: 0 cell(s) to run in 0 job(s); 8 cell(s) already done" in again.stdout, again.stdout
    assert len(_metrics(tmp_path / "cluster")) == 8
    assert len(client.search_runs([exp.experiment_id])) == len(runs), "a finished cell was redone"
