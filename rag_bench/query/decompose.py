"""``query=decompose``: the model splits the question into the simpler sub-questions it depends
on, one a line; each is searched (and the question, with ``with_question``) and the rankings
fused by reciprocal rank."""

from __future__ import annotations

from rag_bench.query.llm import FusedTransform, count_param, lines


class DecomposeTransform(FusedTransform):
    """Parameters: ``max_subquestions``, sub-questions kept at most; ``generator``,
    ``history_turns`` and ``with_question``, as :class:`~rag_bench.query.llm.FusedTransform` says."""

    name = "decompose"

    def __init__(self, generator: object = None, history_turns: int = 6, max_subquestions: int = 4,
                 with_question: bool = True) -> None:
        self.max_subquestions = count_param("max_subquestions", max_subquestions, 4)
        super().__init__(generator, history_turns, with_question, max_subquestions=max_subquestions)

    def written(self, text: str) -> list[str]:
        """Up to ``max_subquestions`` sub-questions."""
        return lines(text, self.max_subquestions)
