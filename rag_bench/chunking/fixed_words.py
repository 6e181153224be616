"""Fixed-size windows of whole words (words = whitespace-delimited tokens), sized in characters."""

from __future__ import annotations

from rag_bench.chunking.base import DocumentChunker, check_overlap, make_chunks, positive_int
from rag_bench.domain import Chunk, Document
from rag_bench.text.sentences import word_spans


class FixedWordsChunker(DocumentChunker):
    """Windows of as many whole words as fit in ``size`` characters (at least one word; a longer
    word stands alone); never cuts a word. The next window starts at the first word that begins
    in the last ``overlap`` characters of the previous one (and always past its first word), so
    consecutive windows share about ``overlap`` characters of whole words.

    ``size`` and ``overlap`` are in characters, as for every chunker: ``chunker.size=200,400,800``
    sweeps this one beside the others.
    """

    def __init__(self, size: int = 800, overlap: int = 150) -> None:
        self.size = positive_int("size", size)
        self.overlap = check_overlap(overlap, self.size, "characters")

    def chunk_document(self, doc: Document) -> list[Chunk]:
        """Word windows over the whole document text."""
        words = word_spans(doc.text)
        spans = []
        i = 0
        while i < len(words):
            j = i
            while j + 1 < len(words) and words[j + 1][1] - words[i][0] <= self.size:
                j += 1
            spans.append((words[i][0], words[j][1]))
            if j == len(words) - 1:
                break
            nxt = j + 1
            while nxt - 1 > i and words[nxt - 1][0] >= words[j][1] - self.overlap:
                nxt -= 1
            i = nxt
        return make_chunks(doc, spans)
