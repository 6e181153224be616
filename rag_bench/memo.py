"""Process-wide sharing of built work (chunks, vectors, indexes, rankings) between sweep cells.

Each kind of work has a small LRU, so memory stays bounded; the sweeper orders cells so those
sharing work run back to back. ``RAG_BENCH_SHARE=0`` turns all sharing off — the in-process caches
and the persistent generation cache (pass ``embedder.cache=false`` for embeddings) — so every
cell is built from scratch: the "naive" arm of ``benchmarks/sweep.py``, and a test that sharing
never changes a result.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

T = TypeVar("T")
SHARE_ENV = "RAG_BENCH_SHARE"


class Lru(OrderedDict):
    """A tiny LRU cache: explicit, bounded, process-local."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size

    def get_or(self, key: str, make: Callable[[], T]) -> T:
        """The value under ``key``, made (and stored, evicting the oldest) when absent."""
        if not sharing_enabled():
            return make()
        if key in self:
            self.move_to_end(key)
            return self[key]
        value = make()
        self[key] = value
        while len(self) > self.size:
            self.popitem(last=False)
        return value


def sharing_enabled() -> bool:
    """False when ``RAG_BENCH_SHARE=0``."""
    return os.environ.get(SHARE_ENV, "1") != "0"


def digest(texts: Iterable[str]) -> str:
    """Content hash of a sequence of texts (order matters)."""
    h = hashlib.sha256()
    for t in texts:
        h.update(t.encode())
        h.update(b"\0")
    return h.hexdigest()


def key(*parts: Any) -> str:
    """A cache key from JSON-able parts."""
    return json.dumps(parts, sort_keys=True, default=str)
