"""``parser=pymupdf4llm``: PyMuPDF's Markdown conversion (headings by font size, tables as
Markdown tables), page by page."""

from __future__ import annotations

from typing import Any

from rag_bench.parsing.base import Parsed, ParseFailure, check_pages, join_pages, package_version, require


class Pymupdf4llmParser:
    """PDF to Markdown by pymupdf4llm (shipped inside pymupdf 2.x; AGPL-licensed: see docs/parsing.md)."""

    suffixes: tuple[str, ...] = (".pdf",)

    def __init__(self, name: str = "pymupdf4llm") -> None:
        self.name = name
        require("pymupdf", "pymupdf", name)
        require("pymupdf4llm", "pymupdf4llm", name)

    def version(self) -> str:
        """pymupdf's and pymupdf4llm's versions."""
        return f"{package_version('pymupdf')}+pymupdf4llm-{package_version('pymupdf4llm')}"

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
            chunks = pymupdf4llm.to_markdown(doc, page_chunks=True, show_progress=False)
            pages = [str(c.get("text", "")) for c in chunks]
        except ParseFailure:
            raise
        except Exception as exc:
            raise ParseFailure(f"unreadable PDF ({type(exc).__name__}: {str(exc)[:200]})") from exc
        finally:
            doc.close()
        return join_pages(pages, [])
