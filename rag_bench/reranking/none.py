"""``reranker=none``: keep the retriever's order."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rag_bench.components import Null
from rag_bench.domain import Chunk, Question


class NoReranker(Null):
    """The null reranker: a shortlist of depth 0; the pipeline keeps the retrieval order."""

    depth = 0

    def scores(self, questions: Sequence[Question], shortlists: Sequence[Sequence[Chunk]]) -> list[np.ndarray]:
        """Zero for every item (never called by the pipeline)."""
        return [np.zeros(len(s)) for s in shortlists]
