"""``query=hyde`` (hypothetical document embeddings, Gao et al. 2022): the model writes a short
passage that would answer the question; the passage is searched with the question (fused by
RRF) or instead of it."""

from __future__ import annotations

from rag_bench.query.base import clip
from rag_bench.query.llm import FusedTransform


class HydeTransform(FusedTransform):
    """The model's passage, searched with the question (fused by RRF) or, ``with_question=False``,
    instead of it. Parameters: ``generator``, ``history_turns`` and ``with_question``, as
    :class:`~rag_bench.query.llm.FusedTransform` says."""

    name = "hyde"

    def __init__(self, generator: object = None, history_turns: int = 6, with_question: bool = True) -> None:
        super().__init__(generator, history_turns, with_question)

    def written(self, text: str) -> list[str]:
        """The passage as one text."""
        return [clip(text)]
