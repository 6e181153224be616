"""HNSW graph index (FAISS IndexHNSWFlat, inner product)."""

from __future__ import annotations

from typing import Any

from rag_bench.indexing.base import FaissIndex, positive
from rag_bench.indexing.tuning import check_target


class HnswIndex(FaissIndex):
    """Parameters
    ----------
    M:
        Graph degree (memory and recall grow with it).
    ef_construction:
        Beam width while building.
    ef_search:
        Beam width while searching: the recall/latency knob. FAISS returns fewer than k hits when
        ``ef_search`` < k or a selective access filter starves the beam; the ANN report measures
        that search as it is (a missing hit is a miss), while retrieval widens the beam (x4 per
        step, up to 3 steps) and then falls back to exact search to fill its ranking.
    target_recall:
        null (default): search with ``ef_search``. A number in (0, 1]: the cell sets ``ef_search``
        to the smallest value whose ann_recall@10 reaches it on half of its questions before it
        retrieves (:mod:`rag_bench.indexing.tuning`; the ANN report shows the choice and curve).
    """

    name = "hnsw"

    def __init__(self, M: int = 32, ef_construction: int = 200, ef_search: int = 64,
                 target_recall: float | None = None) -> None:
        super().__init__()
        self.target_recall = check_target(target_recall)
        self.M, self.ef_construction, self.ef_search = (positive("M", M), positive("ef_construction", ef_construction),
                                                        positive("ef_search", ef_search))

    def _make(self, dim: int, n: int) -> Any:
        import faiss

        index = faiss.IndexHNSWFlat(dim, self.M, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = self.ef_construction
        return index

    def _params(self, sel: Any, widen: int) -> Any:
        import faiss

        params = faiss.SearchParametersHNSW()  # type: ignore[attr-defined]  # missing from faiss' stubs
        params.efSearch = self.ef_search * 4 ** widen
        if sel is not None:
            params.sel = sel
        return params

    def _max_widen(self) -> int:
        return 3
