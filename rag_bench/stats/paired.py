"""Paired statistics over the same questions: bootstrap CI of the mean difference, sign-flip
randomisation test, Holm correction; for judged measures (several judge samples per question) the
paired two-level bootstrap (questions, then each cell's samples) and its p-value.

Small golden sets make a gap of two or three questions look meaningful; these functions say how
much of a difference survives resampling the questions. All are deterministic given ``seed``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rag_bench.metrics.bootstrap import packed_samples, resampled_means


def _paired(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"a and b must be 1-d arrays of the same length, got shapes {a.shape} and {b.shape}")
    keep = ~(np.isnan(a) | np.isnan(b))
    return b[keep] - a[keep]


def paired_bootstrap_ci(a: np.ndarray, b: np.ndarray, *, n_resamples: int = 2000, seed: int = 0,
                        confidence: float = 0.95) -> tuple[float, float]:
    """Percentile CI of ``mean(b - a)`` resampling questions (pairs kept together).

    Questions where either value is NaN are dropped. ``(nan, nan)`` when no pair is defined.

    >>> paired_bootstrap_ci(np.zeros(5), np.ones(5))
    (1.0, 1.0)
    """
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples!r}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    d = _paired(a, b)
    if d.size == 0:
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    means = d[rng.integers(0, d.size, size=(n_resamples, d.size))].mean(axis=1)
    lo, hi = np.quantile(means, [(1 - confidence) / 2, 1 - (1 - confidence) / 2])
    return float(lo), float(hi)


def _two_level_diffs(a: np.ndarray, b: np.ndarray, n_resamples: int, seed: int) -> np.ndarray:
    """Resampled ``mean(b - a)`` of per-question sample means: questions drawn with replacement
    (pairs kept together), then each cell's samples of each drawn question drawn within it."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.ndim != 2 or b.ndim != 2 or len(a) != len(b):
        raise ValueError(f"a and b must be (questions, samples) arrays over the same questions, got shapes "
                         f"{a.shape} and {b.shape}")
    va, ca = packed_samples(a)
    vb, cb = packed_samples(b)
    keep = (ca > 0) & (cb > 0)
    va, ca, vb, cb = va[keep], ca[keep], vb[keep], cb[keep]
    n = len(ca)
    if n == 0:
        return np.empty(0)
    rng = np.random.default_rng(seed)
    q = rng.integers(0, n, size=(n_resamples, n))
    return (resampled_means(vb, cb, q, rng) - resampled_means(va, ca, q, rng)).mean(axis=1)


def paired_two_level_bootstrap_ci(a: np.ndarray, b: np.ndarray, *, n_resamples: int = 2000, seed: int = 0,
                                  confidence: float = 0.95) -> tuple[float, float]:
    """Percentile CI of the mean paired difference of a judged measure, ``(questions, samples)``
    per cell (NaN = a failed sample): questions resampled together, then each cell's judge
    samples within each question, so the interval carries the judge's noise in both cells.
    Questions without a sample in either cell are dropped; ``(nan, nan)`` when none is left. With
    one sample per question it is a questions-only paired bootstrap.

    >>> paired_two_level_bootstrap_ci(np.zeros((4, 2)), np.ones((4, 2)))
    (1.0, 1.0)
    """
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples!r}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    d = _two_level_diffs(a, b, n_resamples, seed)
    if d.size == 0:
        return float("nan"), float("nan")
    lo, hi = np.quantile(d, [(1 - confidence) / 2, 1 - (1 - confidence) / 2])
    return float(lo), float(hi)


def paired_two_level_p(a: np.ndarray, b: np.ndarray, *, n_resamples: int = 10000, seed: int = 0) -> float:
    """Two-sided bootstrap p-value of ``mean(b - a) == 0`` from the same two-level resampling:
    ``min(1, 2 * min((1 + #resampled differences <= 0), (1 + # >= 0)) / (1 + R))`` -- about the
    smallest alpha at which the ``1 - alpha`` interval of :func:`paired_two_level_bootstrap_ci`
    excludes 0, counted as a permutation p-value is so that it is never 0 (R resamples cannot show
    a p below 1/(R+1)). 1.0 when no question has samples in both cells.

    >>> paired_two_level_p(np.zeros((3, 2)), np.ones((3, 2)), n_resamples=999)
    0.002
    """
    d = _two_level_diffs(a, b, n_resamples, seed)
    if d.size == 0:
        return 1.0
    below, above = int(np.sum(d <= 0)), int(np.sum(d >= 0))
    return min(1.0, 2 * (1 + min(below, above)) / (1 + d.size))


def randomisation_p(a: np.ndarray, b: np.ndarray, *, n_resamples: int = 10000, seed: int = 0,
                    exact_below: int = 16) -> float:
    """Two-sided paired randomisation (sign-flip) test of ``mean(b - a) == 0``.

    Under the null each question's difference is as likely to have either sign. With at most
    ``exact_below`` non-zero differences all ``2**n`` sign patterns are enumerated (exact p);
    otherwise ``n_resamples`` random patterns give ``p = (1 + #{|mean*| >= |mean|}) / (1 + R)``.
    Returns 1.0 when every difference is zero or none is defined.

    >>> randomisation_p(np.zeros(3), np.ones(3))  # 3 pairs all +1: 2 of 8 patterns are as extreme
    0.25
    """
    d = _paired(a, b)
    d = d[d != 0]  # zero differences are unchanged by a sign flip
    if d.size == 0:
        return 1.0
    observed = abs(d.mean())
    tol = 1e-12 * max(1.0, observed)
    if d.size <= exact_below:
        signs = 1 - 2 * ((np.arange(2 ** d.size)[:, None] >> np.arange(d.size)) & 1)
        means = np.abs((signs * d).mean(axis=1))
        return float(np.mean(means >= observed - tol))
    rng = np.random.default_rng(seed)
    signs = rng.choice(np.array([-1.0, 1.0]), size=(n_resamples, d.size))
    means = np.abs((signs * d).mean(axis=1))
    return float((1 + np.sum(means >= observed - tol)) / (1 + n_resamples))


def disagreement(ci: Sequence[float], p: float, alpha: float, differ: int) -> str:
    """Why a bootstrap CI and a randomisation p printed side by side disagree (issue 55: a CI that
    excluded 0 sat beside "p = 0.125, not significant"), in words; "" when they agree. ``differ``:
    how many pairs differ at all.

    The two are different procedures: the percentile bootstrap resamples the questions that
    differ and, with few of them, cannot produce a resample without a difference (4 questions all
    +1: every resample is +1); the sign-flip test asks how often such a difference arises when
    each one's sign is a coin flip (2 of 16). Inverting the sign-flip test for a CI was tried and
    refused: with many zero differences (0/1 measures) a shifted null turns every zero into
    evidence, and the interval collapses onto 0. So the row keeps both and says which decides.

    >>> disagreement((1.0, 1.0), 0.125, 0.05, 4)
    'the bootstrap CI excludes 0 but the paired test does not reject: 4 questions differ, too few for the CI; the test decides'
    >>> disagreement((-0.1, 0.2), 0.5, 0.05, 20)
    ''
    """
    lo, hi = ci
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return ""
    excludes = lo > 0 or hi < 0
    rejects = p <= alpha
    if excludes == rejects:
        return ""
    if excludes:
        return (f"the bootstrap CI excludes 0 but the paired test does not reject: {differ} question"
                f"{'s' if differ != 1 else ''} differ, too few for the CI; the test decides")
    return "the paired test rejects but the bootstrap CI reaches 0: the difference is at the edge; read it as weak"


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values (same order as given; NaN stays NaN).

    Step-down: sort ascending, multiply the i-th smallest (0-based) by ``m - i``, enforce
    monotonicity, cap at 1.

    >>> holm([0.01, 0.04, 0.03])
    [0.03, 0.06, 0.06]
    """
    p = np.asarray(p_values, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(~np.isnan(p))
    m = ok.size
    if m == 0:
        return out.tolist()
    order = ok[np.argsort(p[ok], kind="stable")]
    adj = np.maximum.accumulate(p[order] * (m - np.arange(m)))
    out[order] = np.minimum(adj, 1.0)
    return [round(float(v), 12) if not np.isnan(v) else float("nan") for v in out]
