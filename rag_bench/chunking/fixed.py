"""Fixed-size character windows with overlap: the naive baseline every sweep should include."""

from __future__ import annotations

from rag_bench.chunking.base import DocumentChunker, check_overlap, make_chunks, positive_int
from rag_bench.domain import Chunk, Document


class FixedChunker(DocumentChunker):
    """Windows of ``size`` characters advancing by ``size - overlap``; cuts words and sentences.

    Whitespace at a window's edges is trimmed, so a body may be slightly shorter than ``size``.
    """

    def __init__(self, size: int = 800, overlap: int = 100) -> None:
        self.size = positive_int("size", size)
        self.overlap = check_overlap(overlap, self.size, "characters")

    def chunk_document(self, doc: Document) -> list[Chunk]:
        """Character windows over the whole document text."""
        n = len(doc.text)
        spans = []
        start = 0
        while start < n:
            end = min(start + self.size, n)
            spans.append((start, end))
            if end == n:
                break
            start += self.size - self.overlap
        return make_chunks(doc, spans)
