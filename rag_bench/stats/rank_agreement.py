"""Agreement of two rankings of the same items: Kendall's tau-b, for one pair of score vectors or
for many at once (one per bootstrap draw), and the percentile interval of the draws' values.

Kendall's tau-b (Kendall 1945; scipy.stats.kendalltau's default) counts, over the pairs of items,
concordant pairs (both scores order the pair the same way) minus discordant ones, divided by
``sqrt((n0 - t_x) (n0 - t_y))`` where ``n0`` is the number of pairs and ``t_x``/``t_y`` the pairs tied
in one score: ties are neither agreement nor disagreement, and two rankings that both tie the same
pairs still reach 1. +1: the same order; 0: no relation; -1: reversed. Items whose score is
undefined (NaN) in either vector are left out; fewer than two items, or a vector that ties every
pair, gives NaN (no order to compare). Pure numpy, O(items^2) per vector: a grid has tens of cells.
"""

from __future__ import annotations

import math

import numpy as np


def kendall_tau_b(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall's tau-b between ``x`` and ``y`` along their last axis (shape ``(..., items)``, equal);
    one value per leading index (a float array of the leading shape; a 0-d array for vectors).

    >>> float(kendall_tau_b(np.array([1., 2, 3, 4]), np.array([10., 20, 30, 40])))
    1.0
    >>> float(kendall_tau_b(np.array([1., 2, 3, 4]), np.array([4., 3, 2, 1])))
    -1.0
    >>> round(float(kendall_tau_b(np.array([1., 2, 2, 3]), np.array([1., 3, 2, 4]))), 4)  # scipy: 0.9129
    0.9129
    >>> kendall_tau_b(np.array([[1., 2, 3], [1., 2, np.nan]]), np.array([[3., 2, 1], [1., 2, 3]])).tolist()
    [-1.0, 1.0]
    """
    a, b = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if a.shape != b.shape or a.ndim < 1:
        raise ValueError(f"x and y must have the same shape (..., items), got {a.shape} and {b.shape}")
    i, j = np.triu_indices(a.shape[-1], k=1)
    dx, dy = np.sign(a[..., i] - a[..., j]), np.sign(b[..., i] - b[..., j])  # NaN where an item is undefined
    valid = ~(np.isnan(dx) | np.isnan(dy))
    dx, dy = np.where(valid, dx, 0.0), np.where(valid, dy, 0.0)
    pairs = valid.sum(axis=-1)
    untied_x = (valid & (dx != 0)).sum(axis=-1)
    untied_y = (valid & (dy != 0)).sum(axis=-1)
    s = (dx * dy).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = s / np.sqrt(untied_x.astype(np.float64) * untied_y)
    return np.where((pairs > 0) & (untied_x > 0) & (untied_y > 0), tau, np.nan)


def percentile_interval(values: np.ndarray, alpha: float = 0.05) -> tuple[float, float]:
    """The ``1 - alpha`` percentile interval of ``values`` (bootstrap draws; NaN ones left out);
    NaN, NaN when none is defined.

    >>> percentile_interval(np.arange(101.0))
    (2.5, 97.5)
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    v = np.asarray(values, dtype=np.float64)
    v = v[~np.isnan(v)]
    if not v.size:
        return math.nan, math.nan
    lo, hi = np.quantile(v, [alpha / 2, 1 - alpha / 2])
    return float(lo), float(hi)
