"""The evidence and attribution scorers (rag_bench/evaluation/scorers/evidence.py,
attribution.py): their measures, columns and tallies."""

from __future__ import annotations

import numpy as np

from rag_bench.domain import Chunk, Dataset, Document, EvidenceSpan, Question, Ranking
from rag_bench.evaluation.grade import Graded
from rag_bench.evaluation.run import QuestionRun, SystemRun
from rag_bench.evaluation.scorer import Settings
from rag_bench.evaluation.scorers import attribution, evidence

TWO_HOP = Question("q1", "?", True, (EvidenceSpan("d", 0, 10), EvidenceSpan("d", 20, 30)))


def test_evidence_columns_at_each_cutoff_cutoff_major() -> None:
    top = [Chunk("c1", "d", 0, 10, "x" * 10), Chunk("c2", "d", 40, 50, "y" * 10), Chunk("c3", "d", 20, 30, "z" * 10)]
    ranking = Ranking("q1", (0, 1, 2), (3.0, 2.0, 1.0))
    run = SystemRun(Dataset("t", "", "native", {"d": Document("d", "x" * 60)}, (TWO_HOP,)), top,
                    (QuestionRun(TWO_HOP, ranking, ranking),))
    cols = evidence._columns(run, evidence.cutoffs([3, 1], 2), 0.5)
    assert {k: v[0] for k, v in cols.items()} == {"evidence_recall@1": 0.5, "complete@1": 0.0,
                                                  "evidence_recall@2": 0.5, "complete@2": 0.0,
                                                  "evidence_recall@3": 1.0, "complete@3": 1.0}
    assert [m.key for m in evidence.SCORER.measures(run, Settings(ks=(1, 3), k=3))] == [
        "evidence/evidence_recall@1", "evidence/evidence_recall@3", "evidence/complete@1", "evidence/complete@3"]


def _graded(found, judged, first) -> Graded:
    return Graded(np.zeros(0), 0, [], {}, np.asarray(found, bool), judged, first)


def test_retrieval_labels_and_their_tally() -> None:
    unanswerable = Question("q2", "?", False)
    graded_zero = Question("q3", "?", True, (EvidenceSpan("d", 0, 10, grade=0),))
    labels = attribution.retrieval_labels([TWO_HOP, unanswerable, graded_zero],
                                          [_graded([True, True], True, 4), _graded([], False, None),
                                           _graded([True], False, None)], 3)
    assert labels == ["ranking", None, "unjudged"]  # rank 4 > k 3
    assert attribution.retrieval_labels([TWO_HOP], [_graded([True, False], True, None)], 3) == ["chunking"]
    # Passages that are not a chunking of the corpus never blame the chunker.
    assert attribution.retrieval_labels([TWO_HOP], [_graded([True, False], True, None)], 3,
                                        attribute_chunking=False) == ["retrieval_miss"]
    assert attribution.tally(["ranking", "ranking", "unjudged"], answered=False) == {
        "unjudged": 1, "parsing": 0, "chunking": 0, "unauthorized": 0, "stale_version": 0, "retrieval_miss": 0, "ranking": 2,
        "partial_evidence": 0, "in_context": 0}
    assert set(attribution.tally([], answered=True, transformed=True)) == {m.name for m in attribution.FAILURES}
    assert set(attribution.tally([], answered=True)) == {m.name for m in attribution.FAILURES} - {"query"}
