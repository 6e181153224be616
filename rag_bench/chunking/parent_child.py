"""Parent-child chunking: search small children, hand their larger parent section to the reader."""

from __future__ import annotations

from rag_bench.chunking.base import DocumentChunker, make_chunks, positive_int
from rag_bench.chunking.section import section_spans
from rag_bench.chunking.spans import pack
from rag_bench.errors import ConfigError
from rag_bench.records import Chunk, Document
from rag_bench.text.sentences import sentence_spans


class ParentChildChunker(DocumentChunker):
    """Parents are section chunks of up to ``parent_chars``; children pack sentences of a parent
    up to ``child_chars``. Children carry ``parent_id``; parents carry ``is_parent=True`` and are
    never searched.
    """

    def __init__(self, parent_chars: int = 2000, child_chars: int = 400, prefix_headings: bool = True) -> None:
        self.parent_chars = positive_int("parent_chars", parent_chars)
        self.child_chars = positive_int("child_chars", child_chars)
        if self.child_chars >= self.parent_chars:
            raise ConfigError(f"chunker.child_chars ({child_chars}) must be smaller than chunker.parent_chars "
                              f"({parent_chars}) -- fix: lower child_chars or raise parent_chars")
        self.prefix_headings = bool(prefix_headings)

    def chunk_document(self, doc: Document) -> list[Chunk]:
        """Parents first, then children, of one document."""
        parent_spans = []
        for sec in doc.sections:
            parent_spans.extend(section_spans(doc, sec, self.parent_chars))
        parents = make_chunks(doc, parent_spans, prefix_headings=self.prefix_headings, id_prefix="p", is_parent=True)
        child_spans: list[tuple[int, int]] = []
        owners: list[str | None] = []
        for parent in parents:
            for span in pack(sentence_spans(doc.text, parent.start, parent.end), self.child_chars):
                child_spans.append(span)
                owners.append(parent.chunk_id)
        children = make_chunks(doc, child_spans, prefix_headings=self.prefix_headings, parent_ids=owners)
        return parents + children
