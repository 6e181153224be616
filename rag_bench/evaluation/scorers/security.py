"""Security (metrics.json ``security``, sums over questions; the release policy requires the
unauthorized ones to be 0): chunks in a question's final ranking the asker may not read, the
chunks each stage returned that the asker may not read (dropped before anything downstream saw
them), and chunks of archived documents."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from rag_bench.metrics import measures

UNAUTHORIZED, FROM_RETRIEVER, FROM_RERANKER, STALE = measures.SECURITY


def with_stage_counts(frame: pd.DataFrame, from_retriever: Sequence[int], from_reranker: Sequence[int]) -> pd.DataFrame:
    """``frame`` (one row per question, with the final ranking's :data:`UNAUTHORIZED` and
    :data:`STALE` counts) with what each stage dropped counted too: into :data:`UNAUTHORIZED`,
    and per stage right after it."""
    retriever = np.asarray(from_retriever, np.int64)
    reranker = np.asarray(from_reranker, np.int64)
    if retriever.any() or reranker.any():
        frame = frame.assign(**{UNAUTHORIZED.column: frame[UNAUTHORIZED.column].to_numpy(np.int64)
                                + retriever + reranker})
    frame.insert(frame.columns.get_loc(UNAUTHORIZED.column) + 1, FROM_RETRIEVER.column, retriever)
    frame.insert(frame.columns.get_loc(FROM_RETRIEVER.column) + 1, FROM_RERANKER.column, reranker)
    return frame
