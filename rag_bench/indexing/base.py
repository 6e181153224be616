"""Vector index protocol and the filtered search every index shares.

The asker's access filter goes *into* the FAISS search (an ``IDSelectorBitmap``), so forbidden
vectors are never candidates. There are two searches:

* :meth:`VectorIndex.search_as_configured` is one search with the configured parameters
  (``ef_search``, ``nprobe``): what the index itself returns, fewer than k hits included (HNSW
  with ``ef_search`` < k, a beam or probed lists holding too few allowed vectors under a
  selective filter). The ANN report measures this search: a missing hit is a miss.
* :meth:`VectorIndex.search` is what retrieval uses: a query the configured search leaves short
  of k hits, with or without a filter, is searched again with a wider beam / more lists, and
  finally answered exactly over the allowed vectors, so a query gets k results whenever k allowed
  vectors exist (downstream stages and measures see rankings of the depth they asked for), and
  retrieval's latency includes the wider searches. The ANN report counts the queries the
  configured search leaves short at its largest k (``ann/underfill_fallbacks``).
"""

from __future__ import annotations

import inspect
import time
from typing import Any, Protocol

import numpy as np

from rag_bench.components import optional
from rag_bench.errors import ConfigError


def _selector(mask: np.ndarray) -> Any:
    import faiss

    bits = np.packbits(mask.astype(np.uint8), bitorder="little")
    sel = faiss.IDSelectorBitmap(mask.size, faiss.swig_ptr(bits))
    sel._bits = bits  # type: ignore[attr-defined]  # keep the buffer alive as long as the selector
    return sel


class VectorIndex(Protocol):
    """A vector index over L2-normalised vectors (score = inner product = cosine).

    ``name`` names the index kind (``flat`` is exact; any other is measured against flat) and
    ``build_s`` the last build's seconds.
    """

    name: str
    build_s: float

    def build(self, vectors: np.ndarray) -> None:
        """Index ``vectors`` (n, dim) float32; ids are row numbers."""
        ...

    def search(self, queries: np.ndarray, k: int, mask: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Retrieval's search: ``(scores, ids)`` of shape (len(queries), k), ids -1 only where fewer
        than k allowed vectors exist (a search the index leaves short is widened or made exact)."""
        ...

    @optional
    def search_as_configured(self, queries: np.ndarray, k: int,
                             mask: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The index exactly as configured, what the ANN report measures: ``(scores, ids)`` of shape
        (len(queries), k), ids -1 wherever this one search found fewer than k allowed vectors.
        Default: :meth:`search` (right for an index whose search never widens itself)."""
        return self.search(queries, k, mask)

    def params(self) -> dict[str, Any]:
        """The parameters that change results (part of cache keys)."""
        ...

    def nbytes(self) -> int:
        """Size of the index in bytes."""
        ...


class FaissIndex:
    """Base for FAISS inner-product indexes over L2-normalised vectors (score = cosine)."""

    name = "base"

    def __init__(self) -> None:
        self.index: Any = None
        self.n = 0
        self.build_s = 0.0

    def _make(self, dim: int, n: int) -> Any:
        raise NotImplementedError

    def _params(self, sel: Any, widen: int) -> Any:
        """Search parameters at widening step ``widen`` (0 = as configured)."""
        import faiss

        return faiss.SearchParameters(sel=sel) if sel is not None else None  # type: ignore[call-arg]

    def _max_widen(self) -> int:
        return 0

    def build(self, vectors: np.ndarray) -> None:
        """Index ``vectors`` (n, dim) float32; ids are row numbers."""
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        t0 = time.perf_counter()
        self.n = vectors.shape[0]
        self.index = self._make(vectors.shape[1], self.n)
        if not self.index.is_trained:
            self.index.train(vectors)
        self.index.add(vectors)
        self._vectors = vectors
        self.build_s = time.perf_counter() - t0

    def params(self) -> dict[str, Any]:
        """The constructor parameters (what determines the built index besides the vectors)."""
        names = inspect.signature(type(self)).parameters
        return {k: v for k, v in vars(self).items() if k in names}

    def nbytes(self) -> int:
        """Size of the serialised index in bytes."""
        import faiss

        return int(faiss.serialize_index(self.index).nbytes)

    def search_as_configured(self, queries: np.ndarray, k: int,
                             mask: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Top-``k`` (scores, ids) per query among allowed vectors from one FAISS search with the
        configured parameters; ids -1 wherever that search found fewer than ``k``."""
        return self._search(queries, k, mask, fill=False)

    def search(self, queries: np.ndarray, k: int, mask: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Top-``k`` (scores, ids) per query among allowed vectors; ids are -1 only when fewer than
        ``k`` vectors are allowed in total (a short configured search is widened, then made exact)."""
        return self._search(queries, k, mask, fill=True)

    def _search(self, queries: np.ndarray, k: int, mask: np.ndarray | None,
                fill: bool) -> tuple[np.ndarray, np.ndarray]:
        queries = np.ascontiguousarray(queries, dtype=np.float32)
        k_eff = min(k, self.n)
        if k_eff == 0 or queries.shape[0] == 0:
            return np.zeros((queries.shape[0], k), np.float32), -np.ones((queries.shape[0], k), np.int64)
        sel = _selector(mask) if mask is not None else None
        scores, ids = self.index.search(queries, k_eff, params=self._params(sel, 0))
        want = min(k_eff, self.n if mask is None else int(mask.sum()))
        short = np.flatnonzero((ids >= 0).sum(axis=1) < want) if fill else np.empty(0, np.int64)
        widen = 1
        while short.size and widen <= self._max_widen():
            s2, i2 = self.index.search(queries[short], k_eff, params=self._params(sel, widen))
            scores[short], ids[short] = s2, i2
            short = short[(i2 >= 0).sum(axis=1) < want]
            widen += 1
        if short.size:
            s2, i2 = _exact(self._vectors, queries[short], k_eff, mask)
            scores[short], ids[short] = s2, i2
        if k_eff < k:
            pad = k - k_eff
            scores = np.hstack([scores, np.zeros((scores.shape[0], pad), np.float32)])
            ids = np.hstack([ids, -np.ones((ids.shape[0], pad), np.int64)])
        return scores, ids


def _exact(vectors: np.ndarray, queries: np.ndarray, k: int, mask: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Exact inner-product top-k over allowed rows (ties by row number)."""
    sims = queries @ vectors.T
    if mask is not None:
        sims = np.where(mask[None, :], sims, -np.inf)
    order = np.argsort(-sims, axis=1, kind="stable")[:, :k]
    top = np.take_along_axis(sims, order, axis=1)
    ids = np.where(np.isfinite(top), order, -1)
    return np.where(np.isfinite(top), top, 0).astype(np.float32), ids.astype(np.int64)


def positive(name: str, value: Any) -> int:
    """Validate a positive integer index parameter."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"index.{name} must be an integer >= 1, got {value!r} -- fix: e.g. index.{name}=16")
    return value
