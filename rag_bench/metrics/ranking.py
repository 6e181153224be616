"""Ranking metrics as pure numpy kernels over ``(n_questions, depth)`` arrays.

Every kernel takes the relevance *levels* of the ranked items, in rank order, one row per
question: ``levels[i, r]`` is the qrels level of the item at rank ``r + 1`` for question ``i``.
``0`` means not relevant or not judged; levels may be negative (judged, and worse than
non-relevant) and rows shorter than ``depth`` are padded with ``0``. Binary relevance is
``level >= relevance_level`` (default 1), exactly as trec_eval's ``-l``.

Besides ``levels`` the kernels need, per question,

* ``n_relevant`` -- how many items in the qrels have ``level >= relevance_level`` (retrieved or
  not), the denominator of recall, AP and R-precision;
* ``ideal`` -- ``(n_questions, m)``, all judged levels sorted in descending order, padded with
  ``0``; the ideal ranking for nDCG.

Each kernel returns one float per question, ``NaN`` where the metric is undefined (no relevant
item at all). Averaging is separate (:func:`mean_over`), so the caller decides which questions
count and can report how many were excluded. The definitions reproduce trec_eval 10.0 (see
``rag_bench.metrics.trec`` and the conformance tests).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import numpy as np

__all__ = [
    "GAINS",
    "average_precision",
    "hit_at_k",
    "mean_over",
    "ndcg_at_k",
    "precision_at_k",
    "r_precision",
    "ranking_metrics",
    "recall_at_k",
    "reciprocal_rank",
]


def _linear_gain(levels: np.ndarray) -> np.ndarray:
    return levels.astype(np.float64)


def _exponential_gain(levels: np.ndarray) -> np.ndarray:
    return np.exp2(levels.astype(np.float64)) - 1.0


#: nDCG gain functions by name, applied to ``max(level, 0)`` so negative levels gain nothing.
GAINS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "linear": _linear_gain,
    "exponential": _exponential_gain,
}


# --------------------------------------------------------------------------- validation


def _as_levels(levels: Any, name: str = "levels") -> np.ndarray:
    arr = np.asarray(levels)
    if arr.ndim != 2:
        raise ValueError(
            f"{name} must be a 2-D array (n_questions, depth), got shape {arr.shape}"
        )
    if arr.dtype == bool or not np.issubdtype(arr.dtype, np.number):
        raise ValueError(f"{name} must hold numeric relevance levels, got dtype {arr.dtype}")
    return arr


def _as_n_relevant(n_relevant: Any, n_questions: int) -> np.ndarray:
    arr = np.asarray(n_relevant)
    if arr.shape != (n_questions,):
        raise ValueError(
            f"n_relevant must have shape ({n_questions},) to match levels, got {arr.shape}"
        )
    if arr.size and (not np.issubdtype(arr.dtype, np.number) or np.any(arr < 0)):
        raise ValueError(f"n_relevant must be non-negative counts, got {arr!r}")
    return arr


def _check_k(k: Any) -> int:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k <= 0:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    return int(k)


def _check_optional_k(k: Any) -> int | None:
    if k is not None and (isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k <= 0):
        raise ValueError(f"k must be a positive integer or None, got {k!r}")
    return None if k is None else int(k)


def _check_relevance_level(relevance_level: Any) -> int:
    # Level 0 also marks padding and unjudged items, so a threshold <= 0 would call them relevant.
    if (
        isinstance(relevance_level, bool)
        or not isinstance(relevance_level, (int, np.integer))
        or relevance_level < 1
    ):
        raise ValueError(f"relevance_level must be an integer >= 1, got {relevance_level!r}")
    return int(relevance_level)


K = TypeVar("K")


def _no_cutoff(k: Any) -> None:
    """The cutoff of a kernel that has none (average precision, R-precision)."""
    return None


def _prepared(levels: Any, n_relevant: Any, relevance_level: Any, k: Any,
              check_k: Callable[[Any], K]) -> tuple[np.ndarray, np.ndarray, K, int]:
    """A kernel's inputs checked, in this order: the levels, ``n_relevant`` (one per row), the
    cutoff ``k`` (by ``check_k``; None for a kernel without one) and the relevance level."""
    lv = _as_levels(levels)
    n_rel = _as_n_relevant(n_relevant, lv.shape[0])
    k_ = check_k(k)
    return lv, n_rel, k_, _check_relevance_level(relevance_level)


def _undefined_where(values: np.ndarray, mask: np.ndarray) -> np.ndarray:
    values[mask] = np.nan
    return values


def _discount(n: int) -> np.ndarray:
    """``1 / log2(rank + 1)`` for ranks ``1..n``."""
    return 1.0 / np.log2(np.arange(2, n + 2, dtype=np.float64))


# --------------------------------------------------------------------------- kernels


def hit_at_k(
    levels: Any, *, n_relevant: Any, k: int, relevance_level: int = 1
) -> np.ndarray:
    """Whether at least one relevant item is in the top ``k`` (trec_eval ``success_k``).

    .. math:: \\mathrm{hit@k} = \\mathbb{1}[\\exists\\, r \\le k : \\ell_r \\ge \\lambda]

    Parameters
    ----------
    levels : array of shape (n_questions, depth)
        Relevance levels in rank order, padded with 0.
    n_relevant : array of shape (n_questions,)
        Number of items in the qrels with ``level >= relevance_level``.
    k : int
        Cutoff, ``k >= 1``; ``k > depth`` looks at the whole ranking.
    relevance_level : int, default 1
        Minimum level ``lambda`` that counts as relevant.

    Returns
    -------
    ndarray of shape (n_questions,)
        1.0 or 0.0; NaN where ``n_relevant == 0``.

    Examples
    --------
    >>> hit_at_k([[0, 0, 1], [0, 0, 0]], n_relevant=[1, 0], k=2).tolist()
    [0.0, nan]
    >>> hit_at_k([[0, 0, 1]], n_relevant=[1], k=3).tolist()
    [1.0]
    """
    lv, n_rel, k_, rl = _prepared(levels, n_relevant, relevance_level, k, _check_k)
    hit = np.asarray((lv[:, :k_] >= rl).any(axis=1), dtype=np.float64)
    return _undefined_where(hit, n_rel == 0)


def precision_at_k(
    levels: Any, *, n_relevant: Any, k: int, relevance_level: int = 1
) -> np.ndarray:
    """Share of the top ``k`` slots holding a relevant item (trec_eval ``P_k``).

    .. math:: P@k = \\frac{|\\{r \\le k : \\ell_r \\ge \\lambda\\}|}{k}

    The denominator is ``k`` even when fewer than ``k`` items were retrieved, as in trec_eval
    (a system that returns little is not rewarded for it).

    Parameters
    ----------
    levels, n_relevant, k, relevance_level
        As in :func:`hit_at_k`.

    Returns
    -------
    ndarray of shape (n_questions,)
        In [0, 1]; NaN where ``n_relevant == 0``.

    Examples
    --------
    >>> precision_at_k([[1, 0, 2, 0]], n_relevant=[3], k=4).tolist()
    [0.5]
    >>> precision_at_k([[1, 1]], n_relevant=[2], k=10).tolist()  # only 2 retrieved
    [0.2]
    """
    lv, n_rel, k_, rl = _prepared(levels, n_relevant, relevance_level, k, _check_k)
    prec = np.count_nonzero(lv[:, :k_] >= rl, axis=1).astype(np.float64) / k_
    return _undefined_where(prec, n_rel == 0)


def recall_at_k(
    levels: Any, *, n_relevant: Any, k: int, relevance_level: int = 1
) -> np.ndarray:
    """Share of all relevant items that are in the top ``k`` (trec_eval ``recall_k``).

    .. math:: R@k = \\frac{|\\{r \\le k : \\ell_r \\ge \\lambda\\}|}{n_{rel}}

    Parameters
    ----------
    levels, n_relevant, k, relevance_level
        As in :func:`hit_at_k`.

    Returns
    -------
    ndarray of shape (n_questions,)
        In [0, 1]; NaN where ``n_relevant == 0``.

    Examples
    --------
    >>> recall_at_k([[1, 0, 2, 0]], n_relevant=[4], k=3).tolist()
    [0.5]
    """
    lv, n_rel, k_, rl = _prepared(levels, n_relevant, relevance_level, k, _check_k)
    found = np.count_nonzero(lv[:, :k_] >= rl, axis=1).astype(np.float64)
    undefined = n_rel == 0
    return _undefined_where(np.divide(found, n_rel, where=~undefined, out=found), undefined)


def reciprocal_rank(
    levels: Any, *, n_relevant: Any, k: int | None = None, relevance_level: int = 1
) -> np.ndarray:
    """``1 / rank`` of the first relevant item within the top ``k`` (MRR@k per question).

    .. math::

        RR@k = \\frac{1}{\\min\\{r \\le k : \\ell_r \\ge \\lambda\\}}, \\quad 0 \\text{ if none}

    ``k=None`` uses the whole ranking and equals trec_eval ``recip_rank``; a cutoff ``k``
    equals ``recip_rank`` on the run truncated to ``k`` items.

    Parameters
    ----------
    levels, n_relevant, relevance_level
        As in :func:`hit_at_k`.
    k : int or None, default None
        Cutoff, or None for no cutoff.

    Returns
    -------
    ndarray of shape (n_questions,)
        In [0, 1]; NaN where ``n_relevant == 0``.

    Examples
    --------
    >>> reciprocal_rank([[0, 0, 1, 1], [0, 0, 0, 0]], n_relevant=[2, 1]).tolist()
    [0.3333333333333333, 0.0]
    >>> reciprocal_rank([[0, 0, 1, 1]], n_relevant=[2], k=2).tolist()
    [0.0]
    """
    lv, n_rel, k_, rl = _prepared(levels, n_relevant, relevance_level, k, _check_optional_k)
    rel = lv[:, :k_] >= rl
    rr = np.zeros(lv.shape[0], dtype=np.float64)
    if rel.shape[1]:  # argmax is undefined on an empty axis
        found = rel.any(axis=1)
        rr[found] = 1.0 / (rel[found].argmax(axis=1) + 1)
    return _undefined_where(rr, n_rel == 0)


def ndcg_at_k(
    levels: Any, ideal: Any, *, k: int | None = None, gain: str = "linear"
) -> np.ndarray:
    """Normalised discounted cumulative gain of the top ``k`` (trec_eval ``ndcg_cut_k``).

    .. math::

        DCG@k = \\sum_{r=1}^{k} \\frac{g(\\ell_r)}{\\log_2(r + 1)}, \\qquad
        nDCG@k = \\frac{DCG@k(\\text{ranking})}{DCG@k(\\text{ideal})}

    with ``g(l) = max(l, 0)`` (``"linear"``) or ``2**max(l, 0) - 1`` (``"exponential"``):
    negative levels gain nothing. The ideal ranking is *all judged items* sorted by level,
    cut at ``k``, so relevant items that were never retrieved still lower the score.
    ``k=None`` sums over the whole ranking and the whole ideal list: trec_eval ``ndcg``.

    The gains are the levels themselves, **not** the binary relevance: nDCG has no
    ``relevance_level`` argument, and trec_eval's ``-l`` does not change ``ndcg`` either.

    Parameters
    ----------
    levels : array of shape (n_questions, depth)
        Relevance levels in rank order, padded with 0.
    ideal : array of shape (n_questions, m)
        Every judged level of the question, sorted in descending order, padded with 0.
    k : int or None, default None
        Cutoff, or None for no cutoff.
    gain : {"linear", "exponential"}, default "linear"
        Gain function, see :data:`GAINS`.

    Returns
    -------
    ndarray of shape (n_questions,)
        In [0, 1] when ``ideal`` really lists every judged level; NaN where the ideal DCG is 0
        (no item with a positive level).

    Examples
    --------
    Ranking ``[0, 2, 1]``, judged levels ``[2, 1, 1]``:
    DCG = 2/log2(3) + 1/log2(4) = 1.7619; ideal = 2 + 1/log2(3) + 1/log2(4) = 3.1309;
    1.7619 / 3.1309 = 0.5627.

    >>> round(float(ndcg_at_k([[0, 2, 1]], [[2, 1, 1]])[0]), 4)
    0.5627
    >>> ndcg_at_k([[0, 0], [1, 0]], [[0, 0], [1, 0]]).tolist()
    [nan, 1.0]
    """
    lv = _as_levels(levels)
    ideal_lv = _as_levels(ideal, "ideal")
    if ideal_lv.shape[0] != lv.shape[0]:
        raise ValueError(
            f"ideal must have one row per question ({lv.shape[0]}), got shape {ideal_lv.shape}"
        )
    k_ = _check_optional_k(k)
    if gain not in GAINS:
        raise ValueError(f"gain must be one of {sorted(GAINS)}, got {gain!r}")
    gain_of = GAINS[gain]
    # Only positive levels gain, so only they need to be in order: negative judged levels
    # followed by 0 padding are fine.
    ideal_cut = np.maximum(ideal_lv[:, :k_], 0)
    if ideal_cut.shape[1] > 1 and np.any(ideal_cut[:, 1:] > ideal_cut[:, :-1]):
        raise ValueError("ideal must be sorted in descending order within each row")
    ranked = np.maximum(lv[:, :k_], 0)
    disc = _discount(max(ranked.shape[1], ideal_cut.shape[1]))
    dcg = gain_of(ranked) @ disc[: ranked.shape[1]]
    idcg = gain_of(ideal_cut) @ disc[: ideal_cut.shape[1]]
    undefined = idcg <= 0
    return _undefined_where(np.divide(dcg, idcg, where=~undefined, out=dcg), undefined)


def average_precision(
    levels: Any, *, n_relevant: Any, relevance_level: int = 1
) -> np.ndarray:
    """Average precision over all relevant items (trec_eval ``map`` for one query).

    .. math:: AP = \\frac{1}{n_{rel}} \\sum_{r : \\ell_r \\ge \\lambda} P@r

    Relevant items that were not retrieved contribute precision 0.

    Parameters
    ----------
    levels, n_relevant, relevance_level
        As in :func:`hit_at_k`.

    Returns
    -------
    ndarray of shape (n_questions,)
        In [0, 1]; NaN where ``n_relevant == 0``.

    Examples
    --------
    Relevant at ranks 1 and 3, three relevant in all: (1/1 + 2/3) / 3 = 0.5556.

    >>> round(float(average_precision([[1, 0, 1, 0]], n_relevant=[3])[0]), 4)
    0.5556
    """
    lv, n_rel, _, rl = _prepared(levels, n_relevant, relevance_level, None, _no_cutoff)
    rel = lv >= rl
    precision_at_rank = np.cumsum(rel, axis=1) / np.arange(1, lv.shape[1] + 1)
    total = np.where(rel, precision_at_rank, 0.0).sum(axis=1)
    undefined = n_rel == 0
    return _undefined_where(np.divide(total, n_rel, where=~undefined, out=total), undefined)


def r_precision(levels: Any, *, n_relevant: Any, relevance_level: int = 1) -> np.ndarray:
    """Precision at rank ``R = n_relevant`` (trec_eval ``Rprec``).

    .. math:: R\\text{-}prec = \\frac{|\\{r \\le R : \\ell_r \\ge \\lambda\\}|}{R}

    When fewer than ``R`` items were retrieved the missing slots count as non-relevant.

    Parameters
    ----------
    levels, n_relevant, relevance_level
        As in :func:`hit_at_k`.

    Returns
    -------
    ndarray of shape (n_questions,)
        In [0, 1]; NaN where ``n_relevant == 0``.

    Examples
    --------
    >>> r_precision([[1, 0, 1, 0], [0, 1, 0, 0]], n_relevant=[2, 5]).tolist()
    [0.5, 0.2]
    """
    lv, n_rel, _, rl = _prepared(levels, n_relevant, relevance_level, None, _no_cutoff)
    out = np.zeros(lv.shape[0], dtype=np.float64)
    # Relevant items in the top min(R, depth): rank R lies beyond the padded depth when the
    # system returned fewer than R items, and those slots are empty.
    last = np.minimum(n_rel, lv.shape[1]).astype(np.intp) - 1
    has = last >= 0
    if np.any(has):
        found = np.cumsum(lv[has] >= rl, axis=1)[np.arange(int(has.sum())), last[has]]
        out[has] = found / n_rel[has]
    return _undefined_where(out, n_rel == 0)


# --------------------------------------------------------------------------- aggregation


def mean_over(values: Any) -> tuple[float, int]:
    """Mean over the questions where a metric is defined, and how many those are.

    .. math:: \\bar x = \\frac{1}{n} \\sum_{i : x_i \\ne \\mathrm{NaN}} x_i

    Parameters
    ----------
    values : array-like of shape (n_questions,)
        Per-question values, NaN where undefined.

    Returns
    -------
    (float, int)
        The mean (NaN when no value is defined) and its denominator ``n``.

    Examples
    --------
    >>> mean_over([1.0, float("nan"), 0.0])
    (0.5, 2)
    """
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"values must be 1-D (one value per question), got shape {arr.shape}")
    defined = ~np.isnan(arr)
    n = int(defined.sum())
    return (float(arr[defined].mean()) if n else float("nan"), n)


# --------------------------------------------------------------------------- convenience


def _check_ks(ks: Any) -> list[int]:
    if isinstance(ks, (int, np.integer)) or ks is None:
        raise ValueError(f"ks must be a non-empty sequence of positive integers, got {ks!r}")
    checked = [_check_k(k) for k in ks]
    if not checked:
        raise ValueError("ks must be a non-empty sequence of positive integers, got []")
    return sorted(set(checked))


def ranking_metrics(
    *,
    levels: Any,
    n_relevant: Any,
    ideal: Any,
    ks: Iterable[int],
    relevance_level: int = 1,
    gain: str = "linear",
) -> dict[str, np.ndarray]:
    """Every ranking metric of the pipeline, per question.

    Returns ``hit@k``, ``precision@k``, ``recall@k``, ``mrr@k`` and ``ndcg@k`` for each ``k``
    in ``ks`` plus ``mrr`` (no cutoff), ``ndcg`` (no cutoff) and ``map``.

    All metrics share one denominator: a question with ``n_relevant == 0`` is NaN everywhere,
    including nDCG (whose graded gains could otherwise be defined below the threshold), so
    that :func:`mean_over` averages every metric over the same questions.

    Parameters
    ----------
    levels : array of shape (n_questions, depth)
        Relevance levels in rank order, padded with 0.
    n_relevant : array of shape (n_questions,)
        Number of items in the qrels with ``level >= relevance_level``.
    ideal : array of shape (n_questions, m)
        All judged levels, sorted descending, padded with 0.
    ks : iterable of int
        Cutoffs, each ``>= 1``.
    relevance_level : int, default 1
        Minimum level that counts as relevant.
    gain : {"linear", "exponential"}, default "linear"
        nDCG gain function.

    Returns
    -------
    dict of str to ndarray of shape (n_questions,)

    Examples
    --------
    >>> m = ranking_metrics(levels=[[0, 1, 0]], n_relevant=[2], ideal=[[1, 1]], ks=[1, 2])
    >>> sorted(m)  # doctest: +NORMALIZE_WHITESPACE
    ['hit@1', 'hit@2', 'map', 'mrr', 'mrr@1', 'mrr@2', 'ndcg', 'ndcg@1', 'ndcg@2',
     'precision@1', 'precision@2', 'recall@1', 'recall@2']
    >>> m["mrr"].tolist(), m["recall@2"].tolist()
    ([0.5], [0.5])
    """
    lv = _as_levels(levels)
    n_rel = _as_n_relevant(n_relevant, lv.shape[0])
    cutoffs = _check_ks(ks)
    rl = _check_relevance_level(relevance_level)
    kernels: dict[str, Callable[[int | None], np.ndarray]] = {
        "hit": lambda k: hit_at_k(lv, n_relevant=n_rel, k=k, relevance_level=rl),  # type: ignore[arg-type]
        "precision": lambda k: precision_at_k(lv, n_relevant=n_rel, k=k, relevance_level=rl),  # type: ignore[arg-type]
        "recall": lambda k: recall_at_k(lv, n_relevant=n_rel, k=k, relevance_level=rl),  # type: ignore[arg-type]
        "mrr": lambda k: reciprocal_rank(lv, n_relevant=n_rel, k=k, relevance_level=rl),
        "ndcg": lambda k: ndcg_at_k(lv, ideal, k=k, gain=gain),
        "map": lambda k: average_precision(lv, n_relevant=n_rel, relevance_level=rl),
    }
    # The kernels' own names (the chunk-ranking scorer declares the measures and calls the kernels
    # itself): the cut ones at every k, then the uncut.
    cut = [f"{name}@{k}" for name in ("hit", "precision", "recall", "mrr", "ndcg") for k in cutoffs]
    out = {name: kernels[name.partition("@")[0]](int(name.partition("@")[2])) for name in cut}
    out.update({name: kernels[name](None) for name in ("mrr", "ndcg", "map")})
    no_relevant = n_rel == 0
    for values in out.values():
        values[no_relevant] = np.nan
    return out
