"""The failure labels (docs/contract.md §4) and their attribution order: one label per question, the
first that applies. Names only, so every floor can read them: the runner attributes them
(:mod:`rag_bench.evaluation.scorers.attribution`), metrics.json counts them, the measures registry declares each
tally's direction, reports and the leaderboard list them in this order.

Answerable questions go ``chunking`` → ``retrieval_miss`` → ``ranking`` → (``error``) →
``false_refusal`` → ``generation`` → ``citation`` → ``correct``; unanswerable ones are
``correct_refusal`` or ``hallucinated_answer``. A retrieval-only cell stops after the retrieval
labels.
"""

from __future__ import annotations

from collections.abc import Iterable

# Labels of the retrieval stage, in attribution order ("unjudged": a question with no relevant
# evidence at all, e.g. a BEIR query judged only with grade 0: nothing to attribute).
RETRIEVAL_LABELS = ("unjudged", "chunking", "retrieval_miss", "ranking", "in_context")
# Every label of a cell that generates, in attribution order ("in_context": an answer no
# reference can judge, with its evidence in the context).
ANSWERABLE_LABELS = ("unjudged", "chunking", "retrieval_miss", "ranking", "error", "false_refusal", "in_context",
                     "generation", "citation", "correct")
UNANSWERABLE_LABELS = ("error", "correct_refusal", "hallucinated_answer")
# The labels that are no loss: a right answer, a right refusal, evidence that reached the context of
# an answer no reference can judge, a question with nothing relevant to find.
NOT_LOST = ("unjudged", "in_context", "correct", "correct_refusal")
# The labels metrics.json ``failures`` counts, in report order.
GENERATION_CELL_LABELS = ANSWERABLE_LABELS + UNANSWERABLE_LABELS[1:]


def in_attribution_order(labels: Iterable[str]) -> list[str]:
    """``labels`` (distinct) sorted as :data:`GENERATION_CELL_LABELS` lists them, unknown ones last.

    >>> in_attribution_order(["correct", "ranking", "other"])
    ['ranking', 'correct', 'other']
    """
    order = {lab: i for i, lab in enumerate(GENERATION_CELL_LABELS)}
    return sorted(dict.fromkeys(labels), key=lambda lab: order.get(lab, len(order)))
