"""Fourth round of hostile inputs, on the state rag_bench keeps between runs, through the real
command line: what a cache holds (a generation that is not valid Unicode, a forged embedding
shard), what sits beside a dataset (labels, notes, an editor's swap file), the MLflow store
template of a shared cache folder, read-only commands in an empty folder, a SLURM request no node
can hold, and a FIFO named like a job log. Each case either works as documented or exits 2 naming
what, where and ``-- fix: ...``, and leaves nothing behind."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

# --- 32. `rag-bench status` reads only regular files -------------------------------------------


def _status(exp: Path) -> subprocess.CompletedProcess[str]:
    """`rag-bench status` in a child process: a blocked read is a timeout, not a hung test run."""
    return subprocess.run([sys.executable, "-m", "rag_bench.cli", "status", str(exp)], capture_output=True, text=True,
                          timeout=30, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})


@pytest.mark.parametrize("name", ["5_0_0_log.out", "5_0_0_log.err", "../5.plan.json"], ids=["out", "err", "plan"])
def test_status_skips_a_fifo_named_like_a_job_file(tmp_path, name):
    exp = tmp_path / "grid"
    job = exp / ".submitit" / "5_0"
    job.mkdir(parents=True)
    (job / "5_1_0_log.out").write_text("cell 9949f318c5c3 done: fixed k=3 | hit@5=1.000\n"
                                       "submitit INFO - Job completed successfully\n")
    os.mkfifo(job / name)  # nobody ever writes to it: opening it for reading blocks forever
    out = _status(exp)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "job 5_0" in out.stdout and "cells done 9949f318c5c3" in out.stdout


def test_status_never_reads_a_device_linked_as_a_log(tmp_path):
    exp = tmp_path / "grid"
    job = exp / ".submitit" / "5_0"
    job.mkdir(parents=True)
    (job / "5_0_0_log.out").symlink_to("/dev/zero")  # never ends
    (job / "5_0_0_log.err").symlink_to("/dev/urandom")
    out = _status(exp)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "jobs: none submitted" in out.stdout
