"""``query=step_back``: the model writes the more general question behind the question; both are
searched and fused (the general one finds the background the specific one assumes)."""

from __future__ import annotations

from rag_bench.domain import Question
from rag_bench.query.llm import LlmTransform, lines


class StepBackTransform(LlmTransform):
    """Parameters
    ----------
    generator:
        The cell's generator (injected).
    history_turns:
        Turns of the conversation shown to the model.
    with_question:
        Search the question too (fused by RRF with the step-back question).
    """

    name = "step_back"

    def __init__(self, generator: object = None, history_turns: int = 6, with_question: bool = True) -> None:
        super().__init__(generator, history_turns)
        self.with_question = bool(with_question)
        self.identity["with_question"] = self.with_question

    def queries(self, q: Question, text: str) -> list[str]:
        """The question (when ``with_question``) and the step-back question."""
        return ([q.question] if self.with_question else []) + lines(text, 1)
