"""Exact inner-product search (FAISS IndexFlatIP): the reference every ANN index is measured against."""

from __future__ import annotations

from typing import Any

from rag_bench.indexing.base import FaissIndex


class FlatIndex(FaissIndex):
    """Brute force: recall 1 by construction."""

    name = "flat"

    def _make(self, dim: int, n: int) -> Any:
        import faiss

        return faiss.IndexFlatIP(dim)
