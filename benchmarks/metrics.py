"""Benchmark: rag_bench ranking metrics vs pytrec_eval on the same dict input.

Builds a seeded synthetic run (10,000 questions x 100 results, scores rounded to 4 decimals so
that ties occur and the docno tie-break is exercised) with qrels of graded levels, then times,
best of 3:

* pytrec_eval: ``RelevanceEvaluator(qrels, measures).evaluate(run)``;
* rag_bench end to end from the same dicts: ``trec.evaluate`` (ordering, joining, kernels,
  per-query dicts);
* the rag_bench kernels alone on prebuilt arrays (``ranking_metrics``).

It also checks that both engines give the same per-query values.

Run: ``PYTHONPATH=. .venv/bin/python benchmarks/metrics.py``
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from typing import TypeVar

import numpy as np
import pytrec_eval

from rag_bench.metrics.ranking import ranking_metrics
from rag_bench.metrics.trec import evaluate, to_arrays

N_QUESTIONS = 10_000
DEPTH = 100
N_JUDGED_RETRIEVED = 15  # judged documents that the run retrieves
N_JUDGED_MISSED = 10  # judged documents that it does not
CORPUS = 1_000_000
KS = (1, 3, 5, 10, 20)
REPEATS = 3
SEED = 20240601

T = TypeVar("T")


def build_data(seed: int = SEED) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    """Seeded synthetic qrels ``{qid: {docno: level}}`` and run ``{qid: {docno: score}}``."""
    rng = np.random.default_rng(seed)
    n_docs = DEPTH + N_JUDGED_MISSED
    docs = np.argsort(rng.random((N_QUESTIONS, CORPUS // 1000)), axis=1)[:, :n_docs]
    docs = docs * 1000 + rng.integers(0, 1000, size=docs.shape)  # distinct within a row
    scores = np.round(rng.random((N_QUESTIONS, DEPTH)), 4)
    levels = rng.integers(0, 4, size=(N_QUESTIONS, N_JUDGED_RETRIEVED + N_JUDGED_MISSED))
    judged_cols = np.concatenate(
        [
            np.argsort(rng.random((N_QUESTIONS, DEPTH)), axis=1)[:, :N_JUDGED_RETRIEVED],
            np.broadcast_to(np.arange(DEPTH, n_docs), (N_QUESTIONS, N_JUDGED_MISSED)),
        ],
        axis=1,
    )
    judged_docs = np.take_along_axis(docs, judged_cols, axis=1)
    run: dict[str, dict[str, float]] = {}
    qrels: dict[str, dict[str, int]] = {}
    for i, (row_docs, row_scores, row_judged, row_levels) in enumerate(
        zip(docs.tolist(), scores.tolist(), judged_docs.tolist(), levels.tolist())
    ):
        qid = f"q{i:05d}"
        run[qid] = {f"doc{d}": s for d, s in zip(row_docs[:DEPTH], row_scores)}
        qrels[qid] = {f"doc{d}": lv for d, lv in zip(row_judged, row_levels)}
    return qrels, run


def best_of(fn: Callable[[], T], repeats: int = REPEATS) -> tuple[float, T]:
    """Best wall time of ``repeats`` calls, and the last result.

    The garbage collector is paused while timing, as ``timeit`` does, so that a collection
    triggered by one engine's allocations is not billed to whichever runs next.
    """
    best = float("inf")
    for _ in range(repeats):
        gc.collect()
        gc.disable()
        try:
            start = time.perf_counter()
            result = fn()
            best = min(best, time.perf_counter() - start)
        finally:
            gc.enable()
    return best, result


def main() -> None:
    """Build the data, time both engines, compare their values and print the figures."""
    t0 = time.perf_counter()
    qrels, run = build_data()
    print(f"data: {N_QUESTIONS} questions x {DEPTH} results, "
          f"{sum(map(len, qrels.values()))} judgments "
          f"(built in {time.perf_counter() - t0:.1f} s)")

    trec_names = ["map", "recip_rank"] + [
        f"{m}_{k}" for m in ("P", "recall", "success", "ndcg_cut") for k in KS
    ]
    ks = ",".join(map(str, KS))
    our_measures = ["map", "recip_rank"] + [
        f"{m}.{ks}" for m in ("P", "recall", "success", "ndcg_cut")
    ]

    t_pytrec, theirs = best_of(
        lambda: pytrec_eval.RelevanceEvaluator(qrels, set(trec_names)).evaluate(run)
    )
    t_ours, (ours, _) = best_of(lambda: evaluate(qrels, run, measures=our_measures))
    arrays = to_arrays(qrels, run)
    t_join, _ = best_of(lambda: to_arrays(qrels, run))
    t_kernel, _ = best_of(
        lambda: ranking_metrics(
            levels=arrays.levels, n_relevant=arrays.n_relevant, ideal=arrays.ideal, ks=KS
        )
    )

    assert theirs.keys() == ours.keys(), "the two engines evaluated different topics"
    diff = max(abs(theirs[q][m] - ours[q][m]) for q in theirs for m in trec_names)

    print(f"measures: {len(trec_names)} per question ({', '.join(trec_names[:4])}, ...)")
    print(f"pytrec_eval  RelevanceEvaluator(...).evaluate(run): {t_pytrec * 1e3:8.1f} ms")
    print(f"rag_bench    trec.evaluate(qrels, run)            : {t_ours * 1e3:8.1f} ms"
          f"   (of which to_arrays {t_join * 1e3:.1f} ms)")
    print(f"rag_bench    ranking_metrics on prebuilt arrays    : {t_kernel * 1e3:8.1f} ms")
    print(f"end-to-end speed-up (pytrec_eval / rag_bench): {t_pytrec / t_ours:.2f}x")
    print(f"max |pytrec_eval - rag_bench| over {len(theirs) * len(trec_names)} values: {diff:.3g}")


if __name__ == "__main__":
    main()
