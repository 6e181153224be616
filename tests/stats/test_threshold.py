"""The best-F1 threshold, computed for all candidates at once, against its definition."""

from __future__ import annotations

import numpy as np
import pytest

from rag_bench.stats.threshold import auroc, average_ranks, best_f1_threshold


def _by_definition(s: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    # Each observed score as a threshold, highest first; a tie in F1 keeps the higher threshold.
    if s.size == 0 or not y.any():
        return float("nan"), float("nan")
    best_t, best_f1 = float("nan"), -1.0
    for t in np.unique(s)[::-1]:
        pred = s >= t
        f1 = 2 * np.sum(pred & y) / (pred.sum() + y.sum())
        if f1 > best_f1 + 1e-12:
            best_t, best_f1 = float(t), float(f1)
    return best_t, best_f1


def test_best_f1_threshold_matches_the_definition_with_ties_and_one_class():
    rng = np.random.default_rng(7)
    for i in range(2000):
        n = int(rng.integers(1, 50))
        s = rng.choice([0.0, 0.5, 1.0, 2.0], n) if i % 2 else rng.normal(size=n)  # many ties / none
        y = rng.random(n) < rng.random()
        got, want = best_f1_threshold(s, y), _by_definition(s, y)
        assert got == want or (np.isnan(got[0]) and np.isnan(want[0])), (s, y, got, want)


def test_threshold_edge_cases():
    assert np.isnan(best_f1_threshold(np.array([]), np.array([], bool))[0])
    assert np.isnan(best_f1_threshold(np.array([1.0, 2.0]), np.array([False, False]))[1])
    assert best_f1_threshold(np.array([3.0, 3.0]), np.array([True, True])) == (3.0, 1.0)
    assert np.isnan(auroc(np.array([1.0]), np.array([True])))


def test_auroc_equals_scikit_learn_on_tied_scores():
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(7)
    for n in (2, 17, 300, 5000):
        s = np.round(rng.random(n), 1)  # many ties
        y = rng.random(n) < 0.6
        y[0], y[-1] = True, False
        assert auroc(s, y) == pytest.approx(roc_auc_score(y, s), abs=1e-12)


def test_average_ranks_equal_scipy_rankdata():
    """The ranks AUROC sums are scipy's ``rankdata(method="average")``, value for value (ties, one
    value, infinities, empty, NaN), without importing scipy.stats on a run's path."""
    from scipy.stats import rankdata

    rng = np.random.default_rng(3)
    cases = [np.round(rng.random(n), d) for n in (1, 2, 17, 300, 5000) for d in (1, 3, 8)]
    cases += [np.array([]), np.array([np.inf, -np.inf, 1.0, np.inf]), np.array([2.0, 2.0, 2.0]),
              np.array([1.0, np.nan, 0.5]), np.array([0.0, -0.0, 1.0])]
    for v in cases:
        want = rankdata(v, method="average")
        got = average_ranks(v)
        assert got.dtype == np.float64 and np.array_equal(got, want, equal_nan=True), v


def test_run_path_does_not_import_scipy_stats():
    """scipy.stats took ~0.5 s of every rag-bench process's start-up for one rank function."""
    import subprocess
    import sys

    code = ("import sys, rag_bench.runner.main, rag_bench.evaluation.evaluation, rag_bench.reporting.leaderboard; "
            "print('scipy.stats' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"
