"""Fixed-size word windows with overlap (words = whitespace-delimited tokens)."""

from __future__ import annotations

from rag_bench.chunking.base import DocumentChunker, check_overlap, make_chunks, positive_int
from rag_bench.records import Chunk, Document
from rag_bench.text.sentences import word_spans


class FixedWordsChunker(DocumentChunker):
    """Windows of ``size`` words advancing by ``size - overlap`` words; never cuts a word."""

    def __init__(self, size: int = 150, overlap: int = 30) -> None:
        self.size = positive_int("size", size)
        self.overlap = check_overlap(overlap, self.size, "words")

    def chunk_document(self, doc: Document) -> list[Chunk]:
        """Word windows over the whole document text."""
        words = word_spans(doc.text)
        spans = []
        for i in range(0, len(words), self.size - self.overlap):
            last = min(i + self.size, len(words)) - 1
            spans.append((words[i][0], words[last][1]))
            if last == len(words) - 1:
                break
        return make_chunks(doc, spans)
