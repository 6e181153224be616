"""``parser=pymupdf4llm``: PyMuPDF's Markdown conversion (headings by font size, tables as
Markdown tables), page by page. pymupdf4llm leaves white and tiny text out of its Markdown; the
characters of such spans are counted in a ``hidden text`` warning (rag_bench.parsing.hidden), which
says whether any of them reached the parse."""

from __future__ import annotations

import contextlib
import io
import logging
from collections.abc import Callable
from typing import Any

from rag_bench.parsing.base import Parsed, ParseFailure, check_pages, join_pages, package_version, require
from rag_bench.parsing.hidden import RULES, is_tiny, warning

log = logging.getLogger("pymupdf4llm")  # a library's messages: never on rag_bench's console


def hidden_spans(doc: Any) -> tuple[dict[str, int], list[str]]:
    """Characters in white (sRGB 0xFFFFFF) and tiny spans, and those spans' texts."""
    counts, texts = {"white": 0, "tiny": 0}, []
    for page in doc:
        for block in page.get_text("dict", flags=0).get("blocks", ()):
            for line in block.get("lines", ()):
                for span in line.get("spans", ()):
                    text = str(span.get("text", ""))
                    n = sum(not c.isspace() for c in text)
                    kind = "white" if span.get("color") == 0xFFFFFF else "tiny" if is_tiny(span.get("size")) else ""
                    if n and kind:
                        counts[kind] += n
                        texts.append(text.strip())
    return counts, texts


def _quietly(pymupdf: Any, convert: Callable[[], Any]) -> Any:
    """``convert()`` with what pymupdf4llm prints (a blank line, "=== Document parser messages ===" and
    "Warning: RapidOCR is missing", once per document parsed: each in a child process of its own) kept
    off the console: PyMuPDF's messages logged at INFO under ``pymupdf4llm`` (the run's log file in
    process; nowhere in the parse's child), its bare ``print()`` dropped. A scanned page is still
    found: the parse's "pages have no text layer" warning."""
    pymupdf.set_messages(pylogging=True, pylogging_logger=log, pylogging_level=logging.INFO)
    with contextlib.redirect_stdout(io.StringIO()):  # the child runs one parse, no other thread
        return convert()


class Pymupdf4llmParser:
    """PDF to Markdown by pymupdf4llm (shipped inside pymupdf 2.x; AGPL-licensed: see docs/parsing.md)."""

    suffixes: tuple[str, ...] = (".pdf",)

    def __init__(self, name: str = "pymupdf4llm") -> None:
        self.name = name
        require("pymupdf", "pymupdf", name)
        require("pymupdf4llm", "pymupdf4llm", name)

    def version(self) -> str:
        """pymupdf's and pymupdf4llm's versions."""
        return f"{package_version('pymupdf')}+pymupdf4llm-{package_version('pymupdf4llm')}+{RULES}"

    def parse(self, data: bytes, suffix: str) -> Parsed:
        """Every page as Markdown."""
        pymupdf = require("pymupdf", "pymupdf", self.name)
        pymupdf4llm = require("pymupdf4llm", "pymupdf4llm", self.name)
        try:
            doc: Any = pymupdf.open(stream=data, filetype="pdf")
        except Exception as exc:
            raise ParseFailure(f"unreadable PDF ({type(exc).__name__}: {str(exc)[:200]})") from exc
        try:
            if doc.needs_pass and not doc.authenticate(""):
                raise ParseFailure("encrypted PDF (a password is needed)")
            check_pages(doc.page_count)
            chunks = _quietly(pymupdf, lambda: pymupdf4llm.to_markdown(doc, page_chunks=True, show_progress=False))
            pages = [str(c.get("text", "")) for c in chunks]
            counts, spans = hidden_spans(doc)
        except ParseFailure:
            raise
        except Exception as exc:
            raise ParseFailure(f"unreadable PDF ({type(exc).__name__}: {str(exc)[:200]})") from exc
        finally:
            doc.close()
        kept = any(len(t) >= 4 and t in page for t in spans for page in pages)
        return join_pages(pages, warning(counts, dropped=not kept))
