"""The failure labels (docs/contract.md §4) and their attribution order: one label per question, the
first that applies. Names only, so every floor can read them: the runner attributes them
(:mod:`rag_bench.evaluation.scorers.attribution`), metrics.json counts them, the measures registry declares each
tally's direction, reports and the leaderboard list them in this order.

The order follows the questions a question's evidence passes on its way to a right answer: was the
document read (``parsing``: its quotes located in this cell's parse)? was the source prepared
(``chunking``)? was it retrieved -- what the asker may read (``unauthorized``), the current version
(``stale_version``), searched for with what the question asks (``query``: a query transform lost
what the question as it is, or its people-written standalone form, finds),
at all (``retrieval_miss``), within k (``ranking``), all of it
(``partial_evidence``)? was it packed into the context (``context``)? was it used (``error``,
``false_refusal``, ``generation``)? was it cited (``citation``)? Answerable questions go ``parsing``
→ ``chunking`` → ``unauthorized`` → ``stale_version`` → (``query``) → ``retrieval_miss`` → ``ranking`` →
``partial_evidence`` → ``context`` → (``error``) → ``false_refusal`` → ``generation`` →
``citation`` → ``correct``; unanswerable ones are ``correct_refusal`` or ``hallucinated_answer``.
A question that lost only some quotes to the parser is ``parsing`` when its located evidence went
as far as it could (rag_bench.evaluation.scorers.attribution).

``unauthorized``, ``stale_version`` and ``query`` are causes of a retrieval loss, so they come before the
retrieval labels they refine: a question's evidence is always in a current document its asker may
read (the loader refuses evidence in an archived or unreadable document), so after ``context`` both
would be unreachable. A retrieval-only cell stops after the labels that apply before generation
(``context`` needs a context; ``stale_version`` reads the top k there).
"""

from __future__ import annotations

from collections.abc import Iterable

# Labels of the retrieval stage, in attribution order ("unjudged": a question with no relevant
# evidence at all, e.g. a BEIR query judged only with grade 0: nothing to attribute).
RETRIEVAL_LABELS = ("unjudged", "parsing", "chunking", "unauthorized", "stale_version", "query", "retrieval_miss",
                    "ranking", "partial_evidence", "in_context")
# Labels a cell reports only when their stage ran: ``query`` in a cell with a query transform.
OPTIONAL_LABELS = ("query",)
# The labels a question keeps whatever the generator does: lost before the generator saw its
# evidence (or nothing to attribute), in attribution order.
LOST_BEFORE_GENERATION = RETRIEVAL_LABELS[:-1] + ("context",)
# Every label of a cell that generates, in attribution order ("in_context": an answer no
# reference can judge, with its evidence in the context).
ANSWERABLE_LABELS = LOST_BEFORE_GENERATION + ("error", "false_refusal", "in_context", "generation", "citation",
                                              "correct")
UNANSWERABLE_LABELS = ("error", "correct_refusal", "hallucinated_answer")
# The labels that are no loss: a right answer, a right refusal, evidence that reached the context of
# an answer no reference can judge, a question with nothing relevant to find.
NOT_LOST = ("unjudged", "in_context", "correct", "correct_refusal")
# The labels metrics.json ``failures`` counts, in report order.
GENERATION_CELL_LABELS = ANSWERABLE_LABELS + UNANSWERABLE_LABELS[1:]


def in_attribution_order(labels: Iterable[str]) -> list[str]:
    """``labels`` (distinct) sorted as :data:`GENERATION_CELL_LABELS` lists them, unknown ones last.

    >>> in_attribution_order(["correct", "ranking", "other", "partial_evidence"])
    ['ranking', 'partial_evidence', 'correct', 'other']
    """
    order = {lab: i for i, lab in enumerate(GENERATION_CELL_LABELS)}
    return sorted(dict.fromkeys(labels), key=lambda lab: order.get(lab, len(order)))
