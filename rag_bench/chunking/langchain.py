"""Any LangChain text splitter as a chunker, with exact spans (``pip install 'rag-bench-harness[splitters]'``).

The splitter runs with ``add_start_index=True``; each piece's span is its start index and length,
checked against the document (a piece LangChain cannot place is searched for after the previous
one), so relevance, evidence recall and citations are measured on the same character offsets
as for our own chunkers, and a team can sweep its production splitter beside ours.
"""

from __future__ import annotations

import importlib
from typing import Any

from rag_bench.chunking.base import DocumentChunker, check_overlap, make_chunks, positive_int
from rag_bench.domain import Chunk, Document
from rag_bench.errors import ConfigError


class LangChainChunker(DocumentChunker):
    """Parameters
    ----------
    splitter:
        Dotted path of a LangChain ``TextSplitter`` class.
    size, overlap:
        ``chunk_size`` and ``chunk_overlap`` of the splitter (in its length unit: characters by default).
    options:
        Further keyword arguments of the splitter (e.g. ``separators``).
    """

    def __init__(self, splitter: str = "langchain_text_splitters.RecursiveCharacterTextSplitter", size: int = 800,
                 overlap: int = 100, options: dict[str, Any] | None = None) -> None:
        self.size = positive_int("size", size)
        self.overlap = check_overlap(overlap, self.size, "units")
        module, _, name = splitter.rpartition(".")
        try:
            cls = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError, ValueError) as exc:
            raise ConfigError(f"chunker.splitter {splitter!r} cannot be imported ({exc}) -- fix: pip install "
                              "'rag-bench-harness[splitters]' (langchain-text-splitters) or check the class path") from exc
        try:
            self.splitter = cls(chunk_size=self.size, chunk_overlap=self.overlap, add_start_index=True, **(options or {}))
        except TypeError as exc:
            raise ConfigError(f"chunker.options: {splitter} does not take these arguments ({exc})") from exc
        if not callable(getattr(self.splitter, "create_documents", None)):
            raise ConfigError(f"chunker.splitter {splitter!r} is not a LangChain TextSplitter (no create_documents)")
        self.name = splitter

    def chunk_document(self, doc: Document) -> list[Chunk]:
        """The splitter's pieces of ``doc`` as spans of its text."""
        spans = []
        cursor = 0
        for piece in self.splitter.create_documents([doc.text]):
            text, start = piece.page_content, piece.metadata.get("start_index", -1)
            if not (isinstance(start, int) and start >= 0 and doc.text[start:start + len(text)] == text):
                start = doc.text.find(text, cursor)
                if start < 0:
                    start = doc.text.find(text)
            if start < 0:
                raise ConfigError(f"chunker: {self.name} returned a piece that is not text of document "
                                  f"{doc.doc_id!r} ({text[:60]!r}...) -- fix: use a splitter that keeps the text "
                                  "as it is (no normalisation)")
            spans.append((start, start + len(text)))
            cursor = start + 1
        return make_chunks(doc, spans)
