"""Maximal marginal relevance: trade relevance to the question against redundancy with picks so far."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from rag_bench.errors import ConfigError
from rag_bench.records import Chunk, Question
from rag_bench.reranking.base import check_depth, prefetch_embeddings


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
    # values, so the same order); picked rows are masked out of the argmax.
    red = np.zeros(n, dtype=np.result_type(rel, sim))
    alive = np.ones(n, dtype=bool)
    picked: list[int] = []
    for step in range(n):
        val = lam * rel - (1 - lam) * red
        val[~alive] = -np.inf
        best = int(np.argmax(val))  # argmax takes the first max: ties by row
        if not alive[best]:  # every live value is -inf (a picked row came first): the first live row, as the slice did
            best = int(np.flatnonzero(alive)[0])
        picked.append(best)
        alive[best] = False
        red = sim[:, best] if step == 0 else np.maximum(red, sim[:, best])
    return picked


def mmr_orders(queries: Sequence[np.ndarray], docs: Sequence[np.ndarray], lam: float) -> list[list[int]]:
    """:func:`mmr_order` of every (query, docs) pair, the greedy steps taken for all pairs at once.

    The same orders as one :func:`mmr_order` call per pair, bit for bit: each pair's relevance and
    similarities are computed by the same products, per pair; only the elementwise steps of the
    selection run on a padded (pairs x rows) array, and elementwise arithmetic does not depend on
    its neighbours. Padding rows are never alive, so they are neither picked nor change a tie.
    One pair's order costs ~0.3-0.5 ms (50 steps of small numpy calls); 208 pairs at once cost
    about what one does (the squad grid's warm sweep spent ~1/5 of its time in per-pair MMR).
    """
    sizes = [len(d) for d in docs]
    if not sizes:
        return []
    width = max(sizes)
    pairs = len(sizes)
    rels, sims = [], []
    for q, d in zip(queries, docs):
        rels.append(d @ q)
        sims.append(d @ d.T)
    dtypes = {np.result_type(r, m) for r, m in zip(rels, sims)}
    if len(dtypes) > 1:  # one padded array would compute some pairs in a wider type than alone
        return [mmr_order(q, d, lam) for q, d in zip(queries, docs)]
    dtype = dtypes.pop()
    rel = np.zeros((pairs, width), dtype=dtype)
    sim_t = np.zeros((pairs, width, width), dtype=dtype)  # sim_t[p, j] = column j of pair p's similarities
    alive = np.zeros((pairs, width), dtype=bool)
    for p, (r, m) in enumerate(zip(rels, sims)):
        n = len(r)
        rel[p, :n] = r
        sim_t[p, :n, :n] = m.T
        alive[p, :n] = True
    rows = np.arange(pairs)
    red = np.zeros((pairs, width), dtype=dtype)
    picks = np.empty((pairs, width), dtype=np.int64)
    for step in range(width):
        val = lam * rel - (1 - lam) * red
        val[~alive] = -np.inf
        best = np.argmax(val, axis=1)  # the first max of each row: ties by row, as mmr_order
        dead = ~alive[rows, best]
        if dead.any():  # a row's live values all -inf: its first live row, as mmr_order (none left: ignored)
            best[dead] = np.argmax(alive[dead], axis=1)
        picks[:, step] = best
        alive[rows, best] = False
        column = sim_t[rows, best]
        red = column if step == 0 else np.maximum(red, column)
    return [picks[p, :n].tolist() for p, n in enumerate(sizes)]


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
        # The orders the last prefetch computed, by (question, shortlist texts): the per-question
        # calls that follow read them. Replaced by each prefetch, so it holds one stage's questions.
        self._orders: dict[tuple[str, tuple[str, ...]], list[int]] = {}

    def prefetch(self, questions: Sequence[Question], shortlists: Sequence[Sequence[Chunk]]) -> None:
        """Embed all shortlists and questions in one batched pass (:func:`prefetch_embeddings`), then
        every question's MMR order at once (:func:`mmr_orders`); :meth:`scores` reads them.

        The vectors are asked for as :meth:`scores` asks, one question at a time, so they are the
        ones it would get with any cache setting (an embedder without a cache encodes each call's
        batch: padding can move the last bits), and the embedder's counts stay what they were."""
        prefetch_embeddings(self.embedder, questions, shortlists)
        orders: dict[tuple[str, tuple[str, ...]], list[int]] = {}
        keys, qvs, dvs = [], [], []
        for q, s in zip(questions, shortlists):
            qv = self.embedder.embed_queries([q.question])[0]
            if not s:
                orders[(q.question, ())] = []
                continue
            texts = tuple(c.text for c in s)
            keys.append((q.question, texts))
            qvs.append(qv)
            dvs.append(self.embedder.embed_documents(list(texts)))
        orders.update(zip(keys, mmr_orders(qvs, dvs, self.lam)))
        self._orders = orders

    def scores(self, questions: Sequence[Question], shortlists: Sequence[Sequence[Chunk]]) -> list[np.ndarray]:
        """Score = 1 / (1 + MMR selection position): earlier pick, higher score."""
        keys = [(q.question, tuple(c.text for c in s)) for q, s in zip(questions, shortlists)]
        if all(k in self._orders for k in keys):
            orders = [self._orders[k] for k in keys]
        else:  # not prefetched: each question alone, as before
            qv = self.embedder.embed_queries([q.question for q in questions])
            orders = [mmr_order(qv[i], self.embedder.embed_documents([c.text for c in s]), self.lam) if s else []
                      for i, s in enumerate(shortlists)]
        out = []
        for s, order in zip(shortlists, orders):
            sc = np.empty(len(s)) if s else np.zeros(0)
            sc[order] = 1.0 / (1.0 + np.arange(len(s)))
            out.append(sc)
        return out
