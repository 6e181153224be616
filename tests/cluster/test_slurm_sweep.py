"""End to end on a real SLURM scheduler (slurmctld + slurmd + munged started by the fixture): a
sweep with +cluster=slurm is submitted through Hydra's submitit launcher as an array job; its
cells are the cells a local run computes (same ids, same metrics apart from timings) and land on
a real MLflow server FINISHED; running the same command again submits nothing."""

from __future__ import annotations

import json
import os
import signal
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
    jobs = list((tmp_path / "cluster" / "grid" / ".submitit").glob("*"))
    assert jobs, "submitit wrote no job folder: the sweep did not go through the scheduler"
    acct = subprocess.run(["squeue", "-h", "-t", "all", "-o", "%i %T"], env=slurm, capture_output=True, text=True)
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
    assert len(_metrics(tmp_path / "cluster")) == 8
    assert len(client.search_runs([exp.experiment_id])) == len(runs), "a finished cell was redone"


def _squeue(env: dict[str, str], states: str) -> list[str]:
    out = subprocess.run(["squeue", "-h", "-t", states, "-o", "%i"], env=env, capture_output=True, text=True)
    return out.stdout.split()


def test_cancelled_job_is_redone_and_named_by_status(slurm, tmp_path):
    """scancel a task mid-cell: `rag-bench status` names its log and the CANCELLED line; the same
    command again finishes the missing cell and leaves the finished ones untouched."""
    env = {**slurm, "RAG_BENCH_CACHE": str(tmp_path / "cache")}
    grid = ["chunker=fixed,section", "pipeline.k=3,5", "retriever=bm25", f"dataset.path={TINY}",
            "experiment.name=grid", f"output.root={tmp_path / 'out'}", "tracking=none"]
    slow = [*CLUSTER, 'hydra.launcher.setup=["export TQDM_DISABLE=1","sleep 3"]']  # a window to cancel in
    sweep = subprocess.Popen([str(BIN / "rag-bench"), "run", "-m", *slow, *grid], cwd=tmp_path, env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.time() + 120
        while not (running := _squeue(slurm, "R")):
            assert time.time() < deadline and sweep.poll() is None, "no task started"
            time.sleep(0.2)
        victim = running[0]
        subprocess.run(["scancel", victim], env=slurm, check=True)
        while _squeue(slurm, "PD,R,CG"):  # the other tasks finish
            assert time.time() < deadline + 120, "tasks still running"
            time.sleep(0.5)
    finally:
        # Without SLURM accounting (sacct) submitit cannot see the cancelled task end and would wait:
        # the submitting command dies here, as it would with its login node.
        os.killpg(sweep.pid, signal.SIGKILL)
        sweep.wait()
    exp = tmp_path / "out" / "grid"
    status = rag_bench(["status", str(exp)], env, tmp_path)
    assert status.returncode == 0, status.stderr
    assert f"failed job {victim}: log {exp / '.submitit' / victim}" in status.stdout, status.stdout
    assert "CANCELLED" in status.stdout
    finished = {p.parent.name: p.stat().st_mtime_ns for p in exp.glob("*/DONE")}
    assert len(finished) == 3, status.stdout

    again = rag_bench(["run", "-m", *CLUSTER, *grid], env, tmp_path)
    assert again.returncode == 0, again.stderr[-3000:]
    after = {p.parent.name: p.stat().st_mtime_ns for p in exp.glob("*/DONE")}
    assert len(after) == 4 and {c: after[c] for c in finished} == finished, "a finished cell was redone"
    assert "cells: 4 done, 0 unfinished" in rag_bench(["status", str(exp)], env, tmp_path).stdout
