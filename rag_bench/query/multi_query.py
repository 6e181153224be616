"""``query=multi_query``: the model writes ``n`` paraphrases of the question, one a line; each is
searched (and the question, with ``with_question``) and the rankings fused by reciprocal rank
(:func:`rag_bench.retrieval.hybrid.rrf`)."""

from __future__ import annotations

from rag_bench.domain import Question
from rag_bench.errors import ConfigError
from rag_bench.query.base import MAX_QUERIES
from rag_bench.query.llm import LlmTransform, lines


class MultiQueryTransform(LlmTransform):
    """Parameters
    ----------
    generator:
        The cell's generator (injected).
    history_turns:
        Turns of the conversation shown to the model.
    n:
        Paraphrases asked for (at most that many kept).
    with_question:
        Search the question too.
    """

    name = "multi_query"

    def __init__(self, generator: object = None, history_turns: int = 6, n: int = 3, with_question: bool = True) -> None:
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n < MAX_QUERIES:
            raise ConfigError(f"query.n must be an integer in [1, {MAX_QUERIES - 1}], got {n!r} -- fix: query.n=3")
        super().__init__(generator, history_turns, n=n)
        self.n, self.with_question = n, bool(with_question)
        self.identity["with_question"] = self.with_question

    def queries(self, q: Question, text: str) -> list[str]:
        """The question (when ``with_question``) and up to ``n`` paraphrases."""
        return ([q.question] if self.with_question else []) + lines(text, self.n)
