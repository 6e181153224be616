"""Tune an ANN index's search knob to a recall target (``index.target_recall``).

The knob is ``ef_search`` for HNSW and ``nprobe`` for IVF and LanceDB: an attribute read at search
time, so tuning never rebuilds the index. The search doubles the knob from 1 until
ann_recall@k against exact search on the same vectors reaches the target (or the knob reaches its
largest useful value), then bisects between the last value that missed and the first that hit, so
the chosen value is the smallest that reaches the target (recall grows with the knob in practice;
the curve is reported so a non-monotone step shows). Recall is measured with
:meth:`search_as_configured` (a missing hit is a miss) on the queries given: the caller decides
whether they are the cell's own questions or a held-out sample.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from rag_bench.errors import ConfigError
from rag_bench.indexing.base import _exact

KNOBS = {"hnsw": "ef_search", "ivf": "nprobe", "lancedb": "nprobe"}


@dataclass(frozen=True)
class TunePoint:
    """One knob value tried: its ann_recall@k and the median query latency it costs."""

    value: int
    recall: float
    p50_ms: float


@dataclass(frozen=True)
class TuneResult:
    """The chosen knob value (smallest reaching the target, else the largest tried) and the curve."""

    knob: str
    target: float
    k: int
    chosen: int
    reached: bool
    curve: tuple[TunePoint, ...]

    def point(self) -> TunePoint:
        return next(p for p in self.curve if p.value == self.chosen)

    def as_metrics(self) -> dict[str, Any]:
        p = self.point()
        return {"knob": self.knob, "target_recall": self.target, "k": self.k, "chosen": self.chosen,
                "reached": self.reached, f"ann_recall@{self.k}": p.recall, "p50_ms": p.p50_ms,
                "curve": [{"value": c.value, "recall": c.recall, "p50_ms": c.p50_ms} for c in self.curve]}


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


def _measure(index: Any, queries: np.ndarray, exact: np.ndarray, k: int) -> tuple[float, float]:
    ms, hits = [], []
    for r in range(queries.shape[0]):
        t0 = time.perf_counter()
        _, ids = index.search_as_configured(queries[r:r + 1], k)
        ms.append((time.perf_counter() - t0) * 1000)
        want = exact[r][exact[r] >= 0]
        hits.append(len(set(ids[0].tolist()) & set(want.tolist())) / max(1, want.size))
    return float(np.mean(hits)), float(np.median(ms))


def tune(index: Any, vectors: np.ndarray, queries: np.ndarray, target: float = 0.95, k: int = 10) -> TuneResult:
    """Set ``index``'s knob to the smallest value whose ann_recall@k on ``queries`` reaches
    ``target`` (doubling, then bisection) and return the choice with the recall/latency curve.
    ``index`` must be built over ``vectors``."""
    if isinstance(target, bool) or not isinstance(target, (int, float)) or not 0 < target <= 1:
        raise ConfigError(f"index.target_recall must be a number in (0, 1], got {target!r} "
                          f"-- fix: e.g. index.target_recall=0.95")
    knob = knob_of(index)
    top = _ceiling(index, knob)
    queries = np.ascontiguousarray(queries, dtype=np.float32)
    _, exact = _exact(np.ascontiguousarray(vectors, dtype=np.float32), queries, k, None)
    seen: dict[int, TunePoint] = {}

    def at(value: int) -> TunePoint:
        if value not in seen:
            setattr(index, knob, value)
            recall, p50 = _measure(index, queries, exact, k)
            seen[value] = TunePoint(value, recall, p50)
        return seen[value]

    lo, hi = 0, 1  # lo: largest value known to miss (0 = none), hi: candidate
    while at(hi).recall < target and hi < top:
        lo, hi = hi, min(top, hi * 2)
    reached = at(hi).recall >= target
    while reached and hi - lo > 1:
        mid = (lo + hi) // 2
        if at(mid).recall >= target:
            hi = mid
        else:
            lo = mid
    setattr(index, knob, hi)
    curve = tuple(seen[v] for v in sorted(seen))
    return TuneResult(knob, float(target), k, hi, reached, curve)
