"""Abstention (metrics.json ``abstention``): refusing the unanswerable, answering the answerable.

``correct_refusal_rate`` and ``unsupported_answer_rate`` over unanswerable questions,
``false_refusal_rate`` over answerable ones that expect an answer (a question expecting a
clarifying question is left out of all three: refusing it is wrong, and the ``clarify`` section and
``answer/correct_all`` count it so); a failed call is NaN (left out). Whether the top-1
retrieval score alone could tell them apart is :mod:`.threshold`'s.
"""

from __future__ import annotations

import numpy as np

from rag_bench.evaluation.run import SystemRun
from rag_bench.evaluation.scorer import Measure, Part, ScoringInput, Settings

ABSTENTION = (
    Measure("correct_refusal_rate", "abstention",
            description="unanswerable questions answered with the refusal", short="correct_refusal"),
    Measure("unsupported_answer_rate", "abstention",
            description="unanswerable questions answered anyway", higher_is_better=False),
    Measure("false_refusal_rate", "abstention",
            description="answerable questions refused", higher_is_better=False, short="false_refusal"),
)
CORRECT_REFUSAL, UNSUPPORTED, FALSE_REFUSAL = ABSTENTION


class Abstention:
    """The scorer of :data:`ABSTENTION` (cells whose system answered)."""

    name = "abstention"
    requires: tuple[str, ...] = ("answers",)  # the evaluation runs it only on a run that has it

    def measures(self, run: SystemRun, settings: Settings) -> list[Measure]:
        """The refusal rates when the run answered."""
        return list(ABSTENTION)

    def score(self, scoring: ScoringInput) -> list[Part]:
        """Per question, the refusal measures (NaN for a failed call or the other kind of question)."""
        columns: dict[str, list[float]] = {m.column: [] for m in ABSTENTION}
        for qr in scoring.run.questions:
            a, outcome = qr.answer, qr.question.outcome
            assert a is not None
            ok = a.error is None
            refuse, answer = ok and outcome == "refuse", ok and outcome == "answer"
            columns[CORRECT_REFUSAL.column].append(float(a.refused) if refuse else np.nan)
            columns[UNSUPPORTED.column].append(float(not a.refused) if refuse else np.nan)
            columns[FALSE_REFUSAL.column].append(float(a.refused) if answer else np.nan)
        return [Part("abstention", columns)]


SCORER = Abstention()
