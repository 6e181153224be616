"""``parser=markitdown``: Microsoft's markitdown converters -- PDF (pdfminer.six / pdfplumber), HTML
(BeautifulSoup + markdownify) and DOCX (mammoth) to Markdown.

The converters are called directly with the file's suffix, never ``MarkItDown().convert``: that
front door guesses the file type with magika (an onnx model; it ships in magika's wheel, but
nothing here needs it) and accepts URLs. So nothing is downloaded or fetched, and the parse runs in
the network-less child every parser runs in (rag_bench.parsing.files). markitdown's PDF output has no
page map (the converter returns one text), so ``pages`` is empty for it. Hidden text: see
:func:`without_hidden` (dropped from HTML and DOCX, counted in PDF). The bounds the other
wrappers apply hold before a converter sees the file: a PDF over
:data:`~rag_bench.parsing.base.MAX_PAGES` pages (counted by pdfminer, markitdown's own PDF reader,
stopping one page past the bound) and a DOCX that unpacks past
:data:`~rag_bench.parsing.docx_text.MAX_UNPACKED` (a zip bomb) are recorded failures.
"""

from __future__ import annotations

import io
import itertools
from typing import Any

from rag_bench.parsing.base import MAX_PAGES, Parsed, ParseFailure, check_pages, package_version, require
from rag_bench.parsing.docx_text import check_unpacked
from rag_bench.parsing.hidden import RULES, warning

_CONVERTERS = {".pdf": "PdfConverter", ".html": "HtmlConverter", ".htm": "HtmlConverter",
               ".docx": "DocxConverter"}
_MIME = {".pdf": "application/pdf", ".html": "text/html", ".htm": "text/html",
         ".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document"}


def without_hidden(data: bytes, suffix: str) -> tuple[bytes, list[str]]:
    """The file as markitdown's converter is handed it, and the ``hidden text`` warning: HTML and
    DOCX without what a person does not see (the html2text and python_docx wrappers' passes: the
    converters would keep it); a PDF as it is, its hidden glyphs counted (pdfminer_hidden) -- the PDF
    converter extracts them before their state is known, so they are kept and warned about."""
    if suffix in (".html", ".htm"):
        from rag_bench.parsing.html_text import decode_html, drop_hidden, parse_tree

        lxml_html = require("lxml.html", "lxml", "markitdown")
        root = parse_tree(decode_html(data), lxml_html)
        counts = drop_hidden(root, lxml_html.etree)
        return lxml_html.tostring(root, encoding="unicode").encode(), warning(counts, dropped=True)
    if suffix == ".docx":
        from rag_bench.parsing.docx_text import strip_hidden

        try:
            stripped, counts = strip_hidden(data)
        except Exception:  # not a zip, a broken part: the converter reports the file
            return data, []
        return stripped, warning(counts, dropped=True)
    from rag_bench.parsing.pdfminer_hidden import count_hidden

    try:
        return data, warning(count_hidden(data), dropped=False)
    except Exception:  # malformed or encrypted: the converter reports the file
        return data, []


class MarkitdownParser:
    """PDF, HTML and DOCX by markitdown's own converters (headings, lists and tables as Markdown
    where the converter finds them)."""

    suffixes: tuple[str, ...] = tuple(_CONVERTERS)

    def __init__(self, name: str = "markitdown") -> None:
        self.name = name
        require("markitdown.converters", "markitdown[pdf,docx]", name)

    def version(self) -> str:
        """markitdown's version and those of the converters' packages."""
        parts = [package_version("markitdown")] + [f"{p}-{package_version(p)}" for p in (
            "pdfminer.six", "pdfplumber", "mammoth", "markdownify", "beautifulsoup4")]
        return "+".join(parts) + f"+{RULES}"

    def parse(self, data: bytes, suffix: str) -> Parsed:
        """The converter's Markdown for the file's type."""
        converters = require("markitdown.converters", "markitdown[pdf,docx]", self.name)
        stream_info = require("markitdown._stream_info", "markitdown[pdf,docx]", self.name)
        suffix = suffix.lower()
        if suffix not in _CONVERTERS:
            raise ParseFailure(f"markitdown reads {', '.join(self.suffixes)}, not {suffix}")
        if not data.strip():
            raise ParseFailure("empty file")
        try:  # the bounds first: the hidden-text pass unpacks a DOCX and reads a PDF too
            if suffix == ".pdf":
                _check_pdf_pages(data)
            elif suffix == ".docx":
                check_unpacked(data)
        except ParseFailure:
            raise
        except Exception:  # noqa: S110 -- malformed: the converter below reports it in its own words
            pass
        data, hidden = without_hidden(data, suffix)
        converter: Any = getattr(converters, _CONVERTERS[suffix])()
        info = stream_info.StreamInfo(extension=suffix, mimetype=_MIME[suffix],
                                      charset="utf-8" if suffix in (".html", ".htm") else None)
        try:
            result = converter.convert(io.BytesIO(data), info)
        except ParseFailure:
            raise
        except Exception as exc:  # the converters raise many types on malformed or encrypted input
            name, text = type(exc).__name__, str(exc)
            if "MissingDependency" in name:
                raise ParseFailure(f"markitdown converter missing a package: {text[:200]} -- fix: pip install "
                                   "'markitdown[pdf,docx]'") from exc
            if any(w in name + text for w in ("Password", "Encrypt", "encrypt")):
                raise ParseFailure("encrypted PDF (a password is needed)") from exc
            raise ParseFailure(f"markitdown could not convert the {suffix} file ({name}: {text[:200]})") from exc
        text = "\n".join(line.rstrip() for line in (result.markdown or "").splitlines()).strip()
        if not text:
            raise ParseFailure("no text (an empty document, or a scan without a text layer)")
        return Parsed(text=text + "\n", warnings=tuple(hidden))


def _check_pdf_pages(data: bytes) -> None:
    """Refuse a PDF of more than :data:`MAX_PAGES` pages (or none) before it is converted; the
    count stops one page past the bound (the work is bounded too)."""
    from pdfminer.pdfpage import PDFPage

    count = sum(1 for _ in itertools.islice(PDFPage.get_pages(io.BytesIO(data)), MAX_PAGES + 1))
    if count > MAX_PAGES:
        raise ParseFailure(f"more than {MAX_PAGES} pages (limit {MAX_PAGES})")
    check_pages(count)
