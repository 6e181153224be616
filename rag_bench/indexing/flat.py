"""Exact inner-product search (FAISS IndexFlatIP): the reference every ANN index is measured against."""

from __future__ import annotations

from typing import Any

from rag_bench.indexing.base import FaissIndex
from rag_bench.indexing.tuning import check_target


class FlatIndex(FaissIndex):
    """Brute force: recall 1 by construction, so any ``target_recall`` is met as it is (accepted,
    so that one ``index.target_recall`` can be swept with ``index=flat,hnsw``; nothing is tuned)."""

    name = "flat"

    def __init__(self, target_recall: float | None = None) -> None:
        super().__init__()
        check_target(target_recall)  # validated, not kept: it changes nothing (nor the shared index)

    def _make(self, dim: int, n: int) -> Any:
        import faiss

        return faiss.IndexFlatIP(dim)
