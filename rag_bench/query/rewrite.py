"""``query=rewrite``: the model writes the question so it stands alone (the conversation's
references resolved); the rewrite is searched instead of the question."""

from __future__ import annotations

from rag_bench.domain import Question
from rag_bench.query.llm import LlmTransform, lines


class RewriteTransform(LlmTransform):
    """Parameters
    ----------
    generator:
        The cell's generator (injected), which writes the rewrite.
    history_turns:
        Turns of the conversation shown to the model (the last ones).
    """

    name = "rewrite"

    def __init__(self, generator: object = None, history_turns: int = 6) -> None:
        super().__init__(generator, history_turns)

    def queries(self, q: Question, text: str) -> list[str]:
        """The rewrite's first line."""
        return lines(text, 1)
