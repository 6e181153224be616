"""``parser=pypdf``: pypdf's text extraction, page by page (no heading or table structure: a
table's row is one line of text). Reads columns in content-stream order. Text a person does not see
(rag_bench.parsing.hidden: faint colour in any colour space, transparent, invisible render mode, tiny
or squeezed, off the page) stays in the text -- pypdf extracts it before its state is known -- and is
counted in a ``hidden text`` warning."""

from __future__ import annotations

import io

from rag_bench.parsing.base import Parsed, ParseFailure, check_pages, join_pages, package_version, require
from rag_bench.parsing.hidden import RULES, PdfHiddenCounter, warning


class PypdfParser:
    """PDF pages' text by pypdf (pure Python); encrypted files fail unless the empty password opens them."""

    suffixes: tuple[str, ...] = (".pdf",)

    def __init__(self, name: str = "pypdf") -> None:
        self.name = name
        require("pypdf", "pypdf", name)

    def version(self) -> str:
        """pypdf's version."""
        return f"{package_version('pypdf')}+{RULES}"

    def parse(self, data: bytes, suffix: str) -> Parsed:
        """Every page's extracted text, joined by blank lines."""
        pypdf = require("pypdf", "pypdf", self.name)
        try:
            reader = pypdf.PdfReader(io.BytesIO(data), strict=False)
            if reader.is_encrypted and not reader.decrypt(""):
                raise ParseFailure("encrypted PDF (a password is needed)")
            check_pages(len(reader.pages))
            hidden = PdfHiddenCounter()
            pages = []
            for page in reader.pages:
                hidden.page(page)
                pages.append(page.extract_text(visitor_operand_before=hidden.before) or "")
            hidden.end_page()
        except ParseFailure:
            raise
        except Exception as exc:  # pypdf raises many types on malformed input
            raise ParseFailure(f"unreadable PDF ({type(exc).__name__}: {str(exc)[:200]})") from exc
        return join_pages(pages, warning(hidden.counts, dropped=False))
