"""Persistent, content-addressed embedding cache (see :mod:`rag_bench.storage` for the guarantees).

Key = sha256 of (model identity, prefix, text), length-prefixed so the parts cannot run together.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence

import numpy as np

from rag_bench.storage import BlobStore, default_cache_dir

__all__ = ["EmbeddingCache", "default_cache_dir", "text_key", "vector_bytes", "vector_from_bytes"]


def vector_bytes(v: np.ndarray) -> bytes:
    """A vector as stored: float32, little-endian machine order, contiguous."""
    return np.ascontiguousarray(v, dtype=np.float32).tobytes()


def vector_from_bytes(data: bytes) -> np.ndarray:
    """The stored vector (a read-only view of ``data``)."""
    return np.frombuffer(data, dtype=np.float32)


def text_key(model_id: str, prefix: str, text: str) -> str:
    """Cache key of one text for one model and prefix."""
    h = hashlib.sha256()
    for part in (model_id, prefix, text):
        b = part.encode("utf-8")
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)
    return h.hexdigest()


class EmbeddingCache(BlobStore):
    """float32 vectors by key, shared by every cell, sweep and process using the same file."""

    table = "vectors"

    def _valid(self, data: bytes) -> bool:
        return len(data) > 0 and len(data) % 4 == 0

    def get_many(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        """Vectors found for ``keys`` (missing and corrupt keys are absent from the result)."""
        return {k: vector_from_bytes(v) for k, v in self.get_bytes(keys).items()}

    def put_many(self, items: Iterable[tuple[str, np.ndarray]]) -> None:
        """Store vectors; one transaction, so a kill leaves all of them or none."""
        self.put_bytes((k, vector_bytes(v)) for k, v in items)
