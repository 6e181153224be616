"""``reranker=none``: keep the retriever's order."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rag_bench.records import Chunk, Question


class NoReranker:
    """Identity: a shortlist of depth 0, so the pipeline skips reranking."""

    depth = 0

    def scores(self, questions: Sequence[Question], shortlists: Sequence[Sequence[Chunk]]) -> list[np.ndarray]:
        """Never called with a non-empty shortlist."""
        return [np.zeros(len(s)) for s in shortlists]
