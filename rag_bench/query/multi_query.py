"""``query=multi_query``: the model writes ``n`` paraphrases of the question, one a line; each is
searched (and the question, with ``with_question``) and the rankings fused by reciprocal rank
(:func:`rag_bench.retrieval.hybrid.rrf`)."""

from __future__ import annotations

from rag_bench.query.llm import FusedTransform, count_param, lines


class MultiQueryTransform(FusedTransform):
    """Parameters: ``n``, paraphrases asked for (at most that many kept); ``generator``,
    ``history_turns`` and ``with_question``, as :class:`~rag_bench.query.llm.FusedTransform` says."""

    name = "multi_query"

    def __init__(self, generator: object = None, history_turns: int = 6, n: int = 3, with_question: bool = True) -> None:
        self.n = count_param("n", n, 3)
        super().__init__(generator, history_turns, with_question, n=n)

    def written(self, text: str) -> list[str]:
        """Up to ``n`` paraphrases."""
        return lines(text, self.n)
