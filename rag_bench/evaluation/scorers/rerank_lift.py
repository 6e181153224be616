"""What the reranker bought (metrics.json ``rerank``): ``hit_lift@k`` per question is hit@k of the
final ranking minus hit@k of the first stage's ranking, at ``pipeline.k`` (the passages handed to
the generator): +1 where reranking brought a relevant passage into the top k, -1 where it pushed
the only one out. Reported for runs that reranked; defined where the ranking measures are
(answerable questions with a relevant passage).

Not a per-question mean of a records column: it grades the first stage's ranking, which no other
scorer grades, from the run (:attr:`QuestionRun.retrieved`) and the passage grades.
"""

from __future__ import annotations

from rag_bench.evaluation.run import SystemRun
from rag_bench.evaluation.scorer import Measure, Part, ScoringInput, Settings
from rag_bench.evaluation.scorers.chunk_ranking import GRADED_BY

HIT_LIFT = Measure("hit_lift", "rerank",
        description="hit@k of the final ranking minus hit@k of the first stage's: what reranking "
                   "changed in the passages handed to the generator", cut="required", params=GRADED_BY)


class RerankLift:
    """The scorer of :data:`HIT_LIFT` at the cell's ``k``."""

    name = "rerank_lift"
    requires: tuple[str, ...] = ()  # what every run has: its rankings and questions

    def measures(self, run: SystemRun, settings: Settings) -> list[Measure]:
        """hit_lift at ``pipeline.k`` when the run reranked."""
        return [HIT_LIFT.at(settings.k)] if _reranked(run) else []

    def score(self, scoring: ScoringInput) -> list[Part]:
        """Per question: 1, 0 or -1 (NaN where no passage is relevant)."""
        if not _reranked(scoring.run):
            return []
        k, level, values = scoring.settings.k, scoring.settings.relevance_level, []
        for qr, g in zip(scoring.run.questions, scoring.grades.questions):
            if not (qr.question.answerable and g.n_relevant > 0):
                values.append(float("nan"))
                continue
            before = any(g.qrels.get(j, 0) >= level for j in qr.retrieved.indices[:k])
            after = bool((g.levels[:k] >= level).any())
            values.append(float(after) - float(before))
        return [Part("rerank_lift", {HIT_LIFT.at(k).column: values})]


def _reranked(run: SystemRun) -> bool:
    return any(q.rerank_ms is not None for q in run.questions)


SCORER = RerankLift()
