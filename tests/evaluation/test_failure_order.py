"""The whole failure order (rag_bench/evaluation/scorers/attribution.py, rag_bench/failure_labels.py):
``unauthorized``, ``stale_version``, ``partial_evidence`` and ``context``, each the first failing stage
of a hand-built question run, and where each sits among the others (issue 42)."""

from __future__ import annotations

import numpy as np
import pytest

from rag_bench.domain import Answer, Chunk, Document, EvidenceSpan, LostEvidence, Passage, Question, Ranking
from rag_bench.evaluation.grade import Graded
from rag_bench.evaluation.run import QuestionRun
from rag_bench.evaluation.scorers.attribution import (
    CellView,
    final_label,
    lost_before_generation,
    older_versions,
    parsing_label,
    retrieval_labels,
)
from rag_bench.failure_labels import ANSWERABLE_LABELS, GENERATION_CELL_LABELS, LOST_BEFORE_GENERATION, RETRIEVAL_LABELS

DOCS = {"policy": Document("policy", "p" * 100, title="Returns", tenant="t", effective_at="2024-03-01"),
        "policy-2023": Document("policy-2023", "o" * 100, title="Returns", tenant="t", status="archived"),
        "other": Document("other", "x" * 100, title="Delivery", tenant="t")}
VERSIONS = older_versions(DOCS)
# The corpus' chunks: two of the current policy, one of the archived one, two of another document.
CHUNKS = [Chunk("policy#0", "policy", 0, 50, "p" * 50), Chunk("policy#1", "policy", 50, 100, "p" * 50),
          Chunk("old#0", "policy-2023", 0, 50, "o" * 50), Chunk("other#0", "other", 0, 50, "x" * 50),
          Chunk("other#1", "other", 50, 100, "x" * 50)]
ONE = Question("q1", "?", True, (EvidenceSpan("policy", 0, 40),))
TWO = Question("q2", "?", True, (EvidenceSpan("policy", 0, 40), EvidenceSpan("other", 60, 90)))


def _passages(*ids: int) -> tuple[Passage, ...]:
    return tuple(Passage(n + 1, CHUNKS[i].chunk_id, CHUNKS[i].doc_id, CHUNKS[i].start, CHUNKS[i].end, CHUNKS[i].body)
                 for n, i in enumerate(ids))


def _label(q: Question, ranked: tuple[int, ...], *, k: int, context: tuple[int, ...] | None = None,
           dropped: int = 0, label: str | None = "auto") -> str | None:
    """The label after retrieval of ``q`` ranked as ``ranked`` (chunk indices), with ``context``
    (chunk indices handed to the generator; None: retrieval only)."""
    relevant = {0: 1, 4: 1}
    first = next((r + 1 for r, i in enumerate(ranked) if i in relevant), None)
    if label == "auto":
        label = "retrieval_miss" if first is None else "ranking" if first > k else "in_context"
    ranking = Ranking(q.qid, ranked, tuple(float(-r) for r in range(len(ranked))))
    qr = QuestionRun(q, ranking, ranking, dropped_by_retriever=dropped,
                     context=None if context is None else _passages(*context))
    graded = Graded(np.zeros(0), 1, [], relevant, np.ones(len(q.evidence), bool), True, first)
    return lost_before_generation(label, qr, graded, CellView(CHUNKS, VERSIONS, k))


def test_the_order_lists_every_new_label_once_and_retrieval_only_cells_the_ones_before_generation():
    assert GENERATION_CELL_LABELS[:10] == ("unjudged", "parsing", "chunking", "unauthorized", "stale_version",
                                           "query", "retrieval_miss", "ranking", "partial_evidence", "context")
    assert len(set(GENERATION_CELL_LABELS)) == len(GENERATION_CELL_LABELS)
    assert "context" not in RETRIEVAL_LABELS and set(RETRIEVAL_LABELS) <= set(ANSWERABLE_LABELS)
    assert LOST_BEFORE_GENERATION.index("context") < ANSWERABLE_LABELS.index("error")


def test_older_versions_by_title_and_tenant_archived_or_effective_earlier():
    assert VERSIONS == {"policy": frozenset({"policy-2023"})}
    dated = {"a": Document("a", "", title="T", effective_at="2024-01-01"),
             "b": Document("b", "", title="T", effective_at="2023-01-01"),
             "c": Document("c", "", title="T", effective_at="2023-01-01", tenant="other")}
    assert older_versions(dated) == {"a": frozenset({"b"})}  # c: another tenant's document


def test_partial_evidence_some_but_not_all_spans_in_the_top_k():
    # Span 1 (policy#0) at rank 1, span 2 (other#1) at rank 3: k=2 has half the evidence.
    assert _label(TWO, (0, 3, 4), k=2) == "partial_evidence"
    assert _label(TWO, (0, 3, 4), k=3) == "in_context"
    assert _label(TWO, (0, 3, 4), k=2, context=(0, 3)) == "partial_evidence"  # before the context
    assert _label(ONE, (0,), k=1) == "in_context"  # one span: all or nothing
    # The whole evidence beyond k is ranking, not partial.
    assert _label(TWO, (3, 0, 4), k=1) == "ranking"


def test_context_a_relevant_chunk_in_the_top_k_cut_before_the_generator():
    # Both spans in the top 3, the budget kept the first two passages only: span 2 lost.
    assert _label(TWO, (0, 3, 4), k=3, context=(0, 3)) == "context"
    # One span, its only relevant chunk (rank 2) cut: nothing relevant in the context.
    assert _label(ONE, (3, 0), k=2, context=(3,)) == "context"
    assert _label(ONE, (3, 0), k=2, context=(3, 0)) == "in_context"
    # A parent passage holding the chunk keeps it (parent expansion loses nothing).
    parent = (Passage(1, "policy#p", "policy", 0, 100, "p" * 100),)
    ranking = Ranking("q1", (0,), (1.0,))
    qr = QuestionRun(ONE, ranking, ranking, context=parent)
    graded = Graded(np.zeros(0), 1, [], {0: 1}, np.ones(1, bool), True, 1)
    assert lost_before_generation("in_context", qr, graded, CellView(CHUNKS, VERSIONS, 1)) == "in_context"


def test_stale_version_the_archived_version_in_the_context_and_the_current_one_not():
    # The archived policy ranked first, the current one below k: stale, not ranking.
    assert _label(ONE, (2, 0), k=1) == "stale_version"
    assert _label(ONE, (2,), k=1) == "stale_version"  # current never retrieved: stale, not retrieval_miss
    assert _label(ONE, (2, 0), k=2, context=(2,)) == "stale_version"  # the budget kept the old one only
    assert _label(ONE, (2, 0), k=2) == "in_context"  # both in the top k: the current one is there
    assert _label(ONE, (3, 0), k=1) == "ranking"  # no old version: plain ranking
    # Multi-hop: the second span's document is current and present; the first's is replaced.
    assert _label(TWO, (2, 4, 0), k=2) == "stale_version"


def test_unauthorized_the_evidence_nowhere_in_the_ranking_while_unreadable_chunks_were_dropped():
    assert _label(ONE, (3, 1), k=2, dropped=2) == "unauthorized"
    assert _label(ONE, (3, 1), k=2) == "retrieval_miss"
    # Dropped passages cost a question only its evidence's absence: found below k is ranking.
    assert _label(ONE, (3, 0), k=1, dropped=2) == "ranking"
    assert _label(ONE, (2,), k=1, dropped=1) == "unauthorized"  # before stale_version


@pytest.mark.parametrize("label", ["unauthorized", "stale_version", "partial_evidence", "context"])
def test_a_question_lost_before_generation_keeps_its_label_whatever_the_answer(label):
    right = Answer("right", citations=(1,))
    assert final_label(True, label, right, 1.0, 1.0) == label
    assert final_label(True, label, Answer("", error="timeout"), float("nan"), float("nan")) == label


def test_unchanged_labels_pass_through():
    for label in ("unjudged", "chunking", None):
        assert _label(ONE, (2,), k=1, label=label) == label


def test_a_question_expecting_clarify_is_right_when_it_asked_for_every_fact_and_needs_no_citation():
    asked = Answer("", clarification="Is it an annual plan?")
    assert final_label(True, "in_context", asked, 1.0, float("nan"), clarify=True) == "correct"
    assert final_label(True, "in_context", asked, 0.0, float("nan"), clarify=True) == "generation"
    premature = Answer("Within 14 days [1].", citations=(1,))
    assert final_label(True, "in_context", premature, 0.0, 1.0, clarify=True) == "generation"
    assert final_label(True, "in_context", Answer("", refused=True), 0.0, float("nan"), clarify=True) == "false_refusal"
    assert final_label(True, "ranking", asked, 1.0, float("nan"), clarify=True) == "ranking"  # lost before


# Issue 43: a gold quote the parser lost (Question.lost) -- a question with one located span on
# "policy" and one quote of "other" the parse lost, and one that lost every quote.
PART_LOST = Question("q3", "?", True, (EvidenceSpan("policy", 0, 40),), lost=(LostEvidence("other"),))
ALL_LOST = Question("q4", "?", True, (), lost=(LostEvidence("policy"),))


def test_a_question_that_lost_every_quote_to_the_parser_is_parsing_not_unjudged():
    graded = Graded(np.zeros(0), 1, [1], {}, np.zeros(0, bool), True, None, (1,))
    assert retrieval_labels([ALL_LOST], [graded], 3) == ["parsing"]
    assert parsing_label("parsing", ALL_LOST) == "parsing"
    # Parsing is lost before generation: a right answer does not undo it.
    assert final_label(True, "parsing", Answer("right", citations=(1,)), 1.0, 1.0) == "parsing"


def test_a_partly_lost_question_is_parsing_only_when_its_located_evidence_went_as_far_as_it_could():
    # The located span in the top k (and in the context): the lost quote is what left it incomplete.
    # It is not partial_evidence: the coverage attribution reads is the located evidence's.
    assert parsing_label(_label(PART_LOST, (0, 3), k=2), PART_LOST) == "parsing"
    assert parsing_label(_label(PART_LOST, (0, 3), k=2, context=(0, 3)), PART_LOST) == "parsing"
    # A later stage lost the located evidence too: that stage's label stays.
    assert parsing_label(_label(PART_LOST, (3, 1, 0), k=2), PART_LOST) == "ranking"
    assert parsing_label(_label(PART_LOST, (3, 1), k=2), PART_LOST) == "retrieval_miss"
    assert parsing_label(_label(PART_LOST, (0, 3), k=2, context=(3,)), PART_LOST) == "context"
    # Nothing lost to the parser: in_context as before.
    assert parsing_label(_label(ONE, (0, 3), k=2), ONE) == "in_context"
