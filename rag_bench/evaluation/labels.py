"""Failure attribution (docs/contract.md §4): one label per question, the first that applies (the
labels and their order: :mod:`rag_bench.failure_labels`).

Answerable questions go ``chunking`` → ``retrieval_miss`` → ``ranking`` → (``error``) →
``false_refusal`` → ``generation`` → ``citation`` → ``correct``; unanswerable ones are
``correct_refusal`` or ``hallucinated_answer``. ``error`` means the generator call itself failed
(counted, reported, kept out of quality denominators). A retrieval-only cell stops after the
retrieval labels: an answerable question whose evidence reached the top k is ``in_context``.
"""

from __future__ import annotations

import numpy as np

from rag_bench.failure_labels import RETRIEVAL_LABELS
from rag_bench.records import Answer, Question

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
