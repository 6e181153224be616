"""``parser=mammoth``: Word (.docx) by mammoth: the document's semantic HTML (paragraph styles to
headings by a style map, lists, tables), then that HTML to Markdown as ``parser=html2text`` reads
HTML (tables as Markdown tables). mammoth's own Markdown writer is not used: it writes a table as
one cell per paragraph. Images are left out (never decoded); macros and embedded objects are never
run (a .docx cannot hold macros; embedded parts are not read). mammoth's messages (an unknown
style, an unsupported element) become the document's warnings. Runs a person does not see are
stripped first by python_docx's rules (rag_bench.parsing.docx_text.strip_hidden: vanish, faint
colour, tiny, through styles) and counted in a ``hidden text`` warning."""

from __future__ import annotations

import io
from typing import Any

from rag_bench.parsing.base import Parsed, ParseFailure, package_version, require
from rag_bench.parsing.docx_text import check_unpacked, strip_hidden
from rag_bench.parsing.hidden import RULES, warning

# As parser=python_docx reads styles: Title is the document's # heading, Heading N one level below.
STYLE_MAP = "\n".join(["p[style-name='Title'] => h1:fresh",
                       *(f"p[style-name='Heading {n}'] => h{min(n + 1, 6)}:fresh" for n in range(1, 6))])
MAX_WARNINGS = 20


class MammothParser:
    """DOCX by mammoth (to HTML) and html2text (to Markdown)."""

    suffixes: tuple[str, ...] = (".docx",)

    def __init__(self, name: str = "mammoth") -> None:
        self.name = name
        require("mammoth", "mammoth", name)
        require("html2text", "html2text", name)

    def version(self) -> str:
        """mammoth's and the HTML step's versions (with its hidden-text rules: it drops what they hide)."""
        return (f"{package_version('mammoth')}+html2text-{package_version('html2text')}+lxml-{package_version('lxml')}"
                f"+{RULES}")

    def parse(self, data: bytes, suffix: str) -> Parsed:
        """The document's Markdown."""
        mammoth = require("mammoth", "mammoth", self.name)
        from rag_bench.parsing.html_text import Html2textParser

        try:
            check_unpacked(data)
            data, counts = strip_hidden(data)  # mammoth keeps vanish, white and tiny runs: python_docx's rules
            no_images: Any = mammoth.images.img_element(lambda image: {})
            result = mammoth.convert_to_html(io.BytesIO(data), style_map=STYLE_MAP, convert_image=no_images,
                                             include_default_style_map=True)
        except ParseFailure:
            raise
        except Exception as exc:
            raise ParseFailure(f"unreadable DOCX ({type(exc).__name__}: {str(exc)[:200]})") from exc
        html = str(result.value or "")
        if not html.strip():
            raise ParseFailure("no text in the DOCX")
        page = f"<html><head><meta charset='utf-8'></head><body>{html}</body></html>".encode()
        parsed = Html2textParser(name=self.name).parse(page, ".html")
        messages = list(dict.fromkeys(f"mammoth: {m.message}" for m in result.messages))
        if len(messages) > MAX_WARNINGS:
            messages = messages[:MAX_WARNINGS] + [f"mammoth: {len(messages) - MAX_WARNINGS} more messages"]
        return Parsed(text=parsed.text, warnings=(*warning(counts, dropped=True), *parsed.warnings, *messages))
