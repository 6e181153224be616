"""Maximal marginal relevance: trade relevance to the question against redundancy with picks so far."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from rag_bench.domain import Chunk, Question
from rag_bench.errors import ConfigError
from rag_bench.reranking.base import check_depth, one_blas_thread, prefetch_embeddings


def mmr_order(query: np.ndarray, docs: np.ndarray, lam: float) -> list[int]:
    """Greedy MMR selection order of ``docs`` rows (all normalised).

    Next pick = argmax ``lam * sim(q, d) - (1 - lam) * max_{s picked} sim(d, s)``; ties by row.

    >>> q = np.array([1.0, 0.0]); d = np.array([[1.0, 0.0], [1.0, 0.0], [0.6, 0.8]])
    >>> mmr_order(q, d, 0.3)
    [0, 2, 1]
    """
    rel = docs @ query
    sim = docs @ docs.T
    n = len(docs)
    # The redundancy of every row against the picks so far, kept as a running max (one vector
    # update per pick instead of re-slicing ``sim`` for the picks each step: O(n) per step, the same
    # values, so the same order); picked rows are masked out of the argmax. Per step five numpy
    # calls on n values (the relevance term computed once, ``sim``'s columns read as contiguous
    # rows, the running max updated in place): the same arithmetic in the same dtypes as written
    # out in full, ~1.5x faster at depth 10-50 (172 vs 264 us a question at 50, 384 dims, 208 random
    # questions, best of 5, on a loaded 2-core machine).
    a = lam * rel
    c = 1 - lam
    columns = np.ascontiguousarray(sim.T)  # columns[j] is sim[:, j]
    red = np.zeros(n, dtype=np.result_type(rel, sim))
    val = np.empty(n, dtype=np.result_type(a, c * red))
    dead = np.zeros(n, dtype=bool)
    picked: list[int] = []
    for step in range(n):
        np.subtract(a, c * red, out=val)
        val[dead] = -np.inf
        best = int(val.argmax())  # argmax takes the first max: ties by row
        if dead[best]:  # every live value is -inf (a picked row came first): the first live row, as the slice did
            best = int(np.flatnonzero(~dead)[0])
        picked.append(best)
        dead[best] = True
        if step == 0:
            red = columns[best].copy()
        else:
            np.maximum(red, columns[best], out=red)
    return picked


class MmrReranker:
    """Parameters
    ----------
    lambda_:
        1.0 = pure relevance (dense rerank), 0.0 = pure diversity. Config key ``lambda_``.
    depth:
        Shortlist size.
    """

    def __init__(self, embedder: Any = None, lambda_: float = 0.7, depth: int = 20) -> None:
        if not (isinstance(lambda_, (int, float)) and 0 <= lambda_ <= 1):
            raise ConfigError(f"reranker.lambda_ must be in [0, 1], got {lambda_!r} -- fix: reranker.lambda_=0.7")
        self.embedder, self.lam, self.depth = embedder, float(lambda_), check_depth(depth)

    def prefetch(self, questions: Sequence[Question], shortlists: Sequence[Sequence[Chunk]]) -> None:
        """Embed all shortlists and questions in one batched pass (:func:`prefetch_embeddings`)."""
        prefetch_embeddings(self.embedder, questions, shortlists)

    def scores(self, questions: Sequence[Question], shortlists: Sequence[Sequence[Chunk]]) -> list[np.ndarray]:
        """Score = 1 / (1 + MMR selection position): earlier pick, higher score."""
        qv = self.embedder.embed_queries([q.question for q in questions])
        out = []
        with one_blas_thread():  # a Gram matrix per shortlist: small products (one_blas_thread)
            for i, s in enumerate(shortlists):
                if not s:
                    out.append(np.zeros(0))
                    continue
                dv = self.embedder.embed_documents([c.text for c in s])
                order = mmr_order(qv[i], dv, self.lam)
                sc = np.empty(len(s))
                sc[order] = 1.0 / (1.0 + np.arange(len(s)))
                out.append(sc)
        return out
