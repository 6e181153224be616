"""Failure attribution (docs/contract.md §4; metrics.json ``failures``): one label per question,
the first stage that lost it (the labels and their order: :mod:`rag_bench.failure_labels`).

Answerable questions go ``chunking`` → ``retrieval_miss`` → ``ranking`` → (``error``) →
``false_refusal`` → ``generation`` → ``citation`` → ``correct``; unanswerable ones are
``correct_refusal`` or ``hallucinated_answer``. ``error`` means the generator call itself failed
(counted, reported, kept out of quality denominators). A retrieval-only cell stops after the
retrieval labels: an answerable question whose evidence reached the top k is ``in_context``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rag_bench.domain import Answer, Question
from rag_bench.evaluation.grade import Graded
from rag_bench.evaluation.run import SystemRun
from rag_bench.evaluation.scorer import Context, Measure, Part, Settings, figures
from rag_bench.evaluation.scorers.citations import PRECISION
from rag_bench.evaluation.scorers.generation import CORRECT
from rag_bench.failure_labels import GENERATION_CELL_LABELS, RETRIEVAL_LABELS

COLUMN = "failure"  # records.parquet: each question's label
_LOST_IN_RETRIEVAL = RETRIEVAL_LABELS[:4]
# One tally per label, in attribution order: a question lost at a stage is a count of something that
# went wrong; correct and correct_refusal are the outcomes wanted.
_MEANINGS: dict[str, tuple[bool | None, str]] = {
    "unjudged": (None, "questions with no relevant evidence: nothing to attribute"),
    "chunking": (False, "questions whose evidence no chunk holds"),
    "retrieval_miss": (False, "questions with no relevant chunk in the top D"),
    "ranking": (False, "questions whose relevant chunk was retrieved but cut before k"),
    "error": (False, "questions whose generator call failed"),
    "false_refusal": (False, "answerable questions refused"),
    "in_context": (None, "evidence in the context and no reference to judge the answer (retrieval-only cells: "
                   "every question whose evidence reached the top k)"),
    "generation": (False, "evidence in the context, answer wrong"),
    "citation": (False, "answer right, citations do not support it"),
    "correct": (True, "answer right and supported"),
    "correct_refusal": (True, "unanswerable questions refused"),
    "hallucinated_answer": (False, "unanswerable questions answered"),
}
FAILURES = figures("failures", tuple((label, *_MEANINGS[label]) for label in GENERATION_CELL_LABELS))
SECTION = FAILURES[0].section


def retrieval_label(question: Question, found: np.ndarray, first_relevant: int | None, k: int) -> str | None:
    """Label after retrieval: ``found[i]`` says whether any passage of the corpus is relevant to
    evidence span ``i``; ``first_relevant`` is the 1-based rank of the first relevant passage.
    None for unanswerable questions (their label comes from the answer)."""
    if not question.answerable:
        return None
    if not question.evidence:
        return "unjudged"
    if not found.all():
        return "chunking"
    if first_relevant is None:
        return "retrieval_miss"
    if first_relevant > k:
        return "ranking"
    return "in_context"


def final_label(answerable: bool, retrieval: str | None, answer: Answer, correct: float,
                cite_precision: float) -> str:
    """Label after generation, from the retrieval label, the parsed answer, its correctness (1.0,
    0.0, or NaN for a question with neither facts nor references) and its citation precision.

    A question whose correctness is undefined keeps its last retrieval label (``in_context``):
    nothing says the answer is wrong, so it is never blamed on ``generation``.
    """
    if not answerable:
        if answer.error:
            return "error"
        return "correct_refusal" if answer.refused else "hallucinated_answer"
    if retrieval in _LOST_IN_RETRIEVAL:
        return retrieval
    if answer.error:
        return "error"
    if answer.refused:
        return "false_refusal"
    if correct != correct:  # NaN: no reference to judge the answer by
        return retrieval or "in_context"
    if not correct:
        return "generation"
    if not answer.citations or not cite_precision > 0:
        return "citation"  # right answer, but no cited passage holds the evidence
    return "correct"


def retrieval_labels(questions: Sequence[Question], grades: Sequence[Graded], k: int, *,
                     attribute_chunking: bool = True) -> list[str | None]:
    """Each question's label after retrieval (:func:`retrieval_label`); ``unjudged`` for an
    answerable question with evidence but none at the relevance level. ``attribute_chunking=False``
    (the passages are not a chunking of the whole corpus) never says ``chunking``."""
    return ["unjudged" if q.answerable and q.evidence and not g.judged else
            retrieval_label(q, g.found if attribute_chunking else np.ones_like(g.found), g.first_relevant, k)
            for q, g in zip(questions, grades)]


def tally(labels: Sequence[str | None], *, answered: bool) -> dict[str, int]:
    """metrics.json ``failures``: questions per label, every label of the cell's kind (a
    retrieval-only cell's retrieval labels, else every label) in attribution order, zeros included."""
    names = GENERATION_CELL_LABELS if answered else RETRIEVAL_LABELS
    return {label: sum(x == label for x in labels) for label in names}


class Attribution:
    """The scorer of each question's failure label and the ``failures`` tallies."""

    name = "attribution"

    def measures(self, run: SystemRun, settings: Settings) -> list[Measure]:
        """One tally per label of the cell's kind."""
        names = GENERATION_CELL_LABELS if run.answered else RETRIEVAL_LABELS
        return [f for f in FAILURES if f.family in names]

    def score(self, context: Context) -> list[Part]:
        """Per question, the first stage that lost it; the tallies."""
        run = context.run
        questions = [q.question for q in run.questions]
        labels = retrieval_labels(questions, context.grades.questions, context.settings.k,
                                  attribute_chunking=run.attribute_chunking)
        if run.answered:
            correct, precision = context.column(CORRECT.column), context.column(PRECISION.column)
            labels = [final_label(q.question.answerable, label, q.answer, correct[i], precision[i])  # type: ignore[arg-type]
                      for i, (q, label) in enumerate(zip(run.questions, labels))]
        counts = tally(labels, answered=run.answered)
        return [Part("label", {COLUMN: labels}, values={f"{SECTION}/{label}": n for label, n in counts.items()})]


SCORER = Attribution()
