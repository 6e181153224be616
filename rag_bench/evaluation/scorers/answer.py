"""The answer over every question (metrics.json ``answer``): ``correct_all`` is right when an
answerable question is answered correctly and an unanswerable one is refused -- SQuAD 2.0's
convention for its combined score, with ``generation/correct``'s matching rule for the answerable
ones. What ``experiment.primary=auto`` ranks by when a model answered: a cell that answers every
unanswerable question anyway is not better for answering the answerable ones a little more often.
``context_all`` counts an answerable question when all its evidence reached the generator instead:
what auto ranks by when the generator is a stand-in for a model, whose answers are its quirks.

A question expecting a clarifying question (``expects: clarify``) is right in ``correct_all``
only for an answer that asked for every missing fact (``clarify/correct_clarification``): a direct
answer and a refusal are wrong. ``context_all`` counts it as an answerable question (its evidence
all in the context: what the generator needs to see which fact is missing), since the context,
not the answer, is what that measure judges.

And the warning when the generator refuses answerable questions whose evidence it was handed (all
of it, ``evidence/context_complete``) at a high rate: its refusal setting, not retrieval, loses
them -- the setting it declares (``generator.threshold`` for the extractive stand-in) is named.
"""

from __future__ import annotations

import numpy as np

from rag_bench.evaluation.run import SystemRun
from rag_bench.evaluation.scorer import Measure, Part, ScoringInput, Settings, figures
from rag_bench.evaluation.scorers.clarify import clarified_run
from rag_bench.evaluation.scorers.evidence import CONTEXT_COMPLETE
from rag_bench.evaluation.scorers.generation import CORRECT

ANSWER = (
    Measure("correct_all", "answer",
            description="right over all questions: an answerable question answered correctly (generation/correct), "
            "an unanswerable one refused (SQuAD 2.0's convention for its combined score), one expecting clarify "
            "asked for its missing facts (clarify/correct_clarification)",
            params=("eval.answer_match", "eval.f1_threshold"), short="correct_all"),
    # What auto ranks a stand-in generator's cells by: its answers to answerable questions are its
    # quirks (a threshold refuses what a reader would answer), whether the evidence reached it is not.
    Measure("context_all", "answer",
            description="ready over all questions: an answerable question's evidence all in the context handed to "
            "the generator (evidence/context_complete; also for one expecting clarify), an unanswerable one refused",
            params=("eval.min_coverage",),
            short="context_all"),
)
CORRECT_ALL, CONTEXT_ALL = ANSWER
# How many answerable questions had all their evidence in the context, and how many of those the
# generator refused (what the refusal warning reads; a sweep of a stand-in sums them).
REFUSALS = figures("refusals", [
    ("evidence_in_context", None, "answerable questions whose evidence was all in the context handed to the generator"),
    ("refused", False, "of those, the questions the generator refused"),
])
HANDED, REFUSED = REFUSALS

# The warning fires when at least this share of the answerable questions whose evidence was all in
# the context were refused, over at least MIN_HANDED of them (fewer say nothing about a rate).
REFUSAL_WARNING_RATE = 0.25
MIN_HANDED = 4


class AnswerScorer:
    """The scorer of :data:`ANSWER` (cells whose system answered)."""

    name = "answer"
    requires: tuple[str, ...] = ("answers",)  # the evaluation runs it only on a run that has it

    def measures(self, run: SystemRun, settings: Settings) -> list[Measure]:
        """``answer/correct_all``, ``answer/context_all`` and the refusal counts when the run answered."""
        return [*ANSWER, *REFUSALS]

    def score(self, scoring: ScoringInput) -> list[Part]:
        """Per question, ``correct_all`` (NaN for a failed call, or an answerable question no
        reference or fact can judge) and ``context_all`` (NaN for an answerable question without
        evidence, or a failed call on an unanswerable one); whether the generator is a stand-in; the
        refusal warning."""
        run = scoring.run
        correct = np.asarray(scoring.column(CORRECT.column), np.float64)
        complete = np.asarray(scoring.column(CONTEXT_COMPLETE.column), np.float64)
        values, ready, refused_handed, handed = [], [], 0, 0
        for i, qr in enumerate(run.questions):
            a = qr.answer
            assert a is not None
            q = qr.question
            if q.outcome == "clarify":
                ready.append(float(complete[i]))
                values.append(np.nan if a.error is not None else float(clarified_run(qr)))
            elif q.answerable:
                ready.append(float(complete[i]))
                values.append(np.nan if a.error is not None else float(correct[i]))
                if a.error is None and complete[i] == 1.0:
                    handed += 1
                    refused_handed += bool(a.refused)
            else:
                refusal = np.nan if a.error is not None else float(a.refused)
                values.append(refusal)
                ready.append(refusal)
        traits = run.generator
        setting = traits.refusal_setting if traits is not None else None
        sections = {} if traits is None else {"methods": {"generator_stand_in": bool(traits.stand_in),
                                                           "refusal_setting": setting}}
        # A stand-in refuses by its threshold in every cell alike: said once for the sweep (where its
        # cells are read), not once per cell; a model that refuses what it was handed is said per cell.
        warning = refusal_warning(refused_handed, handed, setting)
        stand_in = traits is not None and traits.stand_in
        return [Part("answer", {CORRECT_ALL.column: values, CONTEXT_ALL.column: ready},
                     values={HANDED.key: handed, REFUSED.key: refused_handed}, sections=sections,
                     warnings=(warning,) if warning and not stand_in else ())]




def refusal_warning(refused: int, handed: int, setting: str | None, cells: str = "") -> str | None:
    """The warning for ``refused`` of ``handed`` answerable questions refused although their evidence
    was all in the context, at a high rate (:data:`REFUSAL_WARNING_RATE`); None below it.

    >>> refusal_warning(5, 8, "generator.threshold")[:86]
    'the generator refused 5 of the 8 answerable questions whose evidence was all in its co'
    """
    if handed < MIN_HANDED or refused / handed < REFUSAL_WARNING_RATE:
        return None
    # A setting is a stand-in's knob (a model is the fix for it); a model is told by its prompt.
    fix = (f"lower {setting} (it sets how readily the generator refuses), or plug a model (generator=xllamacpp, "
           "generator=openai)" if setting else "check how the generator's prompt tells it to refuse, or try a "
           "stronger model")
    return (f"the generator refused {refused} of the {handed} answerable questions whose evidence was all in its "
            f"context ({refused / handed:.0%}){cells}: its refusals, not retrieval, lose them -- fix: {fix}")


SCORER = AnswerScorer()
