"""The confidence interval of a cell's mean over questions, by the kind of measure (issue 55).

- **Binary measures** (every defined value 0 or 1: hit, complete, correct, refusal): the Wilson
  score interval of the proportion (Wilson 1927). It never has zero width: 20 of 20 gives
  [0.839, 1.000] and 3 of 3 [0.439, 1.000], where the percentile bootstrap said [1.00, 1.00] (every
  resample of twenty 1s is twenty 1s). Its coverage, simulated, is in docs/statistics.md
  (``benchmarks/interval_coverage.py``).
- **Other means** (nDCG, F1, latency, tokens): the percentile bootstrap over questions
  (:func:`rag_bench.metrics.bootstrap.bootstrap_cis`, the same draws as before), **corrected at the
  boundary**: when every defined value is the same number in [0, 1] (a resample can only repeat
  it, so the bootstrap has zero width) the interval is the Wilson interval at that value -- a
  measure bounded in [0, 1] with mean p has at most the variance p(1 - p) of a 0/1 measure, so
  that interval is wide enough for any such measure. An unbounded measure with no spread
  (the same token count on every question) keeps its point.

Pure and deterministic (the bootstrap's seed).
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np

from rag_bench.metrics.bootstrap import bootstrap_cis, question_means, two_level_bootstrap_ci


def z_value(confidence: float) -> float:
    """The two-sided normal quantile of ``confidence`` (1.959964 at 0.95).

    >>> round(z_value(0.95), 6)
    1.959964
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    return NormalDist().inv_cdf(1 - (1 - confidence) / 2)


def t_quantile(q: float, df: int) -> float:
    """Student's t quantile ``q`` (> 0.5) with ``df`` degrees of freedom: exact for 1 and 2, else
    the Cornish-Fisher expansion in the normal quantile (within 0.01 of the exact value from
    ``df = 3``; tests/stats/test_intervals.py). Here so that no ``rag-bench`` process imports
    scipy.stats for it (0.7 s of start-up).

    >>> round(t_quantile(0.975, 1), 3), round(t_quantile(0.975, 2), 3), round(t_quantile(0.975, 30), 3)
    (12.706, 4.303, 2.042)
    """
    if df == 1:
        return math.tan(math.pi * (q - 0.5))
    if df == 2:
        return (2 * q - 1) / math.sqrt(2 * q * (1 - q))
    z = NormalDist().inv_cdf(q)
    return (z + (z ** 3 + z) / (4 * df) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * df ** 2)
            + (3 * z ** 7 + 19 * z ** 5 + 17 * z ** 3 - 15 * z) / (384 * df ** 3)
            + (79 * z ** 9 + 776 * z ** 7 + 1482 * z ** 5 - 1920 * z ** 3 - 945 * z) / (92160 * df ** 4))


def expanded_confidence(confidence: float, n: int) -> float:
    """The level at which to read a percentile bootstrap of a mean over ``n`` values so that it
    covers as a t interval would (Hesterberg 2015, "What teachers should know about the
    bootstrap", *The American Statistician* 69(4), the expanded percentile interval): the
    percentile interval is too narrow at small n by about ``sqrt((n - 1) / n)`` and by using z for
    t; reading it at ``1 - 2 Phi(-sqrt(n / (n - 1)) t_{n-1})`` undoes both. Capped below 1.

    >>> round(expanded_confidence(0.95, 20), 4), round(expanded_confidence(0.95, 1000), 4)
    (0.9682, 0.9504)
    """
    if n < 2:
        return confidence
    t = t_quantile(1 - (1 - confidence) / 2, n - 1)
    return min(1 - 2 * NormalDist().cdf(-math.sqrt(n / (n - 1)) * t), 1 - 1e-9)


def wilson(successes: np.ndarray | float, n: np.ndarray | float, confidence: float = 0.95) -> np.ndarray:
    """The Wilson score interval of ``successes`` of ``n`` (arrays broadcast; ``successes`` may be a
    fraction of a count, ``n * p``): ``(..., 2)`` rows ``(lo, hi)``, NaN where ``n`` is 0.

    >>> wilson(20, 20).round(3).tolist()
    [0.839, 1.0]
    >>> wilson(3, 3).round(3).tolist()
    [0.439, 1.0]
    >>> wilson(0, 10).round(3).tolist()
    [0.0, 0.278]
    """
    z = z_value(confidence)
    x, m = np.broadcast_arrays(np.asarray(successes, dtype=np.float64), np.asarray(n, dtype=np.float64))
    with np.errstate(invalid="ignore", divide="ignore"):
        p = x / m
        centre = (p + z * z / (2 * m)) / (1 + z * z / m)
        half = z / (1 + z * z / m) * np.sqrt(p * (1 - p) / m + z * z / (4 * m * m))
        lo = np.where(x <= 0, 0.0, np.clip(centre - half, 0.0, 1.0))  # exact at the bounds, not 1e-17 off
        hi = np.where(x >= m, 1.0, np.clip(centre + half, 0.0, 1.0))
    out = np.stack([lo, hi], axis=-1)
    out[m <= 0] = np.nan
    return out


def is_binary(values: np.ndarray) -> bool:
    """Every defined value 0 or 1 (and at least one defined).

    >>> is_binary(np.array([1.0, 0.0, np.nan])), is_binary(np.array([1.0, 0.5]))
    (True, False)
    """
    v = values[~np.isnan(values)]
    return bool(v.size) and bool(np.isin(v, (0.0, 1.0)).all())


def method(values: np.ndarray) -> str:
    """Which interval :func:`mean_cis` gives a column: ``wilson``, ``wilson (no spread)`` or ``bootstrap``.

    >>> method(np.array([1.0, 0.0])), method(np.array([0.5, 0.5])), method(np.array([0.2, 0.7]))
    ('wilson', 'wilson (no spread)', 'bootstrap')
    """
    v = np.asarray(values, dtype=np.float64)
    if is_binary(v):
        return "wilson"
    d = v[~np.isnan(v)]
    if d.size and d.min() == d.max() and 0.0 <= d[0] <= 1.0:
        return "wilson (no spread)"
    return "bootstrap"


def mean_cis(values: np.ndarray, *, n_resamples: int = 1000, seed: int = 0, confidence: float = 0.95) -> np.ndarray:
    """The interval of the mean of every column of ``values`` (questions x measures; NaN = undefined
    for that question): ``(lo, hi)`` rows by :func:`method`, NaN for a column with no defined value.

    >>> mean_cis(np.array([[1.0, 0.5, 3.0]] * 20)).round(3).tolist()
    [[0.839, 1.0], [0.299, 0.701], [3.0, 3.0]]
    """
    v = np.asarray(values, dtype=np.float64)
    if v.ndim != 2:
        raise ValueError(f"values must be a (questions, measures) array, got shape {v.shape!r}")
    out = np.full((v.shape[1], 2), np.nan)
    binary, no_spread, counts = _methods(v)
    resampled = np.flatnonzero(~binary & ~no_spread).tolist()
    by_n: dict[int, list[int]] = {}
    for j in resampled:
        by_n.setdefault(int(counts[j]), []).append(j)
    for n, cols in by_n.items():  # each column's bootstrap interval depends on that column alone
        out[cols] = bootstrap_cis(v[:, cols], n_resamples=n_resamples, seed=seed,
                                  confidence=expanded_confidence(confidence, n))
    # Wilson's: every binary column at once (their sums are counts, exact in any order), a column
    # with no spread on its own (its sum as the one-column rule adds it)
    if binary.any():
        two = np.flatnonzero(binary)
        out[two] = wilson(np.where(np.isnan(v[:, two]), 0.0, v[:, two]).sum(axis=0), counts[two], confidence)
    for j in np.flatnonzero(no_spread).tolist():
        d = v[:, j][~np.isnan(v[:, j])]
        out[j] = wilson(d.sum(), d.size, confidence)
    return out


def _methods(v: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`method` of every column of ``v`` at once: which are binary (``wilson``), which have no
    spread (``wilson (no spread)``; the rest: ``bootstrap``), and each column's defined values."""
    undefined = np.isnan(v)
    counts = (~undefined).sum(axis=0)
    binary = ((v == 0.0) | (v == 1.0) | undefined).all(axis=0) & (counts > 0)
    low = np.where(undefined, np.inf, v).min(axis=0, initial=np.inf)
    high = np.where(undefined, -np.inf, v).max(axis=0, initial=-np.inf)
    no_spread = ~binary & (counts > 0) & (low == high) & (low >= 0.0) & (low <= 1.0)
    return binary, no_spread, counts


def mean_ci(values: np.ndarray, *, n_resamples: int = 1000, seed: int = 0,
            confidence: float = 0.95) -> tuple[float, float]:
    """:func:`mean_cis` of one column.

    >>> [round(x, 3) for x in mean_ci(np.ones(20))]
    [0.839, 1.0]
    """
    (lo, hi), = mean_cis(np.asarray(values, dtype=np.float64).reshape(-1, 1), n_resamples=n_resamples, seed=seed,
                         confidence=confidence)
    return float(lo), float(hi)


def judged_ci(samples: np.ndarray, *, n_resamples: int = 1000, seed: int = 0,
              confidence: float = 0.95) -> tuple[float, float]:
    """The interval of a judged measure, ``(questions, samples)`` (NaN = a failed sample): with one
    sample per question, :func:`mean_ci` of those values (Wilson for yes/no); with several, the
    two-level bootstrap (:func:`rag_bench.metrics.bootstrap.two_level_bootstrap_ci`), with the
    Wilson interval over the questions when every sample of every question is the same value in
    [0, 1] (the bootstrap has nothing to resample there).

    >>> [round(x, 3) for x in judged_ci(np.ones((20, 3)))]
    [0.839, 1.0]
    """
    s = np.asarray(samples, dtype=np.float64)
    defined = ~np.isnan(s)
    if s.ndim == 2 and int(defined.sum(axis=1).max(initial=0)) <= 1:
        return mean_ci(question_means(s), n_resamples=n_resamples, seed=seed, confidence=confidence)
    d = s[defined]
    if d.size and d.min() == d.max() and 0.0 <= d[0] <= 1.0:
        means = question_means(s)
        k = int((~np.isnan(means)).sum())
        lo, hi = wilson(d[0] * k, k, confidence)
        return float(lo), float(hi)
    return two_level_bootstrap_ci(s, n_resamples=n_resamples, seed=seed, confidence=confidence)


__all__ = ["is_binary", "judged_ci", "mean_ci", "mean_cis", "method", "wilson", "z_value"]
