"""The model confidence set (Hansen, Lunde and Nason 2011, *Econometrica* 79(2)): the cells that
cannot be told from the best at level ``alpha`` -- a set that holds the truly best cell with
probability at least ``1 - alpha``, whatever the number of cells, because the test that eliminates
a cell always compares it with every other cell still in the set (the selection of a "best" among
many is part of the test, not an afterthought corrected by Holm).

Each round tests "every cell left is equally good" with the T_max statistic: for each cell, its
mean loss minus the mean over the cells left, divided by that difference's bootstrap standard
error; the largest is compared with its bootstrap distribution (questions resampled, the same
resamples for every cell: the pairs stay paired). Rejected: the cell with the largest statistic
leaves, and the next round runs on the rest. A cell's MCS p-value is the largest p of the rounds up
to its elimination; the set at ``alpha`` is the cells whose p-value is at least ``alpha``.

Pure and deterministic given ``seed``; questions where any cell's value is undefined (NaN) are left
out, and how many were used is returned.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ConfidenceSet:
    """``p_values[i]``: cell i's MCS p-value (1 for the last cell standing); ``included``: the cells
    whose p-value is at least ``alpha``; ``n``: the questions used (defined in every cell)."""

    included: tuple[bool, ...]
    p_values: tuple[float, ...]
    alpha: float
    n: int


def model_confidence_set(values: np.ndarray, *, higher_is_better: bool = True, alpha: float = 0.05,
                         n_resamples: int = 2000, seed: int = 0) -> ConfidenceSet:
    """The model confidence set of the cells whose per-question values are the columns of
    ``values`` (questions x cells).

    >>> rng = np.random.default_rng(1)
    >>> good = rng.random(200) < 0.8
    >>> v = np.column_stack([good, good, rng.random(200) < 0.3]).astype(float)
    >>> model_confidence_set(v).included  # two identical good cells; the third is clearly worse
    (True, True, False)
    """
    v = np.asarray(values, dtype=np.float64)
    if v.ndim != 2 or v.shape[1] < 1:
        raise ValueError(f"values must be a (questions, cells) array with at least one cell, got shape {v.shape}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples!r}")
    v = v[~np.isnan(v).any(axis=1)]
    n, m = v.shape
    if m == 1 or n < 2:  # one cell, or too few questions to resample: nothing can be told apart
        return ConfidenceSet((True,) * m, (1.0,) * m, alpha, n)
    loss = -v if higher_is_better else v
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, n, size=(n_resamples, n))
    weights = np.zeros((n_resamples, n))
    np.add.at(weights, (np.repeat(np.arange(n_resamples), n), draws.ravel()), 1.0)
    mean = loss.mean(axis=0)
    boot = weights @ loss / n  # resampled mean loss of every cell, one row per resample
    alive = np.ones(m, dtype=bool)
    p_values = np.ones(m)
    running = 0.0
    while alive.sum() > 1:
        idx = np.flatnonzero(alive)
        d = mean[idx] - mean[idx].mean()
        centred = boot[:, idx] - boot[:, idx].mean(axis=1, keepdims=True) - d
        se = np.sqrt((centred ** 2).mean(axis=0))
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.where(se > 0, d / se, np.where(d > 0, np.inf, np.where(d < 0, -np.inf, 0.0)))
            t_boot = np.where(se > 0, centred / se, 0.0)
        p = float((t_boot.max(axis=1) >= t.max()).mean())
        running = max(running, p)
        # the cell with the largest statistic leaves; among equals, the one with the larger mean loss
        worst = idx[np.lexsort((mean[idx], t))[-1]]
        p_values[worst] = running
        alive[worst] = False
    included = tuple(bool(p >= alpha) for p in p_values)
    return ConfidenceSet(included, tuple(float(p) for p in p_values), alpha, n)
