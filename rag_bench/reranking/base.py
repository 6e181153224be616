"""Reranker protocol and how a reranked shortlist becomes the cell's final ranking."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from functools import lru_cache
from typing import Any, Protocol

import numpy as np

from rag_bench.components import optional
from rag_bench.domain import Chunk, Question, Ranking
from rag_bench.errors import ConfigError
from rag_bench.retrieval.base import strictly_decreasing


class Reranker(Protocol):
    """Scores each question's shortlist (higher = better); batch in, batch out, same order."""

    depth: int

    def scores(self, questions: Sequence[Question], shortlists: Sequence[Sequence[Chunk]]) -> list[np.ndarray]:
        """One score per shortlist item."""
        ...

    @optional
    def prefetch(self, questions: Sequence[Question], shortlists: Sequence[Sequence[Chunk]]) -> None:
        """Prepare every shortlist in one batched pass before the per-question calls; default: nothing."""
        return None


def prefetch_embeddings(embedder: Any, questions: Sequence[Question], shortlists: Sequence[Sequence[Chunk]]) -> None:
    """Embed every distinct shortlist text and question in one batched pass, so a bi-encoder
    reranker's per-question calls read cached vectors (chunk vectors are index-time work)."""
    embedder.embed_documents(list(dict.fromkeys(c.text for s in shortlists for c in s)))
    embedder.embed_queries(list(dict.fromkeys(q.question for q in questions)))


@lru_cache(maxsize=1)  # one per process: it lists the loaded BLAS libraries once (~2 ms); limiting is then ~20 us
def _blas() -> Any:
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:  # scikit-learn's dependency, so always there with ours; without it nothing is limited
        return None
    return ThreadpoolController().select(user_api="blas")


def one_blas_thread() -> contextlib.AbstractContextManager[Any]:
    """numpy's BLAS on one thread while the block runs: for the many small products of a
    reranker (a shortlist's 50 x 50 Gram matrix). OpenBLAS splits such a product over its threads,
    which then spin waiting for the next one; in a sweep's process that cost ~15x the product's own
    CPU time (MMR over a 30-cell squad2-normans grid: 1.87 s of CPU for 1,248 shortlists, 0.13 s
    on one thread). Every element of a product is one thread's dot product either way: the same
    floats."""
    blas = _blas()
    return contextlib.nullcontext() if blas is None else blas.limit(limits=1)


def check_depth(depth: object) -> int:
    """Rerank depth must be a positive integer."""
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise ConfigError(f"reranker.depth must be an integer >= 1, got {depth!r} -- fix: reranker.depth=20")
    return depth


def apply_rerank(ranking: Ranking, scores: np.ndarray) -> Ranking:
    """Reorder the head of ``ranking`` (``len(scores)`` items) by ``scores``; keep the tail.

    Head order: score descending, then original rank. The tail keeps retrieval order with scores
    placed below the head's lowest (``min - 1 - i``), so the run stays strictly decreasing.
    """
    n = len(scores)
    head = np.asarray(ranking.indices[:n])
    order = np.lexsort((np.arange(n), -np.asarray(scores, dtype=np.float64)))
    head_scores = np.asarray(scores, dtype=np.float64)[order]
    tail = ranking.indices[n:]
    floor = float(head_scores.min()) if n else 0.0
    all_scores = np.concatenate([head_scores, floor - 1 - np.arange(len(tail), dtype=np.float64)])
    return Ranking(ranking.qid, tuple(int(i) for i in head[order]) + tuple(tail),
                   tuple(strictly_decreasing(all_scores).tolist()))
