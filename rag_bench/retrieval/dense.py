"""Dense retrieval: embed chunks and questions, search a FAISS index with the access filter inside.

Every non-flat index is measured against an exact flat index over the same vectors, with the
same filter, in the same cell (the retriever lays its indexes open with :meth:`DenseRetriever.ann_probe`;
:mod:`rag_bench.evaluation.scorers.ann` measures them), as configured: retrieval fills a ranking
the index leaves short with a wider or exact search, the ANN report never does.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from rag_bench import memo
from rag_bench.domain import Chunk, Question, Ranking
from rag_bench.indexing.base import VectorIndex
from rag_bench.indexing.flat import FlatIndex
from rag_bench.retrieval.base import AccessFilter, AnnProbe, strictly_decreasing


def _group_by_asker(questions: Sequence[Question], access: AccessFilter) -> dict[object, list[int]]:
    # Questions whose askers have the same access rights share one mask (structural key).
    groups: dict[object, list[int]] = {}
    for i, q in enumerate(questions):
        groups.setdefault(q.asker.key if q.asker else None, []).append(i)
    return groups


def _tie_break(scores: np.ndarray, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    # Same order rule as BM25: score descending, then chunk index ascending.
    keep = ids >= 0
    s, i = scores[keep].astype(np.float64), ids[keep]
    order = np.lexsort((i, -s))
    return i[order], s[order]


class DenseRetriever:
    """Parameters (injected by the pipeline from the ``embedder`` and ``index`` groups)
    ----------
    embedder:
        Object with ``embed_documents`` / ``embed_queries`` returning normalised vectors.
    index:
        A fresh :class:`~rag_bench.indexing.base.VectorIndex` to build.
    shared:
        The runner's :class:`~rag_bench.memo.SharedWork`: vectors and built indexes are shared
        with other cells through it (None: nothing is shared).
    """

    def __init__(self, embedder: Any = None, index: VectorIndex | None = None,
                 shared: memo.SharedWork | None = None) -> None:
        self.embedder = embedder
        self.index: VectorIndex = index if index is not None else FlatIndex()
        self.exact: VectorIndex | None = None
        self.shared = shared
        self.latency_ms: list[float] = []

    def fit(self, chunks: Sequence[Chunk]) -> None:
        """Embed the chunks (through the cache) and build the index (plus flat for reference).

        Indexes built earlier in this process over the same vectors with the same parameters (a
        dense and a hybrid cell over one chunking) are reused, not rebuilt.
        """
        texts = [c.text for c in chunks]
        ident = getattr(self.embedder, "identity", None)  # Embedder protocol: sharing needs an identity
        work = self.shared
        vkey = memo.key(ident, getattr(self.embedder, "document_prefix", None), memo.digest(texts)) \
            if ident and work is not None else None

        def built(index: VectorIndex) -> VectorIndex:
            index.build(work.get_or("vectors", vkey, lambda: self.embedder.embed_documents(texts))
                        if work is not None and vkey else self.embedder.embed_documents(texts))
            return index

        def shared(index: VectorIndex) -> VectorIndex:
            if work is None or vkey is None:
                return built(index)
            return work.get_or("faiss", memo.key(vkey, type(index).__name__, index.params()), lambda: built(index))

        self.index = shared(self.index)
        self.exact = shared(FlatIndex()) if self.index.name != "flat" else None

    def query_vectors(self, questions: Sequence[Question]) -> np.ndarray:
        """Normalised question vectors (cached)."""
        return self.embedder.embed_queries([q.question for q in questions])

    def search(self, questions: Sequence[Question], depth: int, access: AccessFilter) -> list[Ranking]:
        """Top-``depth`` readable chunks per question; per-query latency recorded."""
        qv = self.query_vectors(questions)
        out: list[Ranking | None] = [None] * len(questions)
        for rows in _group_by_asker(questions, access).values():
            mask = access.mask(questions[rows[0]].asker)
            for r in rows:
                t0 = time.perf_counter()
                scores, ids = self.index.search(qv[r:r + 1], depth, mask)
                self.latency_ms.append((time.perf_counter() - t0) * 1000)
                idx, sc = _tie_break(scores[0], ids[0])
                out[r] = Ranking(questions[r].qid, tuple(int(i) for i in idx),
                                 tuple(strictly_decreasing(sc).tolist()))
        return [r for r in out if r is not None]

    def ann_probe(self, questions: Sequence[Question], access: AccessFilter) -> AnnProbe:
        """The index, its exact reference (None for a flat index), the question vectors and masks:
        what :mod:`rag_bench.evaluation.scorers.ann` measures and tunes."""
        return AnnProbe(index=self.index, reference=self.exact, query_vectors=self.query_vectors(questions),
                        masks=[access.mask(q.asker) for q in questions], qids=[q.qid for q in questions])
