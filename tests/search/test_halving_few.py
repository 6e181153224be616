"""search=halving on too few questions, through the real CLI: a round that would see no question is
refused before any cell (it crashed after launching the first round's cells, with a numpy traceback),
and a pruning round on fewer than ten questions is warned about before the sweep starts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from rag_bench.search.halving import FEW_QUESTIONS, round_problems

REPO = Path(__file__).resolve().parents[2]
TINY = REPO / "tests" / "fixtures" / "tiny"  # 6 questions


def run(out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("MLFLOW_TRACKING_URI", "RAG_BENCH_FAILPOINT")}
    env["RAG_BENCH_CACHE"] = str(out / "cache")
    return subprocess.run([sys.executable, "-m", "rag_bench.cli", "run", "-m", "search=halving",
                           f"dataset.path={TINY}", "retriever=bm25,dense", "tracking=none", f"output.root={out}",
                           "experiment.name=few", *extra], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=600)


def test_a_round_with_no_question_is_refused_before_any_cell(tmp_path):
    done = run(tmp_path)  # the default rounds 1/4, 1/2, 1 of 6 questions: the first sees none
    assert done.returncode == 2, done.stdout + done.stderr
    assert "round 1 would see no question of the 6" in done.stderr and "fix:" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "few").exists() or not any(
        p.is_dir() and not p.name.startswith(".") for p in (tmp_path / "few").iterdir())


def test_a_pruning_round_on_few_questions_is_warned_about_before_the_sweep(tmp_path):
    done = run(tmp_path, "search.rounds=[0.5,1]")
    assert done.returncode == 0, done.stdout + done.stderr
    said = done.stdout + done.stderr
    assert "round 1 prunes on 1 question (fewer than" in said and f"than {FEW_QUESTIONS})" in said, said


def test_round_problems_counts():
    assert round_problems([0, 3, 6], 6)[0] is not None
    assert round_problems([3, 6], 6) == (None, round_problems([3, 6], 6)[1]) and round_problems([3, 6], 6)[1]
    assert round_problems([10, 20, 40], 40) == (None, None)
    assert round_problems([5, 40], 40)[1] is not None  # only pruning rounds count: the last prunes nothing
    assert round_problems([40, 40], 40) == (None, None)


def test_the_plan_of_the_default_rounds_says_what_the_run_would_do(tmp_path):
    """Issue 56 item 5: --plan with halving's default rounds works (exit 0, nothing written) and says
    what the run would say before its first cell: refused here (a round of no question of 6)."""
    done = run(tmp_path, "--plan")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "search=halving:" in done.stdout and "in 3 rounds of 0, 1, 6 questions" in done.stdout, done.stdout
    assert "the run would stop before its first cell: search=halving: round 1 would see no question" in done.stdout
    assert not (tmp_path / "few").exists()
