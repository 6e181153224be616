"""parser=trafilatura on HTML written at test time: main content with headings and the table as a
Markdown table, boilerplate (navigation, footer), scripts and comments left out; its precision mode
drops headings; an empty page is a recorded failure; through the bounded, cached runner."""

from __future__ import annotations

import pytest

from rag_bench.parsing.base import ParseFailure
from tests.conftest import compose_config
from tests.parsing.render import OWN, normans, to_html

pytest.importorskip("trafilatura", reason="the parse extra is not installed (pip install 'rag-bench-harness[parse]')")

NAV = ("<nav><ul><li><a href='/a'>Home</a></li><li><a href='/b'>Shop</a></li><li><a href='/c'>Contact us</a>"
       "</li></ul></nav><script>alert('run me')</script><!-- editor's note -->")
FOOTER = "<footer><p>Copyright 2026 Example Shop. All rights reserved.</p></footer>"


def _page() -> bytes:
    return to_html("Shop policy", OWN).replace("<body>", "<body>" + NAV).replace("</body>", FOOTER + "</body>").encode()


def test_trafilatura_keeps_headings_and_the_table_row_and_drops_boilerplate():
    from rag_bench.parsing.html_trafilatura import TrafilaturaParser

    parsed = TrafilaturaParser().parse(_page(), ".html")
    lines = parsed.text.splitlines()
    assert lines[0] == "# Shop policy" and "## Returns" in lines and "## Refunds" in lines
    assert "| Late return | 12 EUR | per day |" in lines  # the row's cells on one line, no trailing space
    assert OWN["Refunds"] in parsed.text
    for gone in ("Contact us", "Copyright", "alert", "editor's note"):
        assert gone not in parsed.text
    assert parsed.pages == ()  # HTML has no pages


def test_trafilatura_precision_mode_drops_the_headings():
    from rag_bench.parsing.html_trafilatura import TrafilaturaParser

    text = TrafilaturaParser(favor_recall=False).parse(_page(), ".html").text
    assert OWN["Returns"] in text
    assert not any(line.startswith("#") for line in text.splitlines())


def test_trafilatura_without_tables_and_on_pages_without_content():
    from rag_bench.parsing.html_trafilatura import TrafilaturaParser

    assert "Late return" not in TrafilaturaParser(tables=False).parse(_page(), ".html").text
    with pytest.raises(ParseFailure, match="empty HTML"):
        TrafilaturaParser().parse(b" \n", ".html")
    with pytest.raises(ParseFailure, match="no main content"):
        TrafilaturaParser().parse(b"<html><body><script>var x = 1;</script></body></html>", ".html")


def test_the_option_builds_from_its_config_and_its_key_changes_with_its_options():
    from rag_bench.parsing.files import parser_key
    from rag_bench.runner.config import build

    parser = build(compose_config(["parser=trafilatura"]).parser, "parser")
    assert parser.name == "trafilatura" and parser.favor_recall and parser.tables
    precise = build(compose_config(["parser=trafilatura", "parser.favor_recall=false"]).parser, "parser")
    assert parser_key(parser) != parser_key(precise)  # a cached parse of one mode never serves the other


def test_trafilatura_runs_in_the_bounded_child_and_is_cached(tmp_path):
    from rag_bench.parsing.files import ParseCache, parse_files
    from rag_bench.parsing.html_trafilatura import TrafilaturaParser

    page = tmp_path / "policy.html"
    page.write_bytes(_page())
    store = ParseCache(tmp_path / "parses.sqlite")
    first = parse_files([page], TrafilaturaParser(), store)[0]
    again = parse_files([page], TrafilaturaParser(), store)[0]
    assert first.parsed is not None and not first.cached and first.parser == "trafilatura"
    assert again.cached and again.parsed == first.parsed


def test_what_trafilatura_leaves_out_of_a_long_page_as_docs_parsing_md_says():
    """docs/parsing.md's figures: on squad2-normans' page trafilatura keeps every paragraph but no
    '## Paragraph N' heading (html2text keeps all 39), and a paragraph repeated later is kept once."""
    from rag_bench.parsing.html_text import Html2textParser
    from rag_bench.parsing.html_trafilatura import TrafilaturaParser

    title, sections, _ = normans(39)
    page = to_html(title, sections, None).encode()
    ours, theirs = TrafilaturaParser().parse(page, ".html").text, Html2textParser().parse(page, ".html").text
    assert sum(line.startswith("## ") for line in theirs.splitlines()) == len(sections) == 39
    assert not any(line.startswith("#") for line in ours.splitlines())
    assert all(" ".join(body.split()[:12]) in " ".join(ours.split()) for body in sections.values())
    first = next(iter(sections.values()))
    twice = to_html(title, {**sections, "Again": first}, None).encode()
    assert " ".join(TrafilaturaParser().parse(twice, ".html").text.split()).count(" ".join(first.split()[:12])) == 1
