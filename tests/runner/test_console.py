"""A sweep's console: one line per cell, the leaderboard, the failure table; what libraries print
(Hydra's job list, faiss, model loading, MLflow's migrations) goes to <experiment>/.hydra/rag_bench.log."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import TINY

pytestmark = pytest.mark.slow
NOISE = re.compile(r"HYDRA|faiss|Loading|alembic|mlflow\.|Creating initial|Launching \d+ jobs|it/s\]")


def test_sweep_prints_only_its_own_lines(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("MLFLOW_TRACKING_URI", "RAG_BENCH_PROGRESS")}
    done = subprocess.run([str(Path(sys.executable).parent / "rag-bench"), "run", "-m", "chunker=fixed,section",
                           "retriever=dense", f"dataset.path={TINY}", f"output.root={tmp_path}",
                           "experiment.name=quiet"], capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    assert not [line for line in lines if NOISE.search(line)], lines
    cell_lines = [line for line in lines if line.startswith("cell ") and " done: " in line]
    assert len(cell_lines) == 2
    assert "Leaderboard" in done.stdout and "Where questions were lost" in done.stdout
    board = done.stdout.split("Leaderboard", 1)[1].split("Where questions were lost", 1)[0]
    assert max(len(line) for line in board.splitlines()) < 140  # the default columns fit a terminal
    log = (tmp_path / "quiet" / ".hydra" / "rag_bench.log").read_text()
    assert "faiss" in log and "Launching 2 jobs" in log and "mlflow" in log  # kept, with timestamps
