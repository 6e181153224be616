"""Structure-aware chunking: one section at a time, blocks kept whole, heading-path prefix."""

from __future__ import annotations

from rag_bench.chunking.base import DocumentChunker, make_chunks, positive_int
from rag_bench.chunking.spans import pack
from rag_bench.domain import Chunk, Document, Section
from rag_bench.text.markdown import parse_blocks
from rag_bench.text.sentences import Span, sentence_spans


def section_spans(doc: Document, sec: Section, max_chars: int) -> list[Span]:
    """Spans of one section's body: whole if it fits, else packed blocks.

    Tables, lists and code blocks are never split (they may exceed ``max_chars``); a paragraph
    longer than ``max_chars`` is split between sentences.
    """
    blocks = parse_blocks(doc.text, sec.body_start, sec.end)
    if not blocks:
        return []
    if blocks[-1].end - blocks[0].start <= max_chars:
        return [(blocks[0].start, blocks[-1].end)]
    units: list[Span] = []
    for b in blocks:
        if b.kind == "paragraph" and b.end - b.start > max_chars:
            units.extend(pack(sentence_spans(doc.text, b.start, b.end), max_chars))
        else:
            units.append((b.start, b.end))
    return pack(units, max_chars)


class SectionChunker(DocumentChunker):
    """Chunks never mix two sections; each chunk's indexed text starts with its heading path.

    Parameters
    ----------
    size:
        Target maximum body length in characters. Larger sections are split at paragraph, then sentence
        boundaries; a table or list longer than this stays whole.
    prefix_headings:
        Prepend ``Title > Section > Subsection`` to the indexed text (not to the body).
    """

    def __init__(self, size: int = 1200, prefix_headings: bool = True) -> None:
        self.size = positive_int("size", size)
        self.prefix_headings = bool(prefix_headings)

    def chunk_document(self, doc: Document) -> list[Chunk]:
        """Section-by-section chunks of one document."""
        spans: list[Span] = []
        for sec in doc.sections:
            spans.extend(section_spans(doc, sec, self.size))
        return make_chunks(doc, spans, prefix_headings=self.prefix_headings)
