"""``parser=html2text``: HTML to Markdown by html2text (headings, lists, links' text), tables as
Markdown tables. Scripts, styles, templates and comments are removed first and never run;
nothing is fetched (images and links stay text). Text a person does not see is dropped too --
elements with ``display:none``, ``visibility:hidden`` or ``font-size:0`` in their style attribute,
the ``hidden`` attribute, hidden inputs, and comments -- and counted in a ``hidden text`` warning
(rag_bench.parsing.hidden); text hidden by a stylesheet rule or by its colour is not detected."""

from __future__ import annotations

import re
from typing import Any

from rag_bench.parsing.base import Parsed, ParseFailure, markdown_table, package_version, require
from rag_bench.parsing.hidden import RULES, warning

_DROP = ("script", "style", "noscript", "template", "iframe", "object", "embed")
_HIDDEN_STYLE = re.compile(r"(?:^|;)\s*(?:display\s*:\s*none|visibility\s*:\s*hidden|font-size\s*:\s*0(?:\.0*)?"
                           r"(?:px|pt|em|rem|%)?\s*(?:!important)?\s*(?:;|$))", re.I)


def _hidden(el: Any) -> str:
    """Why a person does not see element ``el`` ('' when nothing says so in its own markup)."""
    if el.get("hidden") is not None:
        return "hidden-attribute"
    if str(el.tag).lower() == "input" and str(el.get("type", "")).lower() == "hidden":
        return "hidden-input"
    style = el.get("style")
    if style and _HIDDEN_STYLE.search(style):
        return "style-hidden"
    return ""


def _visible_chars(text: str | None) -> int:
    return sum(not c.isspace() for c in text or "")


def decode_html(data: bytes) -> str:
    """The HTML's text: UTF-8 (a BOM honoured), else Latin-1 (never fails)."""
    for enc in ("utf-8-sig",):
        try:
            return data.decode(enc)
        except UnicodeDecodeError:
            pass
    return data.decode("latin-1")


class Html2textParser:
    """HTML by html2text, after lxml removed active content and turned tables into Markdown tables."""

    suffixes: tuple[str, ...] = (".html", ".htm")

    def __init__(self, name: str = "html2text") -> None:
        self.name = name
        require("html2text", "html2text", name)
        require("lxml.html", "lxml", name)

    def version(self) -> str:
        """html2text's and lxml's versions."""
        return f"{package_version('html2text')}+lxml-{package_version('lxml')}+{RULES}"

    def parse(self, data: bytes, suffix: str) -> Parsed:
        """The page's Markdown."""
        html2text = require("html2text", "html2text", self.name)
        lxml_html = require("lxml.html", "lxml", self.name)
        source = decode_html(data)
        if not source.strip():
            raise ParseFailure("empty HTML file")
        try:
            root: Any = lxml_html.document_fromstring(source)
        except Exception as exc:
            raise ParseFailure(f"unreadable HTML ({type(exc).__name__}: {str(exc)[:200]})") from exc
        for el in list(root.iter(*_DROP)):
            el.drop_tree()
        counts = {"comment": 0, "style-hidden": 0, "hidden-attribute": 0, "hidden-input": 0}
        for comment in list(root.iter(lxml_html.etree.Comment)):
            counts["comment"] += _visible_chars(comment.text)
            comment.drop_tree()
        dropped: set[Any] = set()
        for el in list(root.iter(lxml_html.etree.Element)):
            why = _hidden(el) if el.getparent() is not None else ""
            if why and not any(a in dropped for a in el.iterancestors()):
                dropped.add(el)
                counts[why] += _visible_chars(el.text_content()) + _visible_chars(el.get("value"))
                el.drop_tree()
        tables: list[str] = []
        for table in list(root.iter("table")):
            if table.getparent() is None or any(True for _ in table.iterancestors("table")):
                continue  # a nested table is read with its outer one
            rows = [[" ".join(cell.text_content().split()) for cell in tr.iter("td", "th")]
                    for tr in table.iter("tr")]
            placeholder = lxml_html.Element("p")
            placeholder.text = f"RAGBENCHTABLE{len(tables)}X"
            tables.append(markdown_table(rows))
            table.getparent().replace(table, placeholder)
        converter = html2text.HTML2Text()
        converter.body_width = 0
        converter.ignore_images = True
        converter.ignore_links = True
        converter.unicode_snob = True
        text = converter.handle(lxml_html.tostring(root, encoding="unicode"))
        for i, md in enumerate(tables):
            text = text.replace(f"RAGBENCHTABLE{i}X", md)
        text = "\n".join(line.rstrip() for line in text.splitlines()).strip() + "\n"
        if not text.strip():
            raise ParseFailure("no text in the HTML")
        return Parsed(text=text, warnings=tuple(warning(counts, dropped=True)))
