"""Abstention: refusing the unanswerable, answering the answerable (metrics.json ``abstention``;
the top-1 score threshold analysis is :func:`rag_bench.evaluation.summary.threshold_analysis`)."""

from __future__ import annotations

import numpy as np

from rag_bench.metrics import measures
from rag_bench.records import Answer

CORRECT_REFUSAL, UNSUPPORTED, FALSE_REFUSAL = measures.ABSTENTION


def abstention_columns(a: Answer, *, ok: bool, answerable: bool) -> dict[str, float]:
    """One question's refusal measures (NaN where undefined: a failed call, or the other kind of question)."""
    return {
        CORRECT_REFUSAL.column: float(a.refused) if ok and not answerable else np.nan,
        UNSUPPORTED.column: float(not a.refused) if ok and not answerable else np.nan,
        FALSE_REFUSAL.column: float(a.refused) if ok and answerable else np.nan,
    }
