"""ANN vs exact, measured where the index is: an approximate index against exact search on the same
vectors with the same access filter, and its tuning to ``index.target_recall``.

* :func:`report` measures the index *as configured* (``search_as_configured``), never the wider
  search retrieval falls back to: recall@k = mean over questions of |ANN top-k ∩ exact top-k| / k,
  k capped at the chunks the asker may read, a hit the configured search did not return counting
  as a miss; the latencies are of that one search. ``underfill`` counts the questions whose
  top-max(ks) it left short (retrieval fills those by a wider or exact search).
* :func:`tune_index` sets the index's knob (``ef_search``, ``nprobe``) to the smallest value whose
  recall@10 reaches ``index.target_recall`` on the *tuning half* of the questions
  (:func:`rag_bench.indexing.tuning.split_for_tuning`) and measures it on the *held-out half*.

The pipeline runs both on a retriever's :class:`~rag_bench.retrieval.base.AnnProbe` (its index laid
open) and hands the :class:`AnnReport` to the run; the evaluation's ``ann`` scorer reports it.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rag_bench.components import capability
from rag_bench.indexing.base import VectorIndex
from rag_bench.indexing.tuning import TUNE_K, TuneResult, tune_held_out


@dataclass(frozen=True)
class AnnReport:
    """An approximate index against exact search (module docstring): recall at each k (None: no
    question had an exact hit), p50/p95 latencies of both searches, build times, sizes, underfilled
    questions, and the tuning to a recall target (None: no target, or an exact index)."""

    index: str
    recall: dict[int, float | None]
    ann_p50_ms: float
    ann_p95_ms: float
    exact_p50_ms: float
    exact_p95_ms: float
    build_s: float
    exact_build_s: float
    index_bytes: int
    exact_index_bytes: int
    underfill: int
    tuning: TuneResult | None = None


def report(*, index: Any, reference: Any, query_vectors: np.ndarray, masks: Sequence[np.ndarray | None],
           ks: Sequence[int], tuning: TuneResult | None = None) -> AnnReport:
    """ANN vs exact on the same vectors, each question under its mask (module docstring).
    ``index`` and ``reference`` are built over the same vectors (``reference`` is ``index`` for a
    flat index: recall 1)."""
    ann = capability(index, VectorIndex, "search_as_configured")
    exact = capability(reference, VectorIndex, "search_as_configured")
    kmax = max(ks)
    recalls: dict[int, list[float]] = {k: [] for k in ks}
    ann_ms, exact_ms, short = [], [], 0
    for r, mask in enumerate(masks):
        t0 = time.perf_counter()
        _, a = ann(query_vectors[r:r + 1], kmax, mask)
        t1 = time.perf_counter()
        _, e = exact(query_vectors[r:r + 1], kmax, mask)
        t2 = time.perf_counter()
        ann_ms.append((t1 - t0) * 1000)
        exact_ms.append((t2 - t1) * 1000)
        short += int((a[0] >= 0).sum() < (e[0] >= 0).sum())
        for k in ks:
            want = e[0, :k][e[0, :k] >= 0]
            if want.size:
                got = a[0, :k][a[0, :k] >= 0]
                recalls[k].append(len(set(got.tolist()) & set(want.tolist())) / want.size)
    return AnnReport(
        index=index.name, recall={k: float(np.mean(v)) if v else None for k, v in recalls.items()},
        ann_p50_ms=float(np.percentile(ann_ms, 50)), ann_p95_ms=float(np.percentile(ann_ms, 95)),
        exact_p50_ms=float(np.percentile(exact_ms, 50)), exact_p95_ms=float(np.percentile(exact_ms, 95)),
        build_s=index.build_s, exact_build_s=reference.build_s, index_bytes=index.nbytes(),
        exact_index_bytes=reference.nbytes(), underfill=short, tuning=tuning)


def probe_report(probe: Any, ks: Sequence[int], tuning: TuneResult | None = None) -> AnnReport:
    """:func:`report` of a retriever's :class:`~rag_bench.retrieval.base.AnnProbe` (a flat index
    is its own reference: recall 1)."""
    return report(index=probe.index, reference=probe.reference or probe.index, query_vectors=probe.query_vectors,
                  masks=probe.masks, ks=ks, tuning=tuning)


def tune_index(*, index: Any, reference: Any, query_vectors: np.ndarray, masks: Sequence[np.ndarray | None],
               qids: Sequence[str]) -> TuneResult | None:
    """Tune ``index``'s knob to its ``target_recall`` on half the questions, checked on the other
    half (module docstring), the exact top-10 taken from ``reference``; None when the index has no
    target or is itself exact (``reference`` None). Leaves the knob at the chosen value."""
    target = getattr(index, "target_recall", None)
    if target is None or reference is None or not len(qids):
        return None
    search = capability(reference, VectorIndex, "search_as_configured")
    exact = np.vstack([search(query_vectors[r:r + 1], TUNE_K, m)[1] for r, m in enumerate(masks)])
    return tune_held_out(index, np.ascontiguousarray(query_vectors, dtype=np.float32), exact, qids,
                         target=float(target), k=TUNE_K, masks=list(masks))


def tune_probe(probe: Any) -> TuneResult | None:
    """:func:`tune_index` of a retriever's :class:`~rag_bench.retrieval.base.AnnProbe`."""
    return tune_index(index=probe.index, reference=probe.reference, query_vectors=probe.query_vectors,
                      masks=probe.masks, qids=probe.qids)
