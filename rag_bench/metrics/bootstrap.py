"""Percentile bootstrap confidence intervals over questions (fixed seed, vectorised)."""

from __future__ import annotations

import numpy as np


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
    rng = np.random.default_rng(seed)
    means = v[rng.integers(0, v.size, size=(n_resamples, v.size))].mean(axis=1)
    alpha = (1 - confidence) / 2
    lo, hi = np.quantile(means, [alpha, 1 - alpha])
    return float(lo), float(hi)
