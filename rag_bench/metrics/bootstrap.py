"""Percentile bootstrap confidence intervals over questions (fixed seed, vectorised)."""

from __future__ import annotations

from functools import lru_cache

import numpy as np


@lru_cache(maxsize=16)
def _resample_indices(n: int, n_resamples: int, seed: int) -> np.ndarray:
    # The draws depend only on (n, n_resamples, seed): every metric over the same questions reuses
    # them (the same numbers a fresh default_rng(seed) would give, without drawing them again).
    idx = np.random.default_rng(seed).integers(0, n, size=(n_resamples, n))
    idx.setflags(write=False)
    return idx


def bootstrap_ci(values: np.ndarray, *, n_resamples: int = 1000, seed: int = 0,
                 confidence: float = 0.95) -> tuple[float, float]:
    """Percentile CI of the mean of ``values`` (NaN entries are dropped first).

    Resamples questions with replacement ``n_resamples`` times with ``numpy.random.default_rng(seed)``;
    returns ``(nan, nan)`` when no value is defined. With one value the interval is a point.

    >>> bootstrap_ci(np.array([1.0, 1.0, 1.0]))
    (1.0, 1.0)
    """
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples!r}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    v = np.asarray(values, dtype=np.float64)
    v = v[~np.isnan(v)]
    if v.size == 0:
        return float("nan"), float("nan")
    means = v[_resample_indices(v.size, n_resamples, seed)].mean(axis=1)
    alpha = (1 - confidence) / 2
    lo, hi = np.quantile(means, [alpha, 1 - alpha])
    return float(lo), float(hi)
