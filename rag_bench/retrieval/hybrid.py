"""Hybrid retrieval: reciprocal rank fusion of BM25 and dense rankings.

``score(chunk) = Σ_branch weight_b / (rrf_k + rank_b(chunk))`` over the branches that returned
the chunk (rank from 1). BM25 sees the original question; the dense branch its prefixed form
(the embedder adds the query prefix).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from rag_bench.domain import Chunk, Question, Ranking
from rag_bench.errors import ConfigError
from rag_bench.indexing.base import VectorIndex
from rag_bench.memo import SharedWork
from rag_bench.retrieval.base import AccessFilter, AnnProbe, strictly_decreasing
from rag_bench.retrieval.bm25 import Bm25Retriever
from rag_bench.retrieval.dense import DenseRetriever


def rrf(rankings: Sequence[Sequence[int]], *, weights: Sequence[float], k: float = 60.0,
        depth: int | None = None) -> tuple[list[int], list[float]]:
    """Fuse ranked id lists by reciprocal rank; ties broken by id ascending.

    >>> rrf([[3, 1, 2], [1, 4]], weights=[1, 1], k=60)[0]
    [1, 3, 4, 2]
    """
    if len(weights) != len(rankings):
        raise ValueError(f"weights has {len(weights)} entries for {len(rankings)} rankings")
    fused: dict[int, float] = {}
    for ranking, w in zip(rankings, weights):
        for rank, item in enumerate(ranking, start=1):
            fused[item] = fused.get(item, 0.0) + w / (k + rank)
    items = sorted(fused, key=lambda i: (-fused[i], i))[:depth]
    return items, [fused[i] for i in items]


class HybridRetriever:
    """Parameters
    ----------
    rrf_k:
        RRF constant (60, as in Cormack et al. 2009).
    sparse_weight, dense_weight:
        Branch weights in the fused score.
    sparse_depth, dense_depth:
        How many results each branch contributes before fusion (at least the cell's depth).
    k1, b, language, stopwords, stemmer:
        BM25 parameters of the sparse branch (see :class:`~rag_bench.retrieval.bm25.Bm25Retriever`).
    shared:
        The runner's shared work, handed to both branches.
    """

    def __init__(self, embedder: Any = None, index: VectorIndex | None = None, rrf_k: float = 60.0,
                 sparse_weight: float = 1.0, dense_weight: float = 1.0, sparse_depth: int = 100,
                 dense_depth: int = 100, k1: float = 1.5, b: float = 0.75, language: str = "english",
                 stopwords: str = "auto", stemmer: Literal["none", "snowball"] = "none", shared: SharedWork | None = None) -> None:
        for name, v in (("sparse_weight", sparse_weight), ("dense_weight", dense_weight)):
            if not (isinstance(v, (int, float)) and np.isfinite(v) and v >= 0):
                raise ConfigError(f"retriever.{name} must be a finite number >= 0, got {v!r}")
        if not (isinstance(rrf_k, (int, float)) and np.isfinite(rrf_k) and rrf_k > 0):
            raise ConfigError(f"retriever.rrf_k must be > 0, got {rrf_k!r} -- fix: retriever.rrf_k=60")
        for name, v in (("sparse_depth", sparse_depth), ("dense_depth", dense_depth)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ConfigError(f"retriever.{name} must be an integer >= 1, got {v!r}")
        self.sparse = Bm25Retriever(k1=k1, b=b, language=language, stopwords=stopwords, stemmer=stemmer,
                                    shared=shared)
        self.dense = DenseRetriever(embedder=embedder, index=index, shared=shared)
        self.rrf_k, self.weights = float(rrf_k), (float(sparse_weight), float(dense_weight))
        self.depths = (sparse_depth, dense_depth)

    def fit(self, chunks: Sequence[Chunk]) -> None:
        """Build both branches."""
        self.sparse.fit(chunks)
        self.dense.fit(chunks)

    def search(self, questions: Sequence[Question], depth: int, access: AccessFilter) -> list[Ranking]:
        """Fused top-``depth`` per question (both branches already access-filtered)."""
        sparse = self.sparse.search(questions, max(depth, self.depths[0]), access)
        dense = self.dense.search(questions, max(depth, self.depths[1]), access)
        out = []
        for q, s, d in zip(questions, sparse, dense):
            items, scores = rrf([s.indices, d.indices], weights=self.weights, k=self.rrf_k, depth=depth)
            out.append(Ranking(q.qid, tuple(items), tuple(strictly_decreasing(np.asarray(scores)).tolist())))
        return out

    def ann_probe(self, questions: Sequence[Question], access: AccessFilter) -> AnnProbe:
        """The dense branch's index, laid open for the ANN scorer."""
        return self.dense.ann_probe(questions, access)
