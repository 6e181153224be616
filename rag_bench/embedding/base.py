"""Embedder protocol and the usage counters an embedder reports."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from rag_bench.components import optional

# Encoding this many texts or more is announced on the console (a model's load and the encoding
# took ~47 s of the demo's first dense cell with no line).
NOTICE_TEXTS = 100


@dataclass(frozen=True)
class EmbedStats:
    """What an embedder did so far: texts requested, served from cache, encoded by the model."""

    requested: int = 0
    cache_hits: int = 0
    encoded: int = 0
    encode_s: float = 0.0

    def since(self, before: EmbedStats) -> EmbedStats:
        """The work done between ``before`` and this reading."""
        return EmbedStats(self.requested - before.requested, self.cache_hits - before.cache_hits,
                          self.encoded - before.encoded, self.encode_s - before.encode_s)


class Embedder(Protocol):
    """Texts in, L2-normalised float32 vectors out, ``(len(texts), dim)``, same order.

    An embedder may also carry ``identity`` (a string naming model and weights): when it does,
    vectors and indexes built from it are shared between cells, keyed by it.
    """

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of chunk texts."""
        ...

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of questions."""
        ...

    @optional
    def usage(self) -> EmbedStats:
        """Counters so far (the cell reports their difference as its embedding cost); default none."""
        return EmbedStats()
