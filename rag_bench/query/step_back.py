"""``query=step_back``: the model writes the more general question behind the question; both are
searched and fused (the general one finds the background the specific one assumes)."""

from __future__ import annotations

from rag_bench.query.llm import FusedTransform, lines


class StepBackTransform(FusedTransform):
    """The model's step-back question, fused by RRF with the question. Parameters: ``generator``,
    ``history_turns`` and ``with_question``, as :class:`~rag_bench.query.llm.FusedTransform` says."""

    name = "step_back"

    def __init__(self, generator: object = None, history_turns: int = 6, with_question: bool = True) -> None:
        super().__init__(generator, history_turns, with_question)

    def written(self, text: str) -> list[str]:
        """The step-back question."""
        return lines(text, 1)
