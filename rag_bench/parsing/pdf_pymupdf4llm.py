"""``parser=pymupdf4llm``: PyMuPDF's Markdown conversion (headings by font size, tables as
Markdown tables), page by page. pymupdf4llm leaves white, transparent, invisible, tiny, squeezed
and off-page text out of its Markdown (pymupdf does not even return the last three as spans); the
characters of spans the shared rules (rag_bench.parsing.hidden) call hidden are counted in a
``hidden text`` warning, split into those left out and those that reached the parse (near-white text
pymupdf4llm keeps)."""

from __future__ import annotations

import contextlib
import io
import logging
from collections.abc import Callable
from typing import Any

from rag_bench.parsing.base import Parsed, ParseFailure, check_pages, join_pages, package_version, require
from rag_bench.parsing.hidden import MIN_ALPHA, RULES, Rgb, is_faint, is_tiny, warning

log = logging.getLogger("pymupdf4llm")  # a library's messages: never on rag_bench's console


def _why(span: dict[str, Any], fills: list[tuple[tuple[float, float, float, float], Rgb]]) -> str:
    """Why a person does not see a pymupdf text span ('' when they do): the shared rules
    (rag_bench.parsing.hidden) on its sRGB colour against the filled shape behind it (else the white
    page), its opacity and its size."""
    color = span.get("color")
    if isinstance(color, int):
        x0, y0, x1, y1 = (float(v) for v in span.get("bbox", (0, 0, 0, 0)))
        cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
        behind = next((rgb for (bx0, by0, bx1, by1), rgb in reversed(fills)
                       if bx0 <= cx <= bx1 and by0 <= cy <= by1), (1.0, 1.0, 1.0))
        if is_faint(((color >> 16 & 255) / 255, (color >> 8 & 255) / 255, (color & 255) / 255), behind):
            return "white"
    alpha = span.get("alpha")
    if isinstance(alpha, (int, float)) and alpha / 255 <= MIN_ALPHA:
        return "transparent"
    return "tiny" if is_tiny(span.get("size")) else ""


def _fills(page: Any) -> list[tuple[tuple[float, float, float, float], Rgb]]:
    """The page's filled vector shapes (bounding box, fill colour), in drawing order."""
    out = []
    for drawing in page.get_drawings():
        fill = drawing.get("fill")
        if fill and len(fill) == 3 and drawing.get("type") in ("f", "fs"):
            r = drawing["rect"]
            out.append(((float(r.x0), float(r.y0), float(r.x1), float(r.y1)),
                        (float(fill[0]), float(fill[1]), float(fill[2]))))
    return out


def hidden_spans(doc: Any) -> list[tuple[str, str]]:
    """(reason, text) of every hidden span (pymupdf leaves text off the page and squeezed to no
    width out of its spans, and pymupdf4llm out of its Markdown)."""
    spans = []
    for page in doc:
        fills = _fills(page)
        for block in page.get_text("dict", flags=0).get("blocks", ()):
            for line in block.get("lines", ()):
                for span in line.get("spans", ()):
                    text = str(span.get("text", ""))
                    why = _why(span, fills) if text.strip() else ""
                    if why:
                        spans.append((why, text.strip()))
    return spans


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
            spans = hidden_spans(doc)
        except ParseFailure:
            raise
        except Exception as exc:
            raise ParseFailure(f"unreadable PDF ({type(exc).__name__}: {str(exc)[:200]})") from exc
        finally:
            doc.close()
        dropped = {"white": 0, "transparent": 0, "tiny": 0}
        kept = dict(dropped)
        for why, text in spans:  # pymupdf4llm leaves white, transparent and tiny text out -- near-white it keeps
            n = sum(not c.isspace() for c in text)
            (kept if any(text in page for page in pages) else dropped)[why] += n
        return join_pages(pages, warning(dropped, dropped=True) + warning(kept, dropped=False))
