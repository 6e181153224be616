"""Inverted-file index (FAISS IndexIVFFlat, inner product), trained on the corpus vectors."""

from __future__ import annotations

import logging
from typing import Any

from rag_bench.indexing.base import FaissIndex, positive
from rag_bench.indexing.tuning import check_target

log = logging.getLogger(__name__)


class IvfIndex(FaissIndex):
    """Parameters
    ----------
    nlist:
        Number of k-means cells (capped at the number of vectors).
    nprobe:
        Cells visited per query: the recall/latency knob. When the probed cells hold fewer than k
        allowed vectors (few probes, a selective access filter) the ANN report measures that
        search as it is (a missing hit is a miss), while retrieval probes more cells (x4 per
        step, up to all of them) and then falls back to exact search to fill its ranking.
    target_recall:
        null (default): probe ``nprobe`` cells. A number in (0, 1]: the cell sets ``nprobe`` to the
        smallest value whose ann_recall@10 reaches it on half of its questions before it retrieves
        (:mod:`rag_bench.indexing.tuning`; the ANN report shows the choice and curve).
    """

    name = "ivf"

    def __init__(self, nlist: int = 32, nprobe: int = 4, target_recall: float | None = None) -> None:
        super().__init__()
        self.target_recall = check_target(target_recall)
        self.nlist, self.nprobe = positive("nlist", nlist), positive("nprobe", nprobe)
        self._nlist_used = nlist

    def _make(self, dim: int, n: int) -> Any:
        import faiss

        self._nlist_used = max(1, min(self.nlist, n))
        if self._nlist_used < self.nlist:
            log.warning("index.nlist=%d > %d vectors: using nlist=%d", self.nlist, n, self._nlist_used)
        quantizer = faiss.IndexFlatIP(dim)
        index = faiss.IndexIVFFlat(quantizer, dim, self._nlist_used, faiss.METRIC_INNER_PRODUCT)
        index.cp.seed = 1234  # deterministic k-means
        return index

    def _params(self, sel: Any, widen: int) -> Any:
        import faiss

        params = faiss.SearchParametersIVF()
        params.nprobe = min(self._nlist_used, self.nprobe * 4 ** widen)
        if sel is not None:
            params.sel = sel
        return params

    def _max_widen(self) -> int:
        steps, probe = 0, self.nprobe
        while probe < self._nlist_used:
            probe *= 4
            steps += 1
        return steps
