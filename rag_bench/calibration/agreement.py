"""Agreement statistics between two raters (a person and a measure, or two people), pure functions.

- :func:`cohen_kappa`: Cohen's kappa, unweighted for binary labels or quadratically weighted for
  grades; the same number as scikit-learn's ``cohen_kappa_score`` given the same category list
  (``labels=``), tested equal on fixed vectors.
- :func:`spearman`: Spearman's rank correlation (scipy), for graded labels.
- :func:`bootstrap_ci`: a percentile bootstrap over items for any of them (items resampled with
  replacement, replicates where the statistic is undefined dropped).

Kappa is undefined (NaN) when the expected disagreement is 0: both raters gave one and the same
category to every item. It is reported as ``n/a``, never as 1.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np


def confusion(a: Sequence[int], b: Sequence[int], categories: Sequence[int]) -> np.ndarray:
    """Counts: rows rater ``a``'s category, columns rater ``b``'s, in ``categories`` order."""
    index = {c: i for i, c in enumerate(categories)}
    m = np.zeros((len(categories), len(categories)), dtype=np.int64)
    for x, y in zip(a, b, strict=True):
        m[index[int(x)], index[int(y)]] += 1
    return m


def cohen_kappa(a: Sequence[int], b: Sequence[int], *, categories: Sequence[int] | None = None,
                weights: str | None = None) -> float:
    """Cohen's kappa of two raters over the same items; ``weights="quadratic"`` for ordinal grades
    (disagreement weight (i - j)^2 between category positions i and j)."""
    if len(a) != len(b):
        raise ValueError("both raters must rate the same items")
    if len(a) == 0:
        return float("nan")
    cats = sorted({int(x) for x in (*a, *b)}) if categories is None else [int(c) for c in categories]
    observed = confusion(a, b, cats).astype(float)
    k = len(cats)
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0)) / observed.sum()
    w: np.ndarray
    if weights is None:
        w = 1.0 - np.eye(k)
    elif weights == "quadratic":
        i = np.arange(k)
        w = (i[:, None] - i[None, :]) ** 2.0
    else:
        raise ValueError(f"weights must be None or 'quadratic', not {weights!r}")
    denominator = float((w * expected).sum())
    if denominator == 0.0:
        return float("nan")
    return float(1.0 - (w * observed).sum() / denominator)


def spearman(a: Sequence[float], b: Sequence[float]) -> float:
    """Spearman's rho (NaN when either side is constant)."""
    from scipy.stats import spearmanr

    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(x) < 2 or np.all(x == x[0]) or np.all(y == y[0]):
        return float("nan")
    return float(spearmanr(x, y).statistic)


def bootstrap_ci(statistic: Callable[[np.ndarray, np.ndarray], float], a: Sequence[float], b: Sequence[float], *,
                 n_resamples: int = 2000, seed: int = 0, confidence: float = 0.95) -> tuple[float, float]:
    """Percentile CI of ``statistic(a, b)`` over items resampled with replacement; (nan, nan) when
    fewer than half of the replicates are defined."""
    x, y = np.asarray(a), np.asarray(b)
    n = len(x)
    if n < 2:
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    reps = np.array([statistic(x[idx], y[idx]) for idx in rng.integers(0, n, size=(n_resamples, n))])
    reps = reps[~np.isnan(reps)]
    if len(reps) < n_resamples / 2:
        return float("nan"), float("nan")
    tail = (1.0 - confidence) / 2.0 * 100.0
    lo, hi = np.percentile(reps, [tail, 100.0 - tail])
    return float(lo), float(hi)
