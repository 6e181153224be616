"""Paired statistics: CI coverage on a known distribution, exact p on tiny cases, Holm."""

from __future__ import annotations

import numpy as np
import pytest

from rag_bench.metrics.bootstrap import bootstrap_ci
from rag_bench.stats.paired import holm, paired_bootstrap_ci, randomisation_p
from rag_bench.stats.threshold import auroc, best_f1_threshold


def test_bootstrap_ci_covers_the_true_mean_about_95_percent():
    # Bernoulli(0.7) "hit" values of 60 questions, 300 independent golden sets: a 95% percentile
    # interval should contain 0.7 in roughly 95% of them (percentile bootstrap under-covers a bit
    # at n=60, so accept 88-99%).
    rng = np.random.default_rng(123)
    covered = 0
    for i in range(300):
        sample = (rng.random(60) < 0.7).astype(float)
        lo, hi = bootstrap_ci(sample, n_resamples=1000, seed=i)
        covered += lo <= 0.7 <= hi
    assert 0.88 <= covered / 300 <= 0.99


def test_paired_ci_covers_known_shift():
    rng = np.random.default_rng(5)
    covered = 0
    for i in range(200):
        a = rng.normal(0.5, 0.2, 80)
        b = a + 0.05 + rng.normal(0, 0.1, 80)  # true mean difference 0.05
        lo, hi = paired_bootstrap_ci(a, b, n_resamples=1000, seed=i)
        covered += lo <= 0.05 <= hi
    assert 0.88 <= covered / 200 <= 0.99


def test_randomisation_exact_small_cases():
    # d = [+1, +1, +1]: of 8 sign patterns, |mean| = 1 only for all-plus and all-minus -> p = 2/8
    assert randomisation_p(np.zeros(3), np.ones(3)) == 0.25
    # d = [+1, -1]: every pattern has |mean| >= 0 -> p = 1
    assert randomisation_p(np.array([0.0, 1.0]), np.array([1.0, 0.0])) == 1.0
    # d = [2, 1] (zeros dropped): patterns |mean| = 1.5, 0.5, 0.5, 1.5 -> p = 2/4
    assert randomisation_p(np.array([0.0, 0.0, 5.0]), np.array([2.0, 1.0, 5.0])) == 0.5
    assert randomisation_p(np.ones(4), np.ones(4)) == 1.0


def test_randomisation_sampled_matches_exact():
    rng = np.random.default_rng(0)
    a, b = rng.random(14), rng.random(14)
    exact = randomisation_p(a, b)
    sampled = randomisation_p(a, b, exact_below=0, n_resamples=20000)
    assert sampled == pytest.approx(exact, abs=0.02)


def test_randomisation_detects_a_real_shift_and_not_noise():
    rng = np.random.default_rng(1)
    a = (rng.random(80) < 0.6).astype(float)
    worse = a.copy()
    worse[np.flatnonzero(a)[:15]] = 0  # 15 of 80 questions lost
    assert randomisation_p(a, worse) < 0.001
    noise = a.copy()
    noise[np.flatnonzero(a)[:1]] = 0
    noise[np.flatnonzero(a == 0)[:1]] = 1
    assert randomisation_p(a, noise) == 1.0


def test_holm():
    assert holm([0.01, 0.04, 0.03]) == [0.03, 0.06, 0.06]
    assert holm([0.5]) == [0.5]
    out = holm([0.2, float("nan"), 0.01])
    assert out[0] == 0.2 and np.isnan(out[1]) and out[2] == 0.02
    assert holm([0.9, 0.8]) == [1.0, 1.0]  # 0.8 * 2 = 1.6, capped at 1; monotone after it


def test_nan_pairs_are_dropped_and_shapes_checked():
    a = np.array([1.0, np.nan, 0.0])
    b = np.array([1.0, 1.0, 1.0])
    lo, hi = paired_bootstrap_ci(a, b, n_resamples=200)  # pairs left: d = [0, 1]
    assert 0.0 <= lo <= 0.5 <= hi <= 1.0
    with pytest.raises(ValueError, match="same length"):
        paired_bootstrap_ci(np.zeros(2), np.zeros(3))


def test_threshold_analysis():
    s = np.array([0.9, 0.8, 0.7, 0.6])
    y = np.array([True, False, True, False])
    assert auroc(s, y) == 0.75  # pairs (0.9>0.8, 0.9>0.6, 0.7<0.8, 0.7>0.6) -> 3/4
    t, f1 = best_f1_threshold(s, y)
    assert (t, round(f1, 3)) == (0.7, 0.8)  # predict 0.9, 0.8, 0.7: tp 2, fp 1 -> F1 = 4/5
    assert np.isnan(auroc(s, np.ones(4, bool)))
