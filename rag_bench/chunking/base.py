"""Chunker protocol and helpers shared by every chunker."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from rag_bench.domain import Chunk, Document
from rag_bench.errors import ConfigError
from rag_bench.text.markdown import heading_path_at, trim


class Chunker(Protocol):
    """Splits documents into chunks; batch in, batch out, in document order."""

    def chunk(self, documents: Sequence[Document]) -> list[Chunk]:
        """Chunks of all ``documents``; ``doc.text[c.start:c.end] == c.body`` for every chunk."""
        ...


class DocumentChunker:
    """Base for chunkers that treat each document independently."""

    def chunk(self, documents: Sequence[Document]) -> list[Chunk]:
        """Chunk every document; see :class:`Chunker`."""
        out: list[Chunk] = []
        for doc in documents:
            out.extend(self.chunk_document(doc))
        return out

    def chunk_document(self, doc: Document) -> list[Chunk]:
        """Chunks of one document."""
        raise NotImplementedError


def make_chunks(doc: Document, spans: Sequence[tuple[int, int]], *, prefix_headings: bool = False,
                id_prefix: str = "", parent_ids: Sequence[str | None] | None = None,
                is_parent: bool = False) -> list[Chunk]:
    """Build chunks from spans: trims whitespace, drops empty spans, numbers them in order."""
    chunks: list[Chunk] = []
    for i, (s0, e0) in enumerate(spans):
        s, e = trim(doc.text, s0, e0)
        if s >= e:
            continue
        path = heading_path_at(doc.sections, s)
        prefix = " > ".join(path) + "\n\n" if prefix_headings and path else ""
        chunks.append(Chunk(
            chunk_id=f"{doc.doc_id}#{id_prefix}{len(chunks):04d}", doc_id=doc.doc_id, start=s, end=e,
            body=doc.text[s:e], prefix=prefix, heading_path=path,
            parent_id=parent_ids[i] if parent_ids is not None else None, is_parent=is_parent))
    return chunks


def positive_int(name: str, value: object, *, minimum: int = 1) -> int:
    """Validate an integer parameter, raising ConfigError naming the config key."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"chunker.{name} must be an integer >= {minimum}, got {value!r} "
                          f"-- fix: e.g. chunker.{name}={max(minimum, 100)}")
    return value


def check_overlap(overlap: object, size: int, unit: str) -> int:
    """Overlap must be in [0, size): a window must advance."""
    ov = positive_int("overlap", overlap, minimum=0)
    if ov >= size:
        raise ConfigError(f"chunker.overlap ({ov} {unit}) must be smaller than chunker.size ({size}) "
                          "-- fix: lower chunker.overlap")
    return ov
