"""The two-level interval covers a judged measure's true mean; the questions-only one does not
(issue 27, Done when). What it runs: benchmarks/judge_coverage.py's simulation -- 400 golden sets
of 15 questions drawn from a population (true verdict 1 with probability 0.6), each question
judged 3 times by a judge that flips a verdict with probability 0.2; true mean 0.56. The first
run goes through HTTP (the scripted judge, RagasJudge with judge.samples=3), and the samples it
returns must equal the directly drawn verdicts, which the other 399 runs use.

Measured (benchmarks/judge_coverage.py --runs 1000): two-level 96.0 %, questions-only 92.2 %. The questions-only interval
under-covers at this golden-set size (a percentile bootstrap over 15 means is too narrow); the
second level adds each question's judge spread and brings it to nominal. With hundreds of
questions the questions-only interval is itself near 95 % and the two-level one conservative
(docs/statistics.md, "Judge samples")."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
pytest.importorskip("ragas.metrics.collections", reason="the judge extra installs ragas")


def test_two_level_ci_covers_and_questions_only_under_covers():
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "judge_coverage.py"
    spec = importlib.util.spec_from_file_location("judge_coverage", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    out = bench.simulate(runs=400, n=15, samples=3, flip=0.2, base_rate=0.6, n_resamples=1000, http_runs=1)
    two, one = out["coverage"]["two_level"], out["coverage"]["questions_only"]
    assert 0.93 <= two <= 0.97, out
    assert one < 0.935 and one < two - 0.015, out
