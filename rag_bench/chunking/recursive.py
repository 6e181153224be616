"""Recursive splitting down a separator hierarchy, then merging neighbours up to a budget."""

from __future__ import annotations

from collections.abc import Sequence

from rag_bench.chunking.base import DocumentChunker, check_overlap, make_chunks, positive_int
from rag_bench.domain import Chunk, Document
from rag_bench.errors import ConfigError
from rag_bench.text.sentences import Span

DEFAULT_SEPARATORS = ("\n# ", "\n## ", "\n### ", "\n\n", "\n", ". ", " ")


class RecursiveChunker(DocumentChunker):
    """Split at the coarsest separator present, recurse into pieces still over ``size`` characters.

    A separator that starts with whitespace and then has markup (``"\\n## "``) cuts *before* the
    markup so the heading starts the next piece; any other separator stays at the end of the
    piece before it. Pieces are then merged left to right while they fit in ``size`` characters;
    ``overlap`` (characters) repeats trailing pieces at the start of the next chunk.
    """

    def __init__(self, size: int = 800, overlap: int = 0,
                 separators: Sequence[str] = DEFAULT_SEPARATORS) -> None:
        self.size = positive_int("size", size)
        self.overlap = check_overlap(overlap, self.size, "characters")
        if not separators or not all(isinstance(s, str) and s for s in separators):
            raise ConfigError("chunker.separators must be a non-empty list of non-empty strings "
                              '-- fix: e.g. ["\\n\\n", "\\n", ". ", " "]')
        self.separators = tuple(separators)

    def _split(self, text: str, start: int, end: int, level: int) -> list[Span]:
        if end - start <= self.size:
            return [(start, end)]
        for i in range(level, len(self.separators)):
            sep = self.separators[i]
            lead = len(sep) - len(sep.lstrip())
            shift = lead if 0 < lead < len(sep) else len(sep)
            cuts = []
            pos = text.find(sep, start, end)
            while pos != -1:
                if start < pos + shift < end:
                    cuts.append(pos + shift)
                pos = text.find(sep, pos + 1, end)
            if not cuts:
                continue
            pieces: list[Span] = []
            for s, e in zip([start, *cuts], [*cuts, end]):
                pieces.extend(self._split(text, s, e, i + 1))
            return pieces
        # No separator left: hard cut, the only place this chunker may cut inside a word.
        return [(s, min(s + self.size, end)) for s in range(start, end, self.size)]

    def chunk_document(self, doc: Document) -> list[Chunk]:
        """Recursive pieces of one document merged up to ``size`` characters."""
        pieces = self._split(doc.text, 0, len(doc.text), 0)
        spans: list[Span] = []
        i = 0
        while i < len(pieces):
            j = i + 1
            while j < len(pieces) and pieces[j][1] - pieces[i][0] <= self.size:
                j += 1
            spans.append((pieces[i][0], pieces[j - 1][1]))
            if j >= len(pieces):
                break
            nxt = j
            while nxt - 1 > i and pieces[j - 1][1] - pieces[nxt - 1][0] <= self.overlap:
                nxt -= 1
            i = nxt
        return make_chunks(doc, spans)
