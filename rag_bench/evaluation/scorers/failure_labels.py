"""Failure attribution (docs/contract.md §4; metrics.json ``failures``): one label per question,
the first that applies (the labels and their order: :mod:`rag_bench.failure_labels`; each tally's
direction: :data:`rag_bench.metrics.measures.FAILURES`).

Answerable questions go ``chunking`` → ``retrieval_miss`` → ``ranking`` → (``error``) →
``false_refusal`` → ``generation`` → ``citation`` → ``correct``; unanswerable ones are
``correct_refusal`` or ``hallucinated_answer``. ``error`` means the generator call itself failed
(counted, reported, kept out of quality denominators). A retrieval-only cell stops after the
retrieval labels: an answerable question whose evidence reached the top k is ``in_context``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from rag_bench.failure_labels import GENERATION_CELL_LABELS, RETRIEVAL_LABELS
from rag_bench.metrics import measures
from rag_bench.records import Answer, Question

COLUMN = "failure"  # records.parquet: each question's label
FAILURES = measures.FAILURES  # one tally per label (metrics.json ``failures``)
SECTION = FAILURES[0].section
_LOST_IN_RETRIEVAL = RETRIEVAL_LABELS[:4]


def retrieval_label(question: Question, found: np.ndarray, first_relevant: int | None, k: int) -> str | None:
    """Label after retrieval: ``found[i]`` says whether any chunk of the corpus is relevant to
    evidence span ``i``; ``first_relevant`` is the 1-based rank of the first relevant chunk retrieved.
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


def retrieval_labels(questions: Sequence[Question], found: Sequence[np.ndarray], judged: Sequence[bool],
                     first_relevant: Sequence[float | None], k: int, *, attribute_chunking: bool = True) -> list[str | None]:
    """Each question's label after retrieval (:func:`retrieval_label`); ``unjudged`` for an
    answerable question with evidence but none at the relevance level (``judged`` False).
    ``attribute_chunking=False`` (the passages are not a chunking of the whole corpus) never
    says ``chunking``."""
    return ["unjudged" if q.answerable and q.evidence and not ok else
            retrieval_label(q, f if attribute_chunking else np.ones_like(f),
                            None if first is None or first != first else int(first), k)
            for q, f, ok, first in zip(questions, found, judged, first_relevant)]


def tally(frame: pd.DataFrame, *, generated: bool) -> dict[str, int]:
    """metrics.json ``failures``: questions per label, every label of the cell's kind (a
    retrieval-only cell's retrieval labels, else every label) in attribution order, zeros included."""
    counts = frame[COLUMN].value_counts()
    names = GENERATION_CELL_LABELS if generated else RETRIEVAL_LABELS
    return {label: int(counts.get(label, 0)) for label in names}
