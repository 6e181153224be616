"""Bi-encoder reranking: cosine of question and chunk vectors from the cell's embedder (cached)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from rag_bench.domain import Chunk, Question
from rag_bench.reranking.base import check_depth, prefetch_embeddings


class DenseReranker:
    """Cosine similarity over the shortlist; useful over BM25 candidates (vectors come from the cache)."""

    def __init__(self, embedder: Any = None, depth: int = 20) -> None:
        self.embedder = embedder
        self.depth = check_depth(depth)

    def prefetch(self, questions: Sequence[Question], shortlists: Sequence[Sequence[Chunk]]) -> None:
        """Embed all shortlists and questions in one batched pass (:func:`prefetch_embeddings`)."""
        prefetch_embeddings(self.embedder, questions, shortlists)

    def scores(self, questions: Sequence[Question], shortlists: Sequence[Sequence[Chunk]]) -> list[np.ndarray]:
        """Cosine per (question, chunk)."""
        qv = self.embedder.embed_queries([q.question for q in questions])
        flat = [c.text for s in shortlists for c in s]
        dv = self.embedder.embed_documents(flat) if flat else np.zeros((0, qv.shape[1]), np.float32)
        out, pos = [], 0
        for i, s in enumerate(shortlists):
            out.append(dv[pos:pos + len(s)] @ qv[i])
            pos += len(s)
        return out
