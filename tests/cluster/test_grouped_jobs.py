"""Jobs grouped by shared work, against the real one-node SLURM cluster (tests/cluster/slurm.py).

8 cells = 2 chunkers x 2 k x 2 eval settings, dense retrieval: 2 jobs of 4 cells (one per
chunker x embedder x index), each embedding its texts once (no text embedded twice: the cells'
encoded-text counts add up to the grid's distinct texts the plan prints). A job scancelled
mid-cell: `rag-bench status` names the cell it was computing as failed with the job's log and
the cells it never reached as missing; the same command again submits only the cells without DONE."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rag_bench.embedding.cache import ShardSet, _Shard
from tests.conftest import TINY

pytestmark = pytest.mark.slow
BIN = Path(sys.executable).parent
GRID = ["chunker=fixed,section", "retriever=dense", "pipeline.k=3,5", "eval.min_coverage=0.5,0.7", "generator=none",
        "tracking=none", f"dataset.path={TINY}"]
CLUSTER = ["+cluster=slurm", "hydra.launcher.cpus_per_task=1", "hydra.launcher.mem_gb=2",
           "hydra.launcher.timeout_min=10"]


def rag_bench(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "rag-bench"), *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=600)


def _costs(exp: Path) -> list[dict]:
    return [json.loads(p.read_text())["cost"] for p in sorted(exp.glob("*/metrics.json")) if (p.parent / "DONE").exists()]


def test_jobs_grouped_by_shared_work_embed_each_text_once(slurm, tmp_path):
    # Every new vector goes to a shard file of its own: the cache writes can be counted.
    env = {**slurm, "RAG_BENCH_CACHE": str(tmp_path / "cache"), "RAG_BENCH_CACHE_SHARDS": "1"}
    exp = tmp_path / "out" / "grouped"
    # One task at a time: the second job then finds the questions the first embedded in the cache.
    args = ["run", "-m", *CLUSTER, "hydra.launcher.array_parallelism=1", *GRID, "experiment.name=grouped",
            f"output.root={tmp_path / 'out'}"]
    run = rag_bench(args, env, tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr[-3000:]
    assert "cluster plan: 8 cell(s) to run in 2 job(s); 0 cell(s) already done" in run.stdout, run.stdout
    assert len(re.findall(r"job \d: 4 cell\(s\), 1 shared prefix", run.stdout)) == 2, run.stdout
    distinct = int(re.search(r"distinct texts to embed in all: (\d+)", run.stdout).group(1))  # type: ignore[union-attr]
    tasks = sorted(p.name for p in (exp / ".submitit").glob("*_*") if p.is_dir())
    assert len(tasks) == 2, tasks
    plan = json.loads(next((exp / ".submitit").glob("*.plan.json")).read_text())
    for job in plan["jobs"]:  # each job: one chunker, 4 cells
        assert len(job["cells"]) == 4 and len({c["prefix"] for c in job["cells"]}) == 1, job
    costs = _costs(exp)
    assert len(costs) == 8
    assert sum(c["embeddings_computed"] for c in costs) == distinct > 0, (costs, distinct)
    assert sum(c["embeddings_computed"] > 0 for c in costs) == 2, "a job embedded again what its first cell had"
    written = [k for f in ShardSet(tmp_path / "cache" / "embeddings.shards").files() for k in _Shard(f).keys.tolist()]
    assert len(written) == len(set(written)) == distinct, "a text was written to the cache twice"


def _squeue(env: dict[str, str]) -> list[str]:
    out = subprocess.run(["squeue", "-h", "-t", "PD,R,CG", "-o", "%i"], env=env, capture_output=True, text=True)
    return out.stdout.split()


def test_scancel_mid_cell_then_only_missing_cells_submitted(slurm, tmp_path):
    env = {**slurm, "RAG_BENCH_CACHE": str(tmp_path / "cache")}
    exp = tmp_path / "out" / "killed"
    args = ["run", "-m", *CLUSTER, *GRID, "experiment.name=killed", f"output.root={tmp_path / 'out'}"]
    sweep = subprocess.Popen([str(BIN / "rag-bench"), *args], cwd=tmp_path, env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.time() + 180
        victim = None
        while victim is None:  # the first task to start a cell is cancelled while computing it
            assert time.time() < deadline and sweep.poll() is None, "no task started a cell"
            for out in (exp / ".submitit").glob("*_*/*_log.out"):
                if "rag-bench job: cell" in out.read_text(errors="replace"):
                    victim = out.parent.name
                    break
            time.sleep(0.05)
        subprocess.run(["scancel", victim], env=slurm, check=True)
        while _squeue(slurm):  # the other task finishes
            assert time.time() < deadline + 180, "tasks still running"
            time.sleep(0.5)
    finally:
        # Without SLURM accounting submitit cannot see the cancelled task end and would wait: the
        # submitting command dies here, as it would with its login node.
        os.killpg(sweep.pid, signal.SIGKILL)
        sweep.wait()
    status = rag_bench(["status", str(exp)], env, tmp_path)
    assert status.returncode == 0, status.stderr
    log = exp / ".submitit" / victim / f"{victim}_0_log.err"
    assert f"failed job {victim}: log {log}" in status.stdout and "CANCELLED" in status.stdout, status.stdout
    assert re.search(rf"cell [0-9a-f]{{12}} failed   job {victim} log {re.escape(str(log))}", status.stdout), status.stdout
    finished = {p.parent.name: p.stat().st_mtime_ns for p in exp.glob("*/DONE")}
    assert 4 <= len(finished) < 8, status.stdout  # the other job's 4 cells, and what the victim finished
    assert f"cells: {len(finished)} done" in status.stdout, status.stdout

    again = rag_bench(args, env, tmp_path)
    assert again.returncode == 0, again.stderr[-3000:]
    missing = 8 - len(finished)
    assert (f"cluster plan: {missing} cell(s) to run in 1 job(s); {len(finished)} cell(s) already done, not submitted"
            in again.stdout), again.stdout
    assert "submitted 1 job(s)" in again.stdout
    after = {p.parent.name: p.stat().st_mtime_ns for p in exp.glob("*/DONE")}
    assert len(after) == 8 and {c: after[c] for c in finished} == finished, "a finished cell was redone"
    assert "cells: 8 done" in rag_bench(["status", str(exp)], env, tmp_path).stdout
