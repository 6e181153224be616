"""Citations: do the passages an answer cites hold what it needs (metrics.json ``citation``)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rag_bench.metrics import measures
from rag_bench.metrics.generation import citation_precision, citation_recall
from rag_bench.records import Answer, EvidenceSpan, Passage

PRECISION, RECALL, INVALID = measures.CITATION


def citation_columns(a: Answer, passages: Sequence[Passage], evidence: Sequence[EvidenceSpan], *, ok: bool,
                     answerable: bool, min_coverage: float) -> dict[str, float]:
    """One question's citation measures (NaN where undefined: a failed call; recall needs evidence)."""
    return {
        PRECISION.column: citation_precision(a, passages, evidence, min_coverage=min_coverage) if ok else np.nan,
        RECALL.column: citation_recall(a, passages, evidence, min_coverage=min_coverage)
        if ok and answerable else np.nan,
        INVALID.column: float(a.invalid_citations) if ok else np.nan,
    }
