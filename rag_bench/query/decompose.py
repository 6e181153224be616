"""``query=decompose``: the model splits the question into the simpler sub-questions it depends
on, one a line; each is searched (and the question, with ``with_question``) and the rankings
fused by reciprocal rank."""

from __future__ import annotations

from rag_bench.domain import Question
from rag_bench.errors import ConfigError
from rag_bench.query.base import MAX_QUERIES
from rag_bench.query.llm import LlmTransform, lines


class DecomposeTransform(LlmTransform):
    """Parameters
    ----------
    generator:
        The cell's generator (injected).
    history_turns:
        Turns of the conversation shown to the model.
    max_subquestions:
        Sub-questions kept at most.
    with_question:
        Search the question too.
    """

    name = "decompose"

    def __init__(self, generator: object = None, history_turns: int = 6, max_subquestions: int = 4,
                 with_question: bool = True) -> None:
        if isinstance(max_subquestions, bool) or not isinstance(max_subquestions, int) \
                or not 1 <= max_subquestions < MAX_QUERIES:
            raise ConfigError(f"query.max_subquestions must be an integer in [1, {MAX_QUERIES - 1}], got "
                              f"{max_subquestions!r} -- fix: query.max_subquestions=4")
        super().__init__(generator, history_turns, max_subquestions=max_subquestions)
        self.max_subquestions, self.with_question = max_subquestions, bool(with_question)
        self.identity["with_question"] = self.with_question

    def queries(self, q: Question, text: str) -> list[str]:
        """The question (when ``with_question``) and up to ``max_subquestions`` sub-questions."""
        return ([q.question] if self.with_question else []) + lines(text, self.max_subquestions)
