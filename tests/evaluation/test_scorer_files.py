"""The evidence and failure-label scorers (rag_bench/evaluation/scorers/evidence.py,
failure_labels.py): their measures, columns and tallies."""

from __future__ import annotations

import numpy as np
import pandas as pd

from rag_bench.evaluation.scorers import evidence, failure_labels
from rag_bench.records import Chunk, EvidenceSpan, Question

TWO_HOP = Question("q1", "?", True, (EvidenceSpan("d", 0, 10), EvidenceSpan("d", 20, 30)))


def test_evidence_columns_at_each_cutoff_cutoff_major() -> None:
    top = [Chunk("c1", "d", 0, 10, "x" * 10), Chunk("c2", "d", 40, 50, "y" * 10), Chunk("c3", "d", 20, 30, "z" * 10)]
    cols = evidence.columns(TWO_HOP, top, evidence.cutoffs([3, 1], 2), min_coverage=0.5)
    assert cols == {"evidence_recall@1": 0.5, "complete@1": 0.0, "evidence_recall@2": 0.5, "complete@2": 0.0,
                    "evidence_recall@3": 1.0, "complete@3": 1.0}
    assert [m.key for m in evidence.section_measures([1, 3])] == [
        "evidence/evidence_recall@1", "evidence/evidence_recall@3", "evidence/complete@1", "evidence/complete@3"]


def test_retrieval_labels_and_their_tally() -> None:
    unanswerable = Question("q2", "?", False)
    graded_zero = Question("q3", "?", True, (EvidenceSpan("d", 0, 10, grade=0),))
    found = [np.array([True, True]), np.array([], bool), np.array([True])]
    labels = failure_labels.retrieval_labels([TWO_HOP, unanswerable, graded_zero], found, [True, False, False],
                                             [4.0, None, None], 3)
    assert labels == ["ranking", None, "unjudged"]  # rank 4 > k 3
    assert failure_labels.retrieval_labels([TWO_HOP], [np.array([True, False])], [True], [float("nan")], 3) \
        == ["chunking"]
    # Passages that are not a chunking of the corpus never blame the chunker.
    assert failure_labels.retrieval_labels([TWO_HOP], [np.array([True, False])], [True], [float("nan")], 3,
                                           attribute_chunking=False) == ["retrieval_miss"]
    frame = pd.DataFrame({failure_labels.COLUMN: ["ranking", "ranking", "unjudged"]})
    assert failure_labels.tally(frame, generated=False) == {"unjudged": 1, "chunking": 0, "retrieval_miss": 0,
                                                            "ranking": 2, "in_context": 0}
    assert set(failure_labels.tally(frame, generated=True)) == {m.name for m in failure_labels.FAILURES}
