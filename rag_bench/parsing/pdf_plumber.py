"""``parser=pdfplumber``: pdfplumber's text lines with its tables as Markdown tables, in reading
order by their position on the page (pdfplumber's default text interleaves side-by-side columns).
Glyphs a person does not see (faint colour, transparent, invisible render mode, tiny or squeezed,
off the page: rag_bench.parsing.pdfminer_hidden) are left out of pdfplumber's layout and counted in a
warning."""

from __future__ import annotations

import io
from typing import Any

from rag_bench.parsing.base import (
    Parsed,
    ParseFailure,
    check_pages,
    join_pages,
    markdown_table,
    package_version,
    require,
)
from rag_bench.parsing.hidden import RULES, warning
from rag_bench.parsing.pdfminer_hidden import layout


def _inside(obj: dict[str, Any], bbox: tuple[float, float, float, float]) -> bool:
    x0, top, x1, bottom = bbox
    cx = (float(obj["x0"]) + float(obj["x1"])) / 2
    cy = (float(obj["top"]) + float(obj["bottom"])) / 2
    return x0 <= cx <= x1 and top <= cy <= bottom


class PdfplumberParser:
    """PDF text and tables by pdfplumber (pdfminer.six underneath)."""

    suffixes: tuple[str, ...] = (".pdf",)

    def __init__(self, name: str = "pdfplumber", tables: bool = True) -> None:
        self.name = name
        self.tables = tables
        require("pdfplumber", "pdfplumber", name)

    def version(self) -> str:
        """pdfplumber's and pdfminer.six's versions."""
        return f"{package_version('pdfplumber')}+pdfminer.six-{package_version('pdfminer.six')}+{RULES}"

    def _page(self, page: Any, hidden: dict[str, int]) -> str:
        from pdfplumber.page import PDFPageAggregatorWithMarkedContent

        # the page's layout without its hidden glyphs (rag_bench.parsing.pdfminer_hidden), as pdfplumber builds it
        page._layout = layout(page.page_obj, page.pdf.rsrcmgr, PDFPageAggregatorWithMarkedContent, hidden,
                              pageno=page.page_number, laparams=page.pdf.laparams)
        tables = page.find_tables() if self.tables else []
        boxes = [t.bbox for t in tables]
        items: list[tuple[float, str]] = []
        rest = page.filter(lambda o: not any(_inside(o, b) for b in boxes)) if boxes else page
        for line in rest.extract_text_lines():
            items.append((float(line["top"]), str(line["text"])))
        for table in tables:
            md = markdown_table(table.extract())
            if md:
                items.append((float(table.bbox[1]), "\n" + md + "\n"))
        items.sort(key=lambda it: it[0])
        return "\n".join(text for _, text in items)

    def parse(self, data: bytes, suffix: str) -> Parsed:
        """Every page's lines and tables, top to bottom."""
        pdfplumber = require("pdfplumber", "pdfplumber", self.name)
        try:
            with pdfplumber.open(io.BytesIO(data)) as pdf:
                check_pages(len(pdf.pages))
                hidden = {"white": 0, "transparent": 0, "invisible": 0, "tiny": 0, "off-page": 0}
                pages = [self._page(page, hidden) for page in pdf.pages]
        except ParseFailure:
            raise
        except Exception as exc:
            name = type(exc).__name__
            if any(w in name + str(exc) for w in ("Password", "Encrypt")):
                raise ParseFailure("encrypted PDF (a password is needed)") from exc
            raise ParseFailure(f"unreadable PDF ({name}: {str(exc)[:200]})") from exc
        return join_pages(pages, warning(hidden, dropped=True))
