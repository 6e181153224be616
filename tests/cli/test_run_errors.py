"""``rag-bench run`` that fails on bad configuration, through the real command: rag_bench's own clean
``error:`` line without Hydra's "Error executing job with overrides" before it, exit 2, and no empty
experiment folder left behind (a folder holding a finished cell is kept)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import TINY

BIN = Path(sys.executable).parent


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
    env["RAG_BENCH_CACHE"] = str(tmp_path / "cache")
    return subprocess.run([str(BIN / "rag-bench"), "run", *args, f"dataset.path={TINY}", "tracking=none",
                           f"output.root={tmp_path / 'out'}"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=600)


@pytest.mark.parametrize("mode", [[], ["-m"]], ids=["run", "sweep"])
def test_a_failed_llama_cpp_run_prints_only_its_own_error_and_leaves_no_experiment_folder(tmp_path, mode):
    done = _run(tmp_path, *mode, "generator=llama_cpp", "generator.model=/nowhere/model.gguf")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Error executing job" not in done.stdout + done.stderr, done.stderr
    assert done.stderr.startswith("error: generator.model: no such GGUF file '/nowhere/model.gguf' -- fix:"), done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "out" / "default").exists(), sorted(p.name for p in (tmp_path / "out").rglob("*"))


@pytest.mark.slow
def test_a_failed_run_keeps_an_experiment_folder_that_was_there_before(tmp_path):
    assert _run(tmp_path, "retriever=bm25").returncode == 0
    done = _run(tmp_path, "-m", "generator=llama_cpp", "generator.model=/nowhere/model.gguf")
    assert done.returncode == 2 and "Error executing job" not in done.stderr, done.stderr
    cells = [p for p in (tmp_path / "out" / "default").iterdir() if (p / "DONE").exists()]
    assert len(cells) == 1, "the earlier run's cell is kept"


def test_a_named_scorer_the_run_cannot_feed_is_refused_with_exit_2(tmp_path):
    """Issue 51, item 5, through the real command: claims on a run that generates nothing."""
    done = _run(tmp_path, "generator=none", "eval.scorers=claims")
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.startswith("error: eval.scorers names claims, which this run cannot feed: it has no answers"), \
        done.stderr
    assert "-- fix: a generator" in done.stderr and "Traceback" not in done.stderr
    assert not list((tmp_path / "out").rglob("DONE"))  # nothing written
