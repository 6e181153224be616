"""LanceDB (embedded) vector index with its own ANN indexes: IVF-PQ and IVF-HNSW-SQ.

The vectors are written to a LanceDB table in a fresh private folder per built index
(``tempfile.mkdtemp``: unique name, mode 0700, never a path taken from config or data), so
concurrent cells never share or overwrite one another's files; the folder is removed when the
index is garbage-collected or the process exits.

The asker's access filter goes *into* LanceDB's search as a SQL predicate on the row number with
``prefilter=True``: LanceDB applies it before the vector search, so forbidden vectors are never
candidates (with post-filtering a selective filter would leave the top-k short; the tests
measure both). Scores are recomputed as inner products of the stored float32 vectors, so the
ranking's scores are exact cosines whatever the index quantises (PQ, SQ) and ties are broken by
row number downstream as for FAISS.

``index_type: flat`` builds no ANN index: LanceDB then searches exhaustively, the flat-equivalent
setting whose rankings equal FAISS flat's.
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
import tempfile
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from rag_bench.errors import ConfigError
from rag_bench.indexing.base import _exact, positive
from rag_bench.indexing.tuning import check_target

log = logging.getLogger(__name__)

INDEX_TYPES = ("IVF_PQ", "IVF_HNSW_SQ", "flat")
MIN_TRAIN_ROWS = 256  # PQ/SQ codebooks need at least 2**num_bits rows
ROWS_PER_PARTITION = 256  # LanceDB's IVF training sample per list


@contextmanager
def _foreign_datasets_hidden() -> Iterator[None]:
    """Hide a ``datasets`` module that is not Hugging Face's from lancedb while it registers its
    converters. lancedb registers one for every optional library already imported, by module name
    (``"datasets" in sys.modules`` -> ``from datasets import Dataset``), at import and on every
    ``create_table``. A folder named ``datasets/`` on ``sys.path`` -- a project's data folder, like
    this repository's, with the working directory on the path under ``python -m`` or in a notebook
    -- is imported as a namespace package when transformers probes for Hugging Face datasets, and
    lancedb's import then fails with ``cannot import name 'Dataset' from 'datasets'``."""
    foreign = sys.modules.get("datasets")
    if foreign is None or hasattr(foreign, "Dataset"):
        yield
        return
    del sys.modules["datasets"]
    try:
        yield
    finally:
        sys.modules.setdefault("datasets", foreign)


def _where(mask: np.ndarray) -> str:
    """SQL predicate on ``row`` allowing exactly the rows of ``mask`` (the shorter of IN / NOT IN)."""
    allowed = np.flatnonzero(mask)
    if allowed.size <= mask.size - allowed.size:
        return f"row IN ({','.join(map(str, allowed.tolist()))})"
    forbidden = np.flatnonzero(~mask)
    return f"row NOT IN ({','.join(map(str, forbidden.tolist()))})" if forbidden.size else "true"


class LanceDbIndex:
    """Parameters
    ----------
    index_type:
        ``IVF_PQ`` (product-quantised lists), ``IVF_HNSW_SQ`` (an HNSW graph per list over
        scalar-quantised vectors) or ``flat`` (no ANN index: exhaustive search).
    num_partitions:
        IVF lists (capped at one per 256 vectors, as LanceDB trains them).
    nprobe:
        Lists visited per query: the recall/latency knob. Retrieval probes more (x4 per step, up
        to all) and then searches exactly when the configured search leaves a query short.
    num_sub_vectors:
        PQ sub-vectors (must divide the dimension; 0 = LanceDB's default). IVF_PQ only.
    ef_search:
        HNSW beam width per list (IVF_HNSW_SQ only); a search for k hits uses at least k (LanceDB
        raises for a beam narrower than k).
    refine_factor:
        Re-rank ``refine_factor * k`` candidates on full vectors (0 = off).
    prefilter:
        Apply the access filter before the vector search (default, and what retrieval needs);
        ``false`` filters LanceDB's top-k afterwards (measured in the tests; never leaks, but
        leaves queries short).
    target_recall:
        null (default): probe ``nprobe`` lists. A number in (0, 1]: the cell sets ``nprobe`` to the
        smallest value whose ann_recall@10 reaches it on half of its questions before it retrieves
        (:mod:`rag_bench.indexing.tuning`; the ANN report shows the choice and curve).
    """

    name = "lancedb"

    def __init__(self, index_type: str = "IVF_PQ", num_partitions: int = 32, nprobe: int = 8,
                 num_sub_vectors: int = 0, ef_search: int = 64, refine_factor: int = 0,
                 prefilter: bool = True, target_recall: float | None = None) -> None:
        if index_type not in INDEX_TYPES:
            raise ConfigError(f"index.index_type must be one of {', '.join(INDEX_TYPES)}, got {index_type!r} "
                              f"-- fix: e.g. index.index_type=IVF_PQ")
        if isinstance(num_sub_vectors, bool) or not isinstance(num_sub_vectors, int) or num_sub_vectors < 0:
            raise ConfigError(f"index.num_sub_vectors must be an integer >= 0, got {num_sub_vectors!r} "
                              f"-- fix: e.g. index.num_sub_vectors=0 (LanceDB's default)")
        if isinstance(refine_factor, bool) or not isinstance(refine_factor, int) or refine_factor < 0:
            raise ConfigError(f"index.refine_factor must be an integer >= 0, got {refine_factor!r} "
                              f"-- fix: e.g. index.refine_factor=0")
        if not isinstance(prefilter, bool):
            raise ConfigError(f"index.prefilter must be true or false, got {prefilter!r} -- fix: index.prefilter=true")
        self.index_type, self.num_sub_vectors, self.refine_factor = index_type, num_sub_vectors, refine_factor
        self.num_partitions, self.nprobe = positive("num_partitions", num_partitions), positive("nprobe", nprobe)
        self.ef_search, self.prefilter = positive("ef_search", ef_search), prefilter
        self.target_recall = check_target(target_recall)
        self.build_s = 0.0
        self.n = 0
        self._partitions = 1
        self._ann = False
        self._dir: str | None = None
        self._table: Any = None

    def params(self) -> dict[str, Any]:
        """The constructor parameters (what determines the built index besides the vectors)."""
        return {k: getattr(self, k) for k in ("index_type", "num_partitions", "nprobe", "num_sub_vectors",
                                              "ef_search", "refine_factor", "prefilter", "target_recall")}

    def build(self, vectors: np.ndarray) -> None:
        """Write ``vectors`` (n, dim) float32 to a private LanceDB table and build its ANN index."""
        import pyarrow as pa

        with _foreign_datasets_hidden():
            import lancedb

        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        t0 = time.perf_counter()
        self.n, dim = vectors.shape
        self._vectors = vectors
        self._dir = tempfile.mkdtemp(prefix="rag_bench-lancedb-")
        weakref.finalize(self, shutil.rmtree, self._dir, True)
        data = pa.table({"row": pa.array(np.arange(self.n, dtype=np.int64)),
                         "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), dim)})
        with _foreign_datasets_hidden():
            self._table = lancedb.connect(self._dir).create_table("chunks", data=data)
        self._ann = self.index_type != "flat" and self.n >= MIN_TRAIN_ROWS
        if self.index_type != "flat" and not self._ann:
            log.warning("index=lancedb: %d vectors < %d, too few to train %s; searching exhaustively",
                        self.n, MIN_TRAIN_ROWS, self.index_type)
        if self._ann:
            # LanceDB trains at most one list per 256 rows (it warns "training 11 of the 64 requested
            # IVF partitions" for 3,000 rows): the lists that exist are what nprobe can visit.
            self._partitions = max(1, min(self.num_partitions, self.n // ROWS_PER_PARTITION))
            if self._partitions < self.num_partitions:
                log.warning("index.num_partitions=%d too many for %d vectors: using %d",
                            self.num_partitions, self.n, self._partitions)
            from lancedb.index import HnswSq, IvfPq

            config: Any = HnswSq(distance_type="dot", num_partitions=self._partitions)
            if self.index_type == "IVF_PQ":
                if self.num_sub_vectors and dim % self.num_sub_vectors:
                    raise ConfigError(f"index.num_sub_vectors={self.num_sub_vectors} does not divide the "
                                      f"embedding dimension {dim} -- fix: a divisor of {dim}, or 0")
                config = IvfPq(distance_type="dot", num_partitions=self._partitions,
                               num_sub_vectors=self.num_sub_vectors or None)
            self._table.create_index("vector", config=config)
        self.build_s = time.perf_counter() - t0

    def nbytes(self) -> int:
        """Bytes on disk of the table and its index."""
        if self._dir is None:
            return 0
        return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(self._dir) for f in files)

    def _one(self, query: np.ndarray, k: int, where: str | None, nprobe: int) -> np.ndarray:
        q = self._table.search(query, vector_column_name="vector").distance_type("dot").limit(k).select(["row", "_distance"])
        if self._ann:
            q = q.nprobes(nprobe)
            if self.index_type == "IVF_HNSW_SQ":
                q = q.ef(max(self.ef_search, k))  # LanceDB refuses ef < k ("ef must be >= k")
            if self.refine_factor:
                q = q.refine_factor(self.refine_factor)
        if where is not None:
            q = q.where(where, prefilter=self.prefilter)
        return np.asarray(q.to_arrow()["row"].to_numpy(), dtype=np.int64)

    def search_as_configured(self, queries: np.ndarray, k: int,
                             mask: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Top-``k`` per query from one LanceDB search with the configured parameters; ids -1
        wherever it returned fewer than ``k`` allowed rows."""
        return self._search(queries, k, mask, fill=False)

    def search(self, queries: np.ndarray, k: int, mask: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Top-``k`` per query among allowed rows; a short configured search is widened (nprobe x4
        per step, up to all lists), then made exact, so ids are -1 only where fewer than ``k`` rows
        are allowed."""
        return self._search(queries, k, mask, fill=True)

    def _search(self, queries: np.ndarray, k: int, mask: np.ndarray | None,
                fill: bool) -> tuple[np.ndarray, np.ndarray]:
        queries = np.ascontiguousarray(queries, dtype=np.float32)
        nq = queries.shape[0]
        scores, ids = np.zeros((nq, k), np.float32), -np.ones((nq, k), np.int64)
        allowed = self.n if mask is None else int(mask.sum())
        want = min(k, allowed)
        if want == 0 or nq == 0:
            return scores, ids
        where = None if mask is None or allowed == self.n else _where(mask)
        for r in range(nq):
            nprobe = self.nprobe
            got = self._one(queries[r], want, where, nprobe)
            if mask is not None:  # post-filtering may return forbidden rows: never let one through
                got = got[mask[got]]
            while fill and got.size < want and self._ann and nprobe < self._partitions:
                nprobe = min(self._partitions, nprobe * 4)
                got = self._one(queries[r], want, where, nprobe)
                got = got[mask[got]] if mask is not None else got
            if fill and got.size < want:
                _, exact = _exact(self._vectors, queries[r:r + 1], want, mask)
                got = exact[0][exact[0] >= 0]
            # exact scores, summed per row in float64 so that equal vectors get equal scores
            sims = (self._vectors[got].astype(np.float64) * queries[r].astype(np.float64)).sum(axis=1)
            order = np.lexsort((got, -sims))  # descending score, ties by row number
            ids[r, :got.size], scores[r, :got.size] = got[order], sims[order]
        return scores, ids
