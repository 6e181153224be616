"""ANN vs exact (metrics.json ``ann``): an approximate index measured against exact search on the
same vectors with the same access filter, in the same cell, and its tuning to ``index.target_recall``.

Not a per-question scorer (no ``SCORER``): its figures describe an index, computed once per index
and question set from the two indexes' searches (:func:`report`), not from a cell's records.

* :func:`report` measures the index *as configured* (``search_as_configured``), never the wider
  search retrieval falls back to: ``ann_recall@k`` = mean over questions of |ANN top-k ∩ exact
  top-k| / k, k capped at the chunks the asker may read, a hit the configured search did not
  return counting as a miss; the latencies are of that one search. ``underfill_fallbacks`` counts
  the questions whose top-max(ks) it left short (retrieval fills those by a wider or exact search).
* :func:`tune_index` sets the index's knob (``ef_search``, ``nprobe``) to the smallest value
  whose ann_recall@10 reaches ``index.target_recall`` on the *tuning half* of the cell's questions
  (:func:`rag_bench.indexing.tuning.split_for_tuning`) and measures it on the *held-out half*;
  :func:`tuning_figures` are what the ``ann`` section adds: the choice, the curve (value → recall,
  p50 latency) and ``held_out_recall@10``, the one recall of the choice not measured on the
  questions it was chosen on. The cell's own ``ann_recall@k`` and ``ann_p50_ms`` are measured on
  all its questions at the chosen value (the tuning half included: ``tuned_on`` says so).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from rag_bench.indexing.tuning import TUNE_K, TuneResult, tune_held_out
from rag_bench.metrics import measures
from rag_bench.metrics.measures import Measure
from rag_bench.stages import capability

(ANN_RECALL, ANN_P50, ANN_P95, EXACT_P50, EXACT_P95, BUILD_S, EXACT_BUILD_S, INDEX_BYTES, EXACT_INDEX_BYTES,
 UNDERFILL) = measures.ANN

TARGET, TUNED_VALUE, TUNE_RECALL, HELD_OUT_RECALL, TUNED_P50, TUNE_S, TUNE_N, HELD_OUT_N = measures.register(
    Measure("target_recall", "ann", None, "value", description="index.target_recall the search knob was tuned to"),
    Measure("tuned_value", "ann", None, "value",
            description="the knob value chosen (ef_search or nprobe: tuned_knob): the smallest reaching the target"),
    Measure("tune_recall", "ann", True, "value", "required",
            description="ann_recall@k at the chosen value on the tuning half of the questions (chosen on them)"),
    Measure("held_out_recall", "ann", True, "value", "required",
            description="ann_recall@k at the chosen value on the held-out half (not used to choose it)"),
    Measure("tuned_p50_ms", "ann", False, "value",
            description="median ANN query latency at the chosen value on the tuning half"),
    Measure("tune_s", "ann", False, "value", description="seconds spent tuning the knob"),
    Measure("tune_questions", "ann", None, "value", description="questions the knob was tuned on"),
    Measure("held_out_questions", "ann", None, "value", description="questions held out to check the choice"),
)
TUNED_ON = ("the tuning half of the cell's questions (ordered by a hash of the question id); held_out_recall "
            "is on the other half, ann_recall on all of them")


def report(*, index: Any, reference: Any, query_vectors: np.ndarray, masks: Sequence[np.ndarray | None],
           ks: Sequence[int]) -> dict[str, Any]:
    """ANN vs exact on the same vectors, each question under its mask: recall@k per k, p50/p95
    latencies of both searches, build times, bytes, underfilled questions (module docstring).
    ``index`` and ``reference`` are built over the same vectors (``reference`` is ``index`` for a
    flat index: recall 1)."""
    ann = capability(index, "index", "search_as_configured")
    exact = capability(reference, "index", "search_as_configured")
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
    out: dict[str, Any] = {ANN_RECALL.at(k).name: float(np.mean(v)) if v else None for k, v in recalls.items()}
    out.update({
        "index": index.name, ANN_P50.name: float(np.percentile(ann_ms, 50)),
        ANN_P95.name: float(np.percentile(ann_ms, 95)), EXACT_P50.name: float(np.percentile(exact_ms, 50)),
        EXACT_P95.name: float(np.percentile(exact_ms, 95)), BUILD_S.name: index.build_s,
        EXACT_BUILD_S.name: reference.build_s, INDEX_BYTES.name: index.nbytes(),
        EXACT_INDEX_BYTES.name: reference.nbytes(), UNDERFILL.name: short,
    })
    return out


def probe_report(probe: Any, ks: Sequence[int]) -> dict[str, Any]:
    """:func:`report` of a retriever's :class:`~rag_bench.retrieval.base.AnnProbe` (a flat index
    is its own reference: recall 1)."""
    return report(index=probe.index, reference=probe.reference or probe.index,
                  query_vectors=probe.query_vectors, masks=probe.masks, ks=ks)


def tune_index(*, index: Any, reference: Any, query_vectors: np.ndarray, masks: Sequence[np.ndarray | None],
               qids: Sequence[str]) -> TuneResult | None:
    """Tune ``index``'s knob to its ``target_recall`` on half the questions, checked on the other
    half (module docstring), the exact top-10 taken from ``reference``; None when the index has no
    target or is itself exact (``reference`` None). Leaves the knob at the chosen value."""
    target = getattr(index, "target_recall", None)
    if target is None or reference is None or not len(qids):
        return None
    search = capability(reference, "index", "search_as_configured")
    exact = np.vstack([search(query_vectors[r:r + 1], TUNE_K, m)[1]
                       for r, m in enumerate(masks)])
    return tune_held_out(index, np.ascontiguousarray(query_vectors, dtype=np.float32), exact, qids,
                         target=float(target), k=TUNE_K, masks=list(masks))


def tuning_figures(result: TuneResult) -> dict[str, Any]:
    """What tuning adds to the ``ann`` section: the numbers under their measures' names (so MLflow
    logs them as ``ann/...`` metrics), plus ``tuned_knob``, ``tuned_reached``, ``tuned_on`` and
    ``tune_curve`` (value, recall, p50_ms per value tried, by value)."""
    point = result.point()
    return {
        TARGET.name: result.target, "tuned_knob": result.knob, TUNED_VALUE.name: result.chosen,
        "tuned_reached": result.reached, TUNE_RECALL.at(result.k).name: point.recall,
        HELD_OUT_RECALL.at(result.k).name: result.held_out_recall, TUNED_P50.name: point.p50_ms,
        TUNE_S.name: round(result.seconds, 6), TUNE_N.name: result.n, HELD_OUT_N.name: result.held_out_n,
        "tuned_on": TUNED_ON if result.held_out_n else "all the cell's questions (too few to hold any out)",
        "tune_curve": [{"value": p.value, "recall": p.recall, "p50_ms": p.p50_ms} for p in result.curve],
    }
