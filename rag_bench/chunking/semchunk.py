"""semchunk as a chunker (``pip install 'rag-bench-harness[splitters]'``): semantic-boundary splitting with
offsets, counted in words or characters (no tokenizer download)."""

from __future__ import annotations

from typing import Any, Literal

from rag_bench.chunking.base import DocumentChunker, make_chunks, positive_int
from rag_bench.domain import Chunk, Document
from rag_bench.errors import ConfigError


def _words(text: str) -> int:
    return len(text.split())


class SemchunkChunker(DocumentChunker):
    """Parameters
    ----------
    size:
        Chunk size in ``unit``: characters by default, as every chunker's ``size``.
    unit:
        ``chars`` (default) or ``words``: how semchunk counts a chunk's size.
    overlap:
        Share of ``size`` (< 1) or number of units that consecutive chunks share; 0 = none.
    """

    def __init__(self, size: int = 800, unit: Literal["chars", "words"] = "chars", overlap: float = 0.0) -> None:
        self.size = positive_int("size", size)
        if not 0 <= overlap < max(1, self.size):
            raise ConfigError(f"chunker.overlap must be in [0, size), got {overlap!r} -- fix: chunker.overlap=0.1")
        try:
            import semchunk
        except ImportError as exc:
            raise ConfigError("chunker=semchunk needs semchunk -- fix: pip install 'rag-bench-harness[splitters]'") from exc
        counter = _words if unit == "words" else len
        self._chunker = semchunk.chunkerify(counter, chunk_size=self.size)
        self.overlap = overlap or None

    def chunk_document(self, doc: Document) -> list[Chunk]:
        """semchunk's chunks of ``doc`` at their offsets."""
        result: Any = self._chunker(doc.text, offsets=True, overlap=self.overlap)
        return make_chunks(doc, [(int(s), int(e)) for s, e in result[1]])
