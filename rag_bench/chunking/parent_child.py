"""Parent-child chunking: search small children, hand their larger parent section to the reader."""

from __future__ import annotations

import math

from rag_bench.chunking.base import DocumentChunker, make_chunks, positive_int
from rag_bench.chunking.section import section_spans
from rag_bench.chunking.spans import pack
from rag_bench.domain import Chunk, Document
from rag_bench.errors import ConfigError
from rag_bench.text.sentences import sentence_spans


class ParentChildChunker(DocumentChunker):
    """Children (what is searched) pack sentences of a parent up to ``size`` characters; parents
    (what the reader may get, ``pipeline.expand_parents``) are section chunks of up to
    ``size × parent_ratio`` characters. ``size`` is every chunker's chunk size, so
    ``chunker.size=200,400,800`` sweeps parent_child too, its parents growing in proportion.
    Children carry ``parent_id``; parents carry ``is_parent=True`` and are never searched.
    """

    def __init__(self, size: int = 400, parent_ratio: float = 5.0, prefix_headings: bool = True) -> None:
        self.size = positive_int("size", size)
        if isinstance(parent_ratio, bool) or not isinstance(parent_ratio, (int, float)) or not (
                math.isfinite(parent_ratio) and parent_ratio > 1):
            raise ConfigError(f"chunker.parent_ratio must be a number > 1 (parent size / child size), got "
                              f"{parent_ratio!r} -- fix: chunker.parent_ratio=5")
        self.parent_ratio = float(parent_ratio)
        self.parent_size = int(round(self.size * self.parent_ratio))
        self.prefix_headings = bool(prefix_headings)

    def chunk_document(self, doc: Document) -> list[Chunk]:
        """Parents first, then children, of one document."""
        parent_spans = []
        for sec in doc.sections:
            parent_spans.extend(section_spans(doc, sec, self.parent_size))
        parents = make_chunks(doc, parent_spans, prefix_headings=self.prefix_headings, id_prefix="p", is_parent=True)
        child_spans: list[tuple[int, int]] = []
        owners: list[str | None] = []
        for parent in parents:
            for span in pack(sentence_spans(doc.text, parent.start, parent.end), self.size):
                child_spans.append(span)
                owners.append(parent.chunk_id)
        children = make_chunks(doc, child_spans, prefix_headings=self.prefix_headings, parent_ids=owners)
        return parents + children
