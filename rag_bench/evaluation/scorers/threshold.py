"""Can the top-1 retrieval score alone tell answerable from unanswerable questions (metrics.json
``abstention``): its AUROC, the threshold with the best F1 and that F1 -- what a "refuse below this
score" rule would achieve, reported for every cell."""

from __future__ import annotations

import numpy as np

from rag_bench.evaluation.run import SystemRun
from rag_bench.evaluation.scorer import Measure, Part, ScoringInput, Settings
from rag_bench.stats.threshold import auroc, best_f1_threshold

THRESHOLD = (
    Measure("top1_auroc", "abstention",
            description="AUROC of the top-1 retrieval score for answerable vs unanswerable", aggregate="value"),
    Measure("top1_best_f1_threshold", "abstention",
            description="top-1 score threshold with the best F1", higher_is_better=None, aggregate="value"),
    Measure("top1_best_f1", "abstention",
            description="F1 of answerable-vs-unanswerable at that threshold", aggregate="value"),
)
AUROC, BEST_THRESHOLD, BEST_F1 = THRESHOLD


class Threshold:
    """The scorer of :data:`THRESHOLD`."""

    name = "threshold"
    requires: tuple[str, ...] = ()  # what every run has: its rankings and questions

    def measures(self, run: SystemRun, settings: Settings) -> list[Measure]:
        """The three figures, for every cell."""
        return list(THRESHOLD)

    def score(self, scoring: ScoringInput) -> list[Part]:
        """The figures from each question's top-1 score of its final ranking (None where undefined)."""
        top = np.array([q.ranked.scores[0] if len(q.ranked.scores) else np.nan for q in scoring.run.questions], float)
        y = np.array([q.question.answerable for q in scoring.run.questions], bool)
        keep = ~np.isnan(top)
        area = auroc(top[keep], y[keep])
        t, f1 = best_f1_threshold(top[keep], y[keep])
        values = {AUROC.key: area, BEST_THRESHOLD.key: t, BEST_F1.key: f1}
        return [Part("threshold", values={k: None if v is None or np.isnan(v) else float(v) for k, v in values.items()})]


SCORER = Threshold()
