"""``parser=html2text``: HTML to Markdown by html2text (headings, lists, links' text), tables as
Markdown tables. Scripts, styles, templates and comments are removed first and never run;
nothing is fetched (images and links stay text). Text a person does not see is dropped too
(:func:`drop_hidden`: the ``hidden`` attribute, hidden inputs, comments, and what an element's own
``style`` attribute hides -- display, opacity, clipping, off-screen position, an empty box, colour,
size, visibility) and counted in a ``hidden text`` warning (rag_bench.parsing.hidden); text hidden
by a stylesheet rule or a class is not detected (docs/parsing.md). A page nested past libxml2's
limit is a failure (:func:`parse_tree`)."""

from __future__ import annotations

from typing import Any

from rag_bench.parsing.base import Parsed, ParseFailure, markdown_table, package_version, require
from rag_bench.parsing.css import declarations
from rag_bench.parsing.hidden import RULES, TEXT_STATE, css_subtree_hidden, css_text_state, text_hidden, warning

_DROP = ("script", "style", "noscript", "template", "iframe", "object", "embed")


def _chars(text: str | None) -> int:
    return sum(not c.isspace() for c in text or "")


def _element_hidden(el: Any, decls: dict[str, str]) -> str:
    """Why nothing inside element ``el`` is seen ('' when something may be): its markup, then its style."""
    if el.get("hidden") is not None:
        return "hidden-attribute"
    if str(el.tag).lower() == "input" and str(el.get("type", "")).lower() == "hidden":
        return "hidden-input"
    return css_subtree_hidden(decls)


def drop_hidden(root: Any, etree: Any) -> dict[str, int]:
    """Remove from the tree ``root`` what a person does not see, counting its characters by reason
    (rag_bench.parsing.hidden's HTML rules on each element's own ``style`` attribute, parsed as a
    browser parses it; colour, size and visibility inherited and overridable): active content
    (scripts, styles, templates, iframes, objects: removed, not counted), comments, elements hidden
    with their whole subtree, and text whose inherited state hides it. Iterative: a tree thousands
    of elements deep (Word's unclosed ``<font>`` tags) needs no recursion."""
    for el in list(root.iter(*_DROP)):
        if el.getparent() is not None:
            el.drop_tree()
    counts: dict[str, int] = {}
    for comment in list(root.iter(etree.Comment)):
        counts["comment"] = counts.get("comment", 0) + _chars(comment.text)
        if comment.getparent() is not None:
            comment.drop_tree()
    stack: list[tuple[Any, dict[str, Any]]] = [(root, TEXT_STATE)]
    while stack:
        el, parent_state = stack.pop()
        decls = declarations(str(el.get("style") or ""))
        if str(el.tag).lower() == "font" and el.get("color") and "color" not in decls:
            decls["color"] = str(el.get("color"))
        why = _element_hidden(el, decls) if el.getparent() is not None else ""
        if why:
            counts[why] = counts.get(why, 0) + _chars(el.text_content()) + _chars(el.get("value"))
            el.drop_tree()
            continue
        state = css_text_state(decls, parent_state)
        why = text_hidden(state)
        if why:  # the element's own text and its children's tails are drawn in its state
            n = _chars(el.text) + sum(_chars(child.tail) for child in el if isinstance(child.tag, str))
            if n:
                counts[why] = counts.get(why, 0) + n
                el.text = None
                for child in el:
                    if isinstance(child.tag, str):
                        child.tail = None
        stack.extend((child, state) for child in el if isinstance(child.tag, str))
    return counts


def parse_tree(source: str, lxml_html: Any) -> Any:
    """The HTML's lxml tree, read whole: libxml2's nesting limit lifted to 2048 (``huge_tree``: a
    page of Word's unclosed ``<font>`` tags nests one level a paragraph and was cut at depth 256,
    paragraph 127 of 400, silently). A document still past the limit is a failure, not a parse of
    its beginning."""
    parser = lxml_html.HTMLParser(huge_tree=True)
    try:
        root = lxml_html.document_fromstring(source, parser=parser)
    except Exception as exc:
        raise ParseFailure(f"unreadable HTML ({type(exc).__name__}: {str(exc)[:200]})") from exc
    last = parser.error_log.last_error
    for entry in [*parser.error_log, *([last] if last is not None else [])]:
        if "Excessive depth" in str(entry.message) or entry.type_name == "ERR_RESOURCE_LIMIT":
            raise ParseFailure(f"HTML nested deeper than libxml2's limit (line {entry.line}, column {entry.column}: "
                               f"{str(entry.message).split(',')[0]}): the rest of the page would be lost -- close "
                               "its tags (Word's unclosed <font> tags), or save it again as filtered HTML")
    return root


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
        root = parse_tree(source, lxml_html)
        counts = drop_hidden(root, lxml_html.etree)
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
