"""Tune an ANN index's search knob to a recall target (``index.target_recall``).

The knob is ``ef_search`` for HNSW and ``nprobe`` for IVF and LanceDB: an attribute read at search
time, so tuning never rebuilds the index. The search doubles the knob from 1 until
ann_recall@k against exact search on the same vectors reaches the target (or the knob reaches its
largest useful value), then bisects between the last value that missed and the first that hit, so
the chosen value is the smallest that reaches the target (recall grows with the knob in practice;
the curve is reported so a non-monotone step shows). Recall is measured as the ANN report
measures it: with :meth:`search_as_configured` (a missing hit is a miss), each query under its
asker's access filter, k capped at the readable vectors, a query with none readable left out.

Which queries: :func:`tune_held_out` tunes on half of a cell's questions (the first half in the
order of a hash of the question id: stable, independent of the file's order) and measures the
chosen value on the other half, so the recall reported for the choice is not measured on the
queries it was chosen on. :func:`tune` itself tunes on whatever queries it is given.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from rag_bench.errors import ConfigError

KNOBS = {"hnsw": "ef_search", "ivf": "nprobe", "lancedb": "nprobe"}
TUNE_K = 10  # the ann_recall@10: the cutoff the knob is tuned at


@dataclass(frozen=True)
class TunePoint:
    """One knob value tried: its ann_recall@k and the median query latency it costs."""

    value: int
    recall: float
    p50_ms: float


@dataclass(frozen=True)
class TuneResult:
    """The chosen knob value (smallest reaching the target, else the best recall tried) and the curve
    measured on the ``n`` tuning queries; with :func:`tune_held_out`, the chosen value's recall and
    latency on ``held_out_n`` other queries (None when there were too few questions to split)."""

    knob: str
    target: float
    k: int
    chosen: int
    reached: bool
    curve: tuple[TunePoint, ...]
    n: int = 0
    held_out_n: int = 0
    held_out_recall: float | None = None
    held_out_p50_ms: float | None = None
    seconds: float = 0.0

    def point(self) -> TunePoint:
        """The curve's point at the chosen value."""
        return next(p for p in self.curve if p.value == self.chosen)


def check_target(value: Any) -> float | None:
    """Validate ``index.target_recall``: None (no tuning) or a number in (0, 1]."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
        raise ConfigError(f"index.target_recall must be a number in (0, 1] or null, got {value!r} "
                          f"-- fix: e.g. index.target_recall=0.95 (null: no tuning)")
    return float(value)


def knob_of(index: Any) -> str:
    """The knob attribute of ``index`` (ConfigError for an index without one)."""
    family = "lancedb" if index.name.startswith("lancedb") else index.name.split("_")[0]
    if family not in KNOBS:
        raise ConfigError(f"index.target_recall needs an approximate index (hnsw, ivf, lancedb), got "
                          f"index.name={index.name!r} -- fix: drop index.target_recall or pick an ANN index")
    return KNOBS[family]


def _ceiling(index: Any, knob: str) -> int:
    if knob == "nprobe":
        return int(getattr(index, "_nlist_used", 0) or getattr(index, "_partitions", 0) or 1)
    return max(1, int(getattr(index, "n", 1)))



def _measure(index: Any, queries: np.ndarray, exact: np.ndarray, k: int,
             masks: Sequence[np.ndarray | None] | None = None) -> tuple[float, float]:
    """Mean ann_recall@k over the queries with a readable vector, and the median latency (ms)."""
    ms, hits = [], []
    for r in range(queries.shape[0]):
        want = exact[r][exact[r] >= 0]
        if not want.size:  # nothing readable: no recall to measure (as in the ANN report)
            continue
        t0 = time.perf_counter()
        _, ids = index.search_as_configured(queries[r:r + 1], k, None if masks is None else masks[r])
        ms.append((time.perf_counter() - t0) * 1000)
        hits.append(len(set(ids[0].tolist()) & set(want.tolist())) / want.size)
    return (float(np.mean(hits)), float(np.median(ms))) if hits else (1.0, 0.0)


def tune(index: Any, queries: np.ndarray, exact: np.ndarray, *, target: float = 0.95, k: int = TUNE_K,
         masks: Sequence[np.ndarray | None] | None = None) -> TuneResult:
    """Set ``index``'s knob to the smallest value whose ann_recall@k on ``queries`` (each under
    its mask in ``masks``) reaches ``target`` (doubling, then bisection) and return the choice with
    the recall/latency curve. ``exact`` holds each query's exact top-k row ids (a reference index's search)."""
    t_start = time.perf_counter()
    target = check_target(target)  # type: ignore[assignment]
    if target is None:
        raise ConfigError("index.target_recall is null: nothing to tune to -- fix: e.g. index.target_recall=0.95")
    knob = knob_of(index)
    top = _ceiling(index, knob)
    queries = np.ascontiguousarray(queries, dtype=np.float32)
    seen: dict[int, TunePoint] = {}

    def at(value: int) -> TunePoint:
        if value not in seen:
            setattr(index, knob, value)
            recall, p50 = _measure(index, queries, exact, k, masks)
            seen[value] = TunePoint(value, recall, p50)
        return seen[value]

    lo, hi = 0, 1  # lo: largest value known to miss (0 = none), hi: candidate
    while at(hi).recall < target and hi < top:
        lo, hi = hi, min(top, hi * 2)
    reached = at(hi).recall >= target
    if not reached:  # the largest value misses too: keep the best recall tried
        hi = max(seen.values(), key=lambda p: (p.recall, -p.value)).value
    while reached and hi - lo > 1:
        mid = (lo + hi) // 2
        if at(mid).recall >= target:
            hi = mid
        else:
            lo = mid
    setattr(index, knob, hi)
    curve = tuple(seen[v] for v in sorted(seen))
    return TuneResult(knob, float(target), k, hi, reached, curve, n=int(queries.shape[0]),
                      seconds=time.perf_counter() - t_start)


def split_for_tuning(qids: Sequence[str]) -> tuple[list[int], list[int]]:
    """Positions of the tuning half and the held-out half of ``qids``: ordered by a hash of the id
    (stable across runs and file orders), the first ceil(n/2) tune. One question: it tunes, none held out."""
    order = sorted(range(len(qids)), key=lambda i: (hashlib.sha256(str(qids[i]).encode()).hexdigest(), i))
    half = (len(order) + 1) // 2
    return sorted(order[:half]), sorted(order[half:])


def tune_held_out(index: Any, queries: np.ndarray, exact: np.ndarray, qids: Sequence[str], *,
                  target: float, k: int = TUNE_K, masks: Sequence[np.ndarray | None] | None = None) -> TuneResult:
    """:func:`tune` on the tuning half of the questions (:func:`split_for_tuning`), then the chosen
    value's recall and latency measured on the held-out half."""
    t0 = time.perf_counter()
    tuning, held = split_for_tuning(qids)

    def pick(rows: list[int]) -> tuple[np.ndarray, np.ndarray, list[np.ndarray | None] | None]:
        return queries[rows], exact[rows], None if masks is None else [masks[r] for r in rows]

    q, e, m = pick(tuning)
    result = tune(index, q, e, target=target, k=k, masks=m)
    if held:
        q, e, m = pick(held)
        recall, p50 = _measure(index, q, e, k, m)
        result = replace(result, held_out_n=len(held), held_out_recall=recall, held_out_p50_ms=p50)
    return replace(result, seconds=time.perf_counter() - t0)
