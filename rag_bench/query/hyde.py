"""``query=hyde`` (hypothetical document embeddings, Gao et al. 2022): the model writes a short
passage that would answer the question; the passage is searched with the question (fused by
RRF) or instead of it."""

from __future__ import annotations

from rag_bench.domain import Question
from rag_bench.query.base import clip
from rag_bench.query.llm import LlmTransform


class HydeTransform(LlmTransform):
    """Parameters
    ----------
    generator:
        The cell's generator (injected).
    history_turns:
        Turns of the conversation shown to the model.
    with_question:
        Search the question too (True: question and passage fused), or the passage alone.
    """

    name = "hyde"

    def __init__(self, generator: object = None, history_turns: int = 6, with_question: bool = True) -> None:
        super().__init__(generator, history_turns)
        self.with_question = bool(with_question)
        self.identity["with_question"] = self.with_question

    def queries(self, q: Question, text: str) -> list[str]:
        """The question (when ``with_question``) and the passage as one text."""
        return ([q.question] if self.with_question else []) + [clip(text)]
