"""passage_precision@k (metrics.json ``context``): the share of the k passages handed to the
generator that are relevant. (ragas' ``context_precision`` is another measure: the LLM judge's,
``judge/judge_context_precision``.)

The k passages are the top k of the cell's final ranking (``pipeline.k``; fewer when the ranking
is shorter), relevant by the passage grades at the relevance level. Defined for the questions the
ranking measures are defined for (answerable, with a relevant passage). A cell that retrieves only
reports it too: the passages its ranking would hand over.
"""

from __future__ import annotations

from rag_bench.evaluation.run import SystemRun
from rag_bench.evaluation.scorer import Measure, Part, ScoringInput, Settings
from rag_bench.evaluation.scorers.chunk_ranking import GRADED_BY

PASSAGE_PRECISION = Measure("passage_precision", "context",
        description="relevant passages among the k handed to the generator "
                            "/ those passages", cut="required", short="pass_p", params=GRADED_BY)


class PassagePrecision:
    """The scorer of :data:`PASSAGE_PRECISION` at the cell's ``k``."""

    name = "passage_precision"
    requires: tuple[str, ...] = ()  # what every run has: its rankings and questions

    def measures(self, run: SystemRun, settings: Settings) -> list[Measure]:
        """passage_precision at ``pipeline.k``."""
        return [PASSAGE_PRECISION.at(settings.k)]

    def score(self, scoring: ScoringInput) -> list[Part]:
        """Per question: relevant passages among the top ``k`` / passages in the top ``k``."""
        k, values = scoring.settings.k, []
        for qr, g in zip(scoring.run.questions, scoring.grades.questions):
            top = (g.levels >= scoring.settings.relevance_level)[:k]
            values.append(float(top.sum()) / len(top) if qr.question.answerable and g.n_relevant > 0 and len(top)
                          else float("nan"))
        return [Part("passage_precision", {PASSAGE_PRECISION.at(k).column: values})]


SCORER = PassagePrecision()
