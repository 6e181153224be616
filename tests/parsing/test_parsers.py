"""Each parser on files rendered at test time from our own short text: structure kept (headings,
tables), unreadable files a ParseFailure with the reason, a missing package a ConfigError."""

from __future__ import annotations

import pytest

from rag_bench.errors import ConfigError
from rag_bench.parsing.base import Parsed, ParseFailure, join_pages, markdown_table, page_at, require
from tests.parsing.render import OWN, TABLE, to_html, write_docx, write_encrypted_pdf, write_malformed_pdf, write_pdf

pytest.importorskip("pymupdf", reason="the PDFs are written by pymupdf (pip install 'rag-bench-harness[parse]')")

PDF_PARSERS = [("rag_bench.parsing.pdf_pypdf", "PypdfParser"), ("rag_bench.parsing.pdf_plumber", "PdfplumberParser"),
               ("rag_bench.parsing.pdf_pymupdf4llm", "Pymupdf4llmParser")]


def _parser(module: str, cls: str):
    import importlib

    return getattr(importlib.import_module(module), cls)()


@pytest.mark.parametrize(("module", "cls"), PDF_PARSERS)
def test_pdf_parsers_read_every_page_with_a_page_map(tmp_path, module, cls):
    path = write_pdf(tmp_path / "own.pdf", "Shop policy", OWN)
    parsed = _parser(module, cls).parse(path.read_bytes(), ".pdf")
    assert len(parsed.pages) == 2 and parsed.pages[0] == 0
    second = parsed.text[parsed.pages[1]:]
    assert "refund is paid to the original card" in " ".join(second.split())
    assert "thirty days" in parsed.text[:parsed.pages[1]]
    assert page_at(parsed.pages, parsed.pages[1] + 3) == 2 and page_at(parsed.pages, 0) == 1


@pytest.mark.parametrize(("module", "cls"), PDF_PARSERS)
def test_encrypted_and_malformed_pdfs_fail_with_their_reason(tmp_path, module, cls):
    parser = _parser(module, cls)
    with pytest.raises(ParseFailure, match="encrypted PDF"):
        parser.parse(write_encrypted_pdf(tmp_path / "locked.pdf", "secret text").read_bytes(), ".pdf")
    with pytest.raises(ParseFailure):
        parser.parse(write_malformed_pdf(tmp_path / "broken.pdf").read_bytes(), ".pdf")


@pytest.mark.parametrize(("module", "cls", "row"), [
    (*PDF_PARSERS[0], "Late return 12 EUR per day"),  # pypdf: the row is one line of text, no table
    (*PDF_PARSERS[1], "| Late return | 12 EUR | per day |"),
    (*PDF_PARSERS[2], "|Late return|12 EUR|per day|")])
def test_what_each_pdf_parser_makes_of_a_ruled_table(tmp_path, module, cls, row):
    path = write_pdf(tmp_path / "own.pdf", "Shop policy", OWN)
    lines = [line.strip() for line in _parser(module, cls).parse(path.read_bytes(), ".pdf").text.splitlines()]
    assert row in lines


def test_pymupdf4llm_keeps_headings_as_markdown(tmp_path):
    path = write_pdf(tmp_path / "own.pdf", "Shop policy", OWN)
    parsed = _parser(*PDF_PARSERS[2]).parse(path.read_bytes(), ".pdf")
    assert any(line.startswith("#") and "Returns" in line for line in parsed.text.splitlines())


def test_html_parser_keeps_headings_and_the_table_and_drops_active_content():
    from rag_bench.parsing.html_text import Html2textParser

    page = to_html("Shop policy", OWN).replace("<body>", "<body><script>alert('run me')</script><!-- note -->")
    text = Html2textParser().parse(page.encode(), ".html").text
    assert "# Shop policy" in text and "## Returns" in text
    assert "| Late return | 12 EUR | per day |" in text
    assert "alert" not in text and "note" not in text


def test_docx_parser_keeps_title_headings_and_the_table(tmp_path):
    from rag_bench.parsing.docx_text import DocxParser

    text = DocxParser().parse(write_docx(tmp_path / "own.docx", "Shop policy", OWN).read_bytes(), ".docx").text
    lines = text.splitlines()
    assert lines[0] == "# Shop policy" and "## Returns" in lines and "## Refunds" in lines
    assert "| Late return | 12 EUR | per day |" in lines
    with pytest.raises(ParseFailure, match="unreadable DOCX"):
        DocxParser().parse(b"PK\x03\x04 not a zip", ".docx")


def test_empty_html_and_a_pdf_without_text_fail(tmp_path):
    import pymupdf

    from rag_bench.parsing.html_text import Html2textParser
    from rag_bench.parsing.pdf_pypdf import PypdfParser

    with pytest.raises(ParseFailure, match="empty HTML"):
        Html2textParser().parse(b"  ", ".html")
    doc = pymupdf.open()
    doc.new_page()
    doc.save(tmp_path / "blank.pdf")
    with pytest.raises(ParseFailure, match="no text"):
        PypdfParser().parse((tmp_path / "blank.pdf").read_bytes(), ".pdf")


def test_markdown_table_starts_every_row_with_a_pipe_and_escapes_cells():
    md = markdown_table(TABLE[:2] + [["a|b", "multi\nline", None]])
    assert md.splitlines() == ["| Fee | Amount | When |", "|---|---|---|", "| Late return | 12 EUR | per day |",
                               "| a\\|b | multi line |  |"]
    assert markdown_table([["", None]]) == ""


def test_join_pages_maps_offsets_and_warns_of_pages_without_text():
    warnings: list[str] = []
    parsed = join_pages(["one\n", "", "three"], warnings)
    assert parsed == Parsed("one\n\n\n\nthree", (0, 5, 7), ("1 of 3 pages have no text layer",))


def test_a_missing_package_is_a_config_error_naming_the_install():
    with pytest.raises(ConfigError, match="pip install 'no-such-parser-pkg'"):
        require("no_such_parser_module", "no-such-parser-pkg", "x")
