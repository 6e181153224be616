"""Sharing of built work (chunks, vectors, indexes, rankings) between the cells of a sweep.

All of it lives in one :class:`SharedWork` object that the runner creates and passes in: its
memory can be read (:meth:`SharedWork.stats`) and bounded (each kind of work is a small LRU), and
a test starts from a clean one. What remains at module level are memos of pure functions (text
in, value out), loaded models keyed by their weights' hash, and file digests keyed by stat
signature: each bounded and commented where it is defined, so it saves time and never changes a
result (tests/test_module_state.py lists them and fails on a new unbounded or undocumented one). The sweeper orders cells so
those sharing work run back to back. ``RAG_BENCH_SHARE=0`` turns all sharing off
(:mod:`rag_bench.switches`) — the in-process caches and the persistent generation cache (pass
``embedder.cache=false`` for embeddings) — so every cell is built from scratch: the "naive" arm of
``benchmarks/sweep.py``, and a test that sharing never changes a result.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sys
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Mapping
from functools import lru_cache
from typing import Any, TypeVar

import numpy as np

from rag_bench import switches

T = TypeVar("T")
_ABSENT = object()


class Lru(OrderedDict):  # type: ignore[type-arg]
    """A tiny LRU cache: explicit, bounded, process-local.

    ``pure=True``: a module-level memo of a pure function (keyed by content, e.g. a text's
    :func:`digest`), kept whatever ``RAG_BENCH_SHARE`` says, like the module's bounded
    ``lru_cache``s: its value is the same however often it is made, so keeping it is never sharing
    a cell's work."""

    def __init__(self, size: int, pure: bool = False) -> None:
        super().__init__()
        self.size = size
        self.pure = pure

    def __reduce__(self) -> tuple[type, tuple[int, bool]]:
        # Shared work is per process: a launcher that ships the app to a worker ships it empty.
        return (Lru, (self.size, self.pure))

    def get_or(self, key: Hashable, make: Callable[..., T], *args: Any) -> T:
        """The value under ``key``, made by ``make(*args)`` (and stored, evicting the oldest) when
        absent (the arguments given apart: a hit builds no closure)."""
        if not self.pure and not sharing_enabled():
            return make(*args)
        value = self.get(key, _ABSENT)  # two hashes of the key a hit, not three (tuples recompute theirs)
        if value is not _ABSENT:
            self.move_to_end(key)
            return value  # type: ignore[no-any-return]
        value = make(*args)
        self[key] = value
        while len(self) > self.size:
            self.popitem(last=False)
        return value


# Kinds of shared work and how many entries of each are kept (the sweeper's ordering makes the
# small numbers enough: cells that share work run back to back).
SIZES: Mapping[str, int] = {
    "chunks": 4,       # per (dataset, chunker[, embedder])
    "embedders": 2,    # per embedder config: the loaded model stays across cells
    "indexes": 2,      # per (chunks, retriever, embedder, index): a fitted retriever
    "queries": 8,      # per (question set, query transform): what each question is searched with
    "rankings": 8,     # per (index, depth): rankings and their latencies
    "reranked": 8,     # per (rankings, reranker)
    "graded": 8,       # per (final rankings, grading settings): the rankings' relevance grades
    "relevance": 4,    # per (passages, questions, grading settings): each question's relevant chunks
    "scored": 48,      # per (final rankings, grading settings, scorer, its parameters): a scorer's
                       # k-independent part (some six scorers share each ranking)
    "ann": 8,          # per (index, ks): the ANN-vs-exact report
    "tuned": 4,        # per (index, questions): index.target_recall's tuning
    "probes": 2,       # per (index, questions): the index laid open for tuning and the ANN report
    "vectors": 2,      # per (embedder, prefix, texts): chunk vectors
    "faiss": 3,        # per (vectors, index kind, params): a built FAISS index
    "bm25": 2,         # per (backend, k1, b, stopwords, texts): a BM25 backend
    "warned": 256,     # per warning text: the first cell of the sweep that printed it (the console
                       # says a warning every cell repeats once; each cell's metrics.json keeps it)
}


class SharedWork:
    """Work shared between cells in one process, by kind; each kind a bounded LRU (:data:`SIZES`)."""

    def __init__(self, sizes: Mapping[str, int] = SIZES) -> None:
        self._caches = {kind: Lru(n) for kind, n in sizes.items()}

    def get_or(self, kind: str, key: str, make: Callable[[], T]) -> T:
        """The ``kind`` of work under ``key``, made when absent (always made when sharing is off)."""
        return self._caches[kind].get_or(key, make)

    def clear(self) -> None:
        """Drop everything."""
        for cache in self._caches.values():
            cache.clear()

    def stats(self) -> dict[str, dict[str, int]]:
        """Entries and approximate bytes held per kind (arrays, texts, FAISS indexes counted)."""
        seen: dict[int, Any] = {}
        return {kind: {"entries": len(c), "bytes": sum(approx_bytes(v, seen) for v in c.values())}
                for kind, c in self._caches.items()}


def approx_bytes(value: Any, seen: dict[int, Any] | None = None, depth: int = 0) -> int:
    """Approximate memory held by ``value``: numpy buffers, strings, a FAISS index's own size,
    containers, dataclasses and plain objects walked (each object counted once; ``seen`` keeps
    the objects it has met alive, so an id is never reused within one measurement)."""
    seen = {} if seen is None else seen
    if id(value) in seen or depth > 8 or isinstance(value, SharedWork):  # a retriever's link back to the store
        return 0
    seen[id(value)] = value
    if isinstance(value, np.ndarray):
        return int(value.nbytes)
    if isinstance(value, (str, bytes)):
        return len(value)
    if isinstance(value, (int, float, bool)) or value is None:
        return 8
    nbytes = getattr(value, "nbytes", None)
    if callable(nbytes) and type(value).__module__.startswith("rag_bench"):
        return int(nbytes())
    if isinstance(value, Mapping):
        return sum(approx_bytes(k, seen, depth + 1) + approx_bytes(v, seen, depth + 1) for k, v in value.items())
    if isinstance(value, (list, tuple, set, frozenset)):
        return sum(approx_bytes(v, seen, depth + 1) for v in value) + 8 * len(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return sum(approx_bytes(getattr(value, f.name), seen, depth + 1) for f in dataclasses.fields(value))
    if hasattr(value, "__dict__") and type(value).__module__.startswith("rag_bench"):
        return sum(approx_bytes(v, seen, depth + 1) for v in vars(value).values())
    return sys.getsizeof(value, 64)


def sharing_enabled() -> bool:
    """False when sharing is switched off (``RAG_BENCH_SHARE=0``, :mod:`rag_bench.switches`)."""
    return switches.current().share


def digest(texts: Iterable[str]) -> str:
    """Content hash of a sequence of texts (order matters). A list of one text is hashed once per
    text and remembered (:func:`_text_digest`): the claim judge keys its memos by the digest of each
    passage, and the cells of a sweep hand it the same passages again and again."""
    if type(texts) is list and len(texts) == 1 and type(texts[0]) is str:
        return _text_digest(texts[0])
    return _digest(texts)


# Bounded, pure (a text's digest never changes); keyed by the text itself, whose hash Python keeps
# on the object, so a passage met again costs a dictionary lookup instead of encoding and hashing
# its kilobytes. It holds up to 16,384 texts alive (a sweep's passages and answers, a few MB).
@lru_cache(maxsize=1 << 14)
def _text_digest(text: str) -> str:
    return _digest((text,))


def _digest(texts: Iterable[str]) -> str:
    h = hashlib.sha256()
    for t in texts:
        h.update(t.encode())
        h.update(b"\0")
    return h.hexdigest()


def key(*parts: Any) -> str:
    """A cache key from JSON-able parts."""
    return json.dumps(parts, sort_keys=True, default=str)
