"""Fakes for unit tests of rag_bench's own logic (never standing in for a feature under test)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np

from rag_bench.embedding.base import EmbedStats


class KeywordEmbedder:
    """Bag-of-words vectors hashed into ``dim`` buckets, L2-normalised: exact and instant.

    Two texts are similar exactly when they share words, which makes expected rankings easy to
    derive by hand.
    """

    def __init__(self, dim: int = 256, query_prefix: str = "", document_prefix: str = "") -> None:
        self.dim, self.query_prefix, self.document_prefix = dim, query_prefix, document_prefix
        self.requested = 0
        self.seen: list[str] = []

    def _vec(self, text: str) -> np.ndarray:
        v = np.zeros(self.dim, np.float32)
        for w in re.findall(r"[a-z0-9]+", text.lower()):
            v[int(hashlib.md5(w.encode()).hexdigest(), 16) % self.dim] += 1.0
        n = np.linalg.norm(v)
        return v / n if n else v

    def _embed(self, texts: Sequence[str], prefix: str) -> np.ndarray:
        self.requested += len(texts)
        self.seen.extend(prefix + t for t in texts)
        return np.stack([self._vec(prefix + t) for t in texts]) if texts else np.zeros((0, self.dim), np.float32)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts, self.document_prefix)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts, self.query_prefix)

    def usage(self) -> EmbedStats:
        return EmbedStats(requested=self.requested, encoded=self.requested)
