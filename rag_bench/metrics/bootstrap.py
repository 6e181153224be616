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


def _packed(samples: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`packed_samples` without the questions that have no sample."""
    values, counts = packed_samples(samples)
    return values[counts > 0], counts[counts > 0]


def packed_samples(samples: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(values, counts)``: each question's defined samples first in its row (NaN after them)
    and how many it has; questions with none are kept (count 0). The layout
    :func:`resampled_means` draws from."""
    s = np.asarray(samples, dtype=np.float64)
    if s.ndim != 2:
        raise ValueError(f"samples must be a (questions, samples) array, got shape {s.shape!r}")
    defined = ~np.isnan(s)
    order = np.argsort(~defined, axis=1, kind="stable")
    return np.take_along_axis(s, order, axis=1), defined.sum(axis=1)


def resampled_means(values: np.ndarray, counts: np.ndarray, q: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The second level of a two-level bootstrap: for drawn questions ``q`` (any shape, rows of
    :func:`packed_samples`), each question's mean over as many draws with replacement from its own
    defined samples as it has (every drawn question must have one). Same shape as ``q``."""
    m = counts[q]
    width = values.shape[1]
    j = np.floor(rng.random((*q.shape, width)) * m[..., None]).astype(np.int64)
    use = np.arange(width) < m[..., None]
    return np.where(use, values[q[..., None], j], 0.0).sum(axis=-1) / m


def two_level_bootstrap_ci(samples: np.ndarray, *, n_resamples: int = 1000, seed: int = 0,
                           confidence: float = 0.95) -> tuple[float, float]:
    """Percentile CI of the mean of per-question means, resampling on two levels: the questions
    (with replacement), then within each drawn question its own samples (with replacement, as
    many as it has). ``samples`` is ``(questions, samples)``; NaN marks a sample that is missing
    (a failed judge call): a question's mean is over its defined samples, a question with none is
    left out. The point estimate is :func:`question_means`' mean.

    With one sample per question this is :func:`bootstrap_ci` of those values (the second level
    has nothing to resample); with several, the interval also carries the spread of each
    question's samples (the judge's noise), so it widens as the judge disagrees with itself.

    >>> two_level_bootstrap_ci(np.array([[1.0, 1.0], [0.0, 0.0]]), n_resamples=1)[0] in (0.0, 0.5, 1.0)
    True
    >>> two_level_bootstrap_ci(np.array([[1.0, np.nan], [1.0, 1.0]]))
    (1.0, 1.0)
    """
    _check(n_resamples, confidence)
    values, counts = _packed(samples)
    n = len(counts)
    if n == 0:
        return float("nan"), float("nan")
    if int(counts.max()) == 1:
        return bootstrap_ci(values[:, 0], n_resamples=n_resamples, seed=seed, confidence=confidence)
    rng = np.random.default_rng(seed)
    means = np.empty(n_resamples)
    step = max(1, _GATHER_BYTES // (8 * n * values.shape[1]))
    for start in range(0, n_resamples, step):
        q = rng.integers(0, n, size=(min(step, n_resamples - start), n))  # level 1: questions
        means[start:start + len(q)] = resampled_means(values, counts, q, rng).mean(axis=1)
    alpha = (1 - confidence) / 2
    lo, hi = np.quantile(means, [alpha, 1 - alpha])
    return float(lo), float(hi)


def question_means(samples: np.ndarray) -> np.ndarray:
    """Per question, the mean of its defined samples (NaN when it has none).

    >>> question_means(np.array([[1.0, 0.0], [np.nan, 1.0], [np.nan, np.nan]])).tolist()
    [0.5, 1.0, nan]
    """
    s = np.asarray(samples, dtype=np.float64)
    defined = ~np.isnan(s)
    counts = defined.sum(axis=1)
    total = np.where(defined, s, 0.0).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, total / np.maximum(counts, 1), np.nan)


def question_spreads(samples: np.ndarray) -> np.ndarray:
    """Per question, the sample standard deviation (ddof=1) of its defined samples; NaN with
    fewer than two.

    >>> question_spreads(np.array([[1.0, 0.0], [1.0, np.nan]])).round(4).tolist()
    [0.7071, nan]
    """
    s = np.asarray(samples, dtype=np.float64)
    counts = (~np.isnan(s)).sum(axis=1)
    mean = question_means(s)
    dev = np.where(np.isnan(s), 0.0, s - mean[:, None]) ** 2
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 1, np.sqrt(dev.sum(axis=1) / np.maximum(counts - 1, 1)), np.nan)


def judge_consistency(samples: np.ndarray) -> float:
    """How far a judge agrees with itself over items judged at least twice: for binary samples
    (every value 0 or 1) the share of items whose samples all agree; for graded ones the mean
    pairwise agreement ``1 - |a - b| / range`` over the pairs of each item's samples (range: the
    observed max - min over all samples, 1 when they are all equal), averaged over items. NaN when
    no item has two samples.

    >>> judge_consistency(np.array([[1.0, 1.0], [0.0, 1.0], [0.0, 0.0], [1.0, np.nan]]))
    0.6666666666666666
    >>> round(judge_consistency(np.array([[0.2, 0.4], [0.0, 1.0]])), 6)  # (1 - 0.2 / 1 + 1 - 1 / 1) / 2
    0.4
    """
    s = np.asarray(samples, dtype=np.float64)
    if s.ndim != 2:
        raise ValueError(f"samples must be a (questions, samples) array, got shape {s.shape!r}")
    values, counts = _packed(s)
    values, counts = values[counts >= 2], counts[counts >= 2]
    if len(counts) == 0:
        return float("nan")
    defined = values[~np.isnan(values)]
    if np.isin(defined, (0.0, 1.0)).all():
        agree = [np.all(row[:c] == row[0]) for row, c in zip(values, counts)]
        return float(np.mean(agree))
    span = float(defined.max() - defined.min()) or 1.0
    per_item = []
    for row, c in zip(values, counts):
        v = row[:c]
        i, j = np.triu_indices(c, k=1)
        per_item.append(float(np.mean(1 - np.abs(v[i] - v[j]) / span)))
    return float(np.mean(per_item))
