"""``parser=trafilatura``: HTML to Markdown by trafilatura's main-content extraction (boilerplate
such as navigation, footers and cookie banners removed; tables as Markdown table rows, without the
``|---|`` line). ``favor_recall: true`` (the option's default) keeps more of the page than
trafilatura's default, which drops every heading; even so trafilatura leaves out what it judges
boilerplate -- on squad2-normans' page every ``## Paragraph N`` heading, and a paragraph repeated
later in the page (docs/parsing.md). Nothing is fetched and no script runs (trafilatura reads the
HTML's tree only). The tree trafilatura reads is ``parser=html2text``'s: read whole (a page nested
past libxml2's limit is a failure) and without what a person does not see, counted in a ``hidden
text`` warning (rag_bench.parsing.html_text.drop_hidden)."""

from __future__ import annotations

from rag_bench.parsing.base import Parsed, ParseFailure, package_version, require
from rag_bench.parsing.hidden import RULES, warning
from rag_bench.parsing.html_text import decode_html, drop_hidden, parse_tree


class TrafilaturaParser:
    """HTML's main content by trafilatura (needs ``lxml_html_clean``, in the ``parse`` extra)."""

    suffixes: tuple[str, ...] = (".html", ".htm")

    def __init__(self, name: str = "trafilatura", favor_recall: bool = True, tables: bool = True) -> None:
        self.name = name
        self.favor_recall = favor_recall
        self.tables = tables
        require("lxml_html_clean", "lxml_html_clean", name)
        require("trafilatura", "trafilatura", name)
        require("lxml.html", "lxml", name)

    def version(self) -> str:
        """trafilatura's version and the options that change its output."""
        return (f"{package_version('trafilatura')}+lxml-{package_version('lxml')}"
                f";recall={self.favor_recall};tables={self.tables}+{RULES}")

    def parse(self, data: bytes, suffix: str) -> Parsed:
        """The page's main content as Markdown."""
        trafilatura = require("trafilatura", "trafilatura", self.name)
        source = decode_html(data)
        if not source.strip():
            raise ParseFailure("empty HTML file")
        lxml_html = require("lxml.html", "lxml", self.name)
        root = parse_tree(source, lxml_html)  # read whole (Word's unclosed tags), or a failure
        counts = drop_hidden(root, lxml_html.etree)  # the same hidden-text rules as parser=html2text
        try:
            text = trafilatura.extract(root, output_format="markdown", include_tables=self.tables,
                                       include_formatting=True, include_comments=False, include_images=False,
                                       include_links=False, favor_recall=self.favor_recall,
                                       with_metadata=False, deduplicate=False)
        except Exception as exc:
            raise ParseFailure(f"unreadable HTML ({type(exc).__name__}: {str(exc)[:200]})") from exc
        if not text or not text.strip():
            raise ParseFailure("trafilatura found no main content in the HTML")
        text = "\n".join(line.rstrip() for line in text.splitlines()).strip() + "\n"  # rows end "| " in trafilatura
        return Parsed(text=text, warnings=tuple(warning(counts, dropped=True)))
