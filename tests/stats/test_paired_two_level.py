"""Paired two-level resampling of judged measures (questions, then each cell's judge samples),
and its use by ``compare`` and the gate's regression rule."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rag_bench.cells import Cell
from rag_bench.reporting.compare import compare_cells
from rag_bench.reporting.gate import evaluate_gate
from rag_bench.stats.paired import (
    paired_bootstrap_ci,
    paired_two_level_bootstrap_ci,
    paired_two_level_p,
)


def test_one_sample_per_question_is_the_questions_only_paired_bootstrap():
    rng = np.random.default_rng(0)
    a, b = rng.random(25), rng.random(25)
    a[3] = np.nan  # a question without a sample in one cell is dropped by both
    assert paired_two_level_bootstrap_ci(a[:, None], b[:, None], seed=4) == paired_bootstrap_ci(a, b, seed=4)


def test_judge_noise_widens_the_paired_interval_and_raises_p():
    """Same per-question means in both cells' judges, once consistent and once spread by +-0.25
    across samples: the interval of the difference widens and the p-value grows."""
    rng = np.random.default_rng(1)
    ma, mb = rng.uniform(0.3, 0.7, 40), rng.uniform(0.3, 0.7, 40) + 0.05
    spread = np.array([-0.25, 0.0, 0.25])
    quiet = paired_two_level_bootstrap_ci(np.repeat(ma[:, None], 3, 1), np.repeat(mb[:, None], 3, 1), seed=2)
    noisy = paired_two_level_bootstrap_ci(ma[:, None] + spread, mb[:, None] + spread, seed=2)
    assert noisy[1] - noisy[0] > 1.3 * (quiet[1] - quiet[0])
    assert paired_two_level_p(ma[:, None] + spread, mb[:, None] + spread, seed=2) > paired_two_level_p(
        np.repeat(ma[:, None], 3, 1), np.repeat(mb[:, None], 3, 1), seed=2)


def test_mismatched_shapes_are_refused():
    with pytest.raises(ValueError, match="same questions"):
        paired_two_level_bootstrap_ci(np.zeros((3, 2)), np.zeros((4, 2)))


def _cell(tmp_path: Path, name: str, samples: list[list[float]]) -> Cell:
    m = np.array([np.mean(s) for s in samples])
    records = pd.DataFrame({"qid": [f"q{i}" for i in range(len(samples))], "judge_faithfulness": m,
                            "judge_faithfulness_samples": samples, "hit@3": 1.0})
    metrics = {"judge": {"judge_faithfulness": float(m.mean())}, "dataset_fingerprint": "same"}
    return Cell(name, tmp_path / name, {"pipeline": {"k": 3}}, metrics, {}, [records])


def test_compare_and_gate_resample_judged_measures_on_two_levels(tmp_path):
    rng = np.random.default_rng(5)
    base = (rng.random((30, 3)) < 0.7).astype(float)
    worse = (rng.random((30, 3)) < 0.55).astype(float)
    a, b = _cell(tmp_path, "a", base.tolist()), _cell(tmp_path, "b", worse.tolist())
    (row,) = compare_cells(a, b, metrics=["judge/judge_faithfulness"], n_resamples=2000, seed=0)["metrics"]
    assert row["ci"] == list(paired_two_level_bootstrap_ci(base, worse, n_resamples=2000, seed=0))
    assert row["p"] == paired_two_level_p(base, worse, n_resamples=2000, seed=0)
    policy = {"regressions": {"judge/judge_faithfulness": {"rule": "no_significant_regression", "alpha": 0.05}}}
    (result,) = evaluate_gate(b, policy, baseline=a)
    assert "two-level bootstrap" in result.detail
    assert result.limit == f"p={paired_two_level_p(base, worse, seed=0):.4f}"


def test_hostile_sample_lists_are_an_error_naming_the_column(tmp_path):
    """A records.parquet whose judge samples are not numbers (hand-edited or written by something
    else): compare refuses it naming the column, the gate's rule errs (exit 2), nothing crashes."""
    from rag_bench.errors import DataError

    a = _cell(tmp_path, "a", [[1.0, 0.0]] * 4)
    b = _cell(tmp_path, "b", [[1.0, 0.0]] * 4)
    b.records["judge_faithfulness_samples"] = [["yes", "no"]] * 4
    with pytest.raises(DataError, match="judge_faithfulness_samples"):
        compare_cells(a, b, metrics=["judge/judge_faithfulness"])
    policy = {"regressions": {"judge/judge_faithfulness": {"rule": "no_significant_regression", "alpha": 0.05}}}
    (result,) = evaluate_gate(b, policy, baseline=a)
    assert result.status == "error" and "judge_faithfulness_samples" in result.detail
    b.records["judge_faithfulness_samples"] = [[float("inf"), 0.0]] * 4
    (result,) = evaluate_gate(b, policy, baseline=a)
    assert result.status == "error" and "infinite" in result.detail
