"""Percentile bootstrap confidence intervals over questions (fixed seed, vectorised)."""

from __future__ import annotations

from collections import OrderedDict
from functools import lru_cache

import numpy as np

# Bound on the (measures, resamples, questions) gather of one step of bootstrap_cis.
_GATHER_BYTES = 64 << 20


@lru_cache(maxsize=16)
def _resample_indices(n: int, n_resamples: int, seed: int) -> np.ndarray:
    # The draws depend only on (n, n_resamples, seed): every metric over the same questions reuses
    # them (the same numbers a fresh default_rng(seed) would give, without drawing them again).
    idx = np.random.default_rng(seed).integers(0, n, size=(n_resamples, n))
    idx.setflags(write=False)
    return idx


def _check(n_resamples: int, confidence: float) -> None:
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples!r}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")


def bootstrap_ci(values: np.ndarray, *, n_resamples: int = 1000, seed: int = 0,
                 confidence: float = 0.95) -> tuple[float, float]:
    """Percentile CI of the mean of ``values`` (NaN entries are dropped first).

    Resamples questions with replacement ``n_resamples`` times with ``numpy.random.default_rng(seed)``;
    returns ``(nan, nan)`` when no value is defined. With one value the interval is a point.

    >>> bootstrap_ci(np.array([1.0, 1.0, 1.0]))
    (1.0, 1.0)
    """
    _check(n_resamples, confidence)
    (lo, hi), = bootstrap_cis(np.asarray(values, dtype=np.float64).reshape(-1, 1), n_resamples=n_resamples,
                              seed=seed, confidence=confidence)
    return float(lo), float(hi)


@lru_cache(maxsize=16)
def _resample_counts(n: int, n_resamples: int, seed: int) -> np.ndarray:
    # counts[r, j]: how often question j is drawn in resample r (the draws of _resample_indices).
    idx = _resample_indices(n, n_resamples, seed)
    rows = np.repeat(np.arange(n_resamples) * n, n)
    counts = np.bincount(rows + idx.ravel(), minlength=n_resamples * n).reshape(n_resamples, n).astype(np.float64)
    counts.setflags(write=False)
    return counts


def bootstrap_cis(values: np.ndarray, *, n_resamples: int = 1000, seed: int = 0,
                  confidence: float = 0.95) -> np.ndarray:
    """:func:`bootstrap_ci` of every column of ``values`` (questions x measures): an array of
    ``(lo, hi)`` rows, NaN for a column with no defined value.

    Columns defined on the same questions share one resample matrix, and each interval is bit for
    bit the one :func:`bootstrap_ci` gives for that column alone: equal columns are resampled once;
    integer-valued columns (hit, complete, correct, counts) by one matrix product of the resample
    counts with the values (integer sums are exact in any order, so the means are the same
    floats); the others by one gather averaged along its rows (the reduction bootstrap_ci does);
    then one quantile over all.

    >>> bootstrap_cis(np.array([[1.0, np.nan], [1.0, np.nan]])).tolist()
    [[1.0, 1.0], [nan, nan]]
    """
    _check(n_resamples, confidence)
    v = np.asarray(values, dtype=np.float64)
    if v.ndim != 2:
        raise ValueError(f"values must be a (questions, measures) array, got shape {v.shape!r}")
    # Each column's interval depends on that column alone (above): columns seen before (cells of
    # a sweep that share a ranking share their retrieval measures) come from _SEEN, exactly.
    keys = [(np.ascontiguousarray(v[:, j]).tobytes(), n_resamples, seed, confidence) for j in range(v.shape[1])]
    todo = [j for j, key in enumerate(keys) if key not in _SEEN]
    out = np.full((v.shape[1], 2), np.nan)
    if todo:
        out[todo] = _cis(v[:, todo], n_resamples, seed, confidence)
    fresh = set(todo)
    for j, key in enumerate(keys):
        if j in fresh:
            _SEEN[key] = (float(out[j, 0]), float(out[j, 1]))
            if len(_SEEN) > _SEEN_SIZE:
                _SEEN.popitem(last=False)
        else:
            _SEEN.move_to_end(key)
            out[j] = _SEEN[key]
    return out


# Intervals by (column bytes, n_resamples, seed, confidence): a pure function's results, bounded.
_SEEN: OrderedDict[tuple[bytes, int, int, float], tuple[float, float]] = OrderedDict()
_SEEN_SIZE = 4096


def _cis(v: np.ndarray, n_resamples: int, seed: int, confidence: float) -> np.ndarray:
    out = np.full((v.shape[1], 2), np.nan)
    defined = ~np.isnan(v)
    groups: dict[bytes, dict[bytes, list[int]]] = {}  # mask -> column bytes -> equal columns
    for j in range(v.shape[1]):
        col = np.ascontiguousarray(v[:, j])
        groups.setdefault(np.packbits(defined[:, j]).tobytes(), {}).setdefault(col.tobytes(), []).append(j)
    alpha = (1 - confidence) / 2
    for equal in groups.values():
        same = list(equal.values())
        rows = defined[:, same[0][0]]
        n = int(rows.sum())
        if n == 0:
            continue
        sub = np.ascontiguousarray(v[rows][:, [cols[0] for cols in same]].T)  # (distinct columns, n)
        means = np.empty((len(same), n_resamples))
        exact = (sub == np.round(sub)).all(axis=1) & (np.abs(sub).max(axis=1) * n < 2.0 ** 52)
        if exact.any() and n_resamples > 1:
            means[exact] = (_resample_counts(n, n_resamples, seed) @ sub[exact].T).T / n
        rest = np.flatnonzero(~exact) if n_resamples > 1 else np.arange(len(same))
        idx = _resample_indices(n, n_resamples, seed)
        # A single resample is a (1, n) mean, which numpy sums in another order than the rows of a
        # taller array: one column at a time then, as bootstrap_ci always did.
        step = 1 if n_resamples == 1 else max(1, _GATHER_BYTES // (8 * n_resamples * n))
        for s in range(0, len(rest), step):
            part = sub[rest[s:s + step]]
            # One C-ordered (columns x resamples, n) gather (``take``; fancy indexing would lay it
            # out resample-major), averaged along its rows: the exact reduction bootstrap_ci did per
            # column (a 3-d mean over the last axis may sum in another order).
            means[rest[s:s + step]] = (part[0][idx].mean(axis=1)[None] if n_resamples == 1 else
                                       part.take(idx.ravel(), axis=1).reshape(-1, n).mean(axis=1)
                                       .reshape(len(part), n_resamples))
        cis = np.quantile(means, [alpha, 1 - alpha], axis=1).T
        for i, cols in enumerate(same):
            out[cols] = cis[i]
    return out
