"""Sentence packing: consecutive sentences up to a character budget; never cuts a sentence."""

from __future__ import annotations

from rag_bench.chunking.base import DocumentChunker, make_chunks, positive_int
from rag_bench.chunking.spans import pack
from rag_bench.domain import Chunk, Document
from rag_bench.text.sentences import sentence_spans


class SentenceChunker(DocumentChunker):
    """Packs whole sentences into chunks of at most ``size`` characters (a longer sentence stands alone).

    ``overlap`` is counted in sentences: that many trailing sentences repeat at the start of the
    next chunk.
    """

    def __init__(self, size: int = 600, overlap: int = 0) -> None:
        self.size = positive_int("size", size)
        self.overlap = positive_int("overlap", overlap, minimum=0)

    def chunk_document(self, doc: Document) -> list[Chunk]:
        """Sentence groups over the whole document."""
        return make_chunks(doc, pack(sentence_spans(doc.text), self.size, self.overlap))
