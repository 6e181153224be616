"""The answer over every question (metrics.json ``answer``): right when an answerable question is
answered correctly and an unanswerable one is refused -- SQuAD 2.0's convention for its combined
score, with ``generation/correct``'s matching rule for the answerable ones. What
``experiment.primary=auto`` ranks by when a model answered: a cell that answers every unanswerable
question anyway is not better for answering the answerable ones a little more often.

And the warning when the generator refuses answerable questions whose evidence it was handed (all
of it, ``evidence/context_complete``) at a high rate: its refusal setting, not retrieval, loses
them -- the setting it declares (``generator.threshold`` for the extractive stand-in) is named.
"""

from __future__ import annotations

import numpy as np

from rag_bench.evaluation.run import SystemRun
from rag_bench.evaluation.scorer import Context, Measure, Part, Settings
from rag_bench.evaluation.scorers.evidence import CONTEXT_COMPLETE
from rag_bench.evaluation.scorers.generation import CORRECT

ANSWER = (
    Measure("correct_all", "answer",
            description="right over all questions: an answerable question answered correctly (generation/correct), "
            "an unanswerable one refused (SQuAD 2.0's convention for its combined score)",
            params=("eval.answer_match", "eval.f1_threshold"), short="correct_all"),
)
(CORRECT_ALL,) = ANSWER

# The warning fires when at least this share of the answerable questions whose evidence was all in
# the context were refused, over at least MIN_HANDED of them (fewer say nothing about a rate).
REFUSAL_WARNING_RATE = 0.25
MIN_HANDED = 4


class AnswerScorer:
    """The scorer of :data:`ANSWER` (cells whose system answered)."""

    name = "answer"

    def measures(self, run: SystemRun, settings: Settings) -> list[Measure]:
        """``answer/correct_all`` when the run answered."""
        return list(ANSWER) if run.answered else []

    def score(self, context: Context) -> list[Part]:
        """Per question, ``correct_all`` (NaN for a failed call, or an answerable question no
        reference or fact can judge); whether the generator is a stand-in; the refusal warning."""
        run = context.run
        if not run.answered:
            return []
        correct = np.asarray(context.column(CORRECT.column), np.float64)
        values, refused_handed, handed = [], 0, 0
        complete = context.columns.get(CONTEXT_COMPLETE.column)
        for i, qr in enumerate(run.questions):
            a = qr.answer
            assert a is not None
            if a.error is not None:
                values.append(np.nan)
            elif qr.question.answerable:
                values.append(float(correct[i]))
                if complete is not None and complete[i] == 1.0:
                    handed += 1
                    refused_handed += bool(a.refused)
            else:
                values.append(float(a.refused))
        traits = run.generator
        setting = traits.refusal_setting if traits is not None else None
        sections: dict[str, dict[str, object]] = {REFUSALS: {"evidence_in_context": handed, "refused": refused_handed,
                                                             "setting": setting}}
        if traits is not None:
            sections["methods"] = {"generator_stand_in": bool(traits.stand_in)}
        # A stand-in refuses by its threshold in every cell alike: said once for the sweep (where its
        # cells are read), not once per cell; a model that refuses what it was handed is said per cell.
        warning = refusal_warning(refused_handed, handed, setting)
        stand_in = traits is not None and traits.stand_in
        return [Part("answer", {CORRECT_ALL.column: values}, sections=sections,
                     warnings=(warning,) if warning and not stand_in else ())]


# metrics.json section: how many answerable questions had all their evidence in the context, how
# many of those the generator refused, and the setting that makes it refuse (None: not declared).
REFUSALS = "refusals"


def refusal_warning(refused: int, handed: int, setting: str | None, cells: str = "") -> str | None:
    """The warning for ``refused`` of ``handed`` answerable questions refused although their evidence
    was all in the context, at a high rate (:data:`REFUSAL_WARNING_RATE`); None below it.

    >>> refusal_warning(5, 8, "generator.threshold")[:86]
    'the generator refused 5 of the 8 answerable questions whose evidence was all in its co'
    """
    if handed < MIN_HANDED or refused / handed < REFUSAL_WARNING_RATE:
        return None
    knob = (f"lower {setting} (it sets how readily the generator refuses)" if setting
            else "check the generator's prompt and model")
    return (f"the generator refused {refused} of the {handed} answerable questions whose evidence was all in its "
            f"context ({refused / handed:.0%}){cells}: its refusals, not retrieval, lose them -- fix: {knob}, or plug a "
            "model (generator=llama_cpp, generator=openai_compat)")


SCORER = AnswerScorer()
