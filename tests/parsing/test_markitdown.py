"""``parser=markitdown`` on files rendered at test time from our own short text: what its PDF, HTML
and DOCX converters make of headings and the table, unreadable files a ParseFailure with the
reason, and offline: magika's model is never run and the parse works in the network-less child."""

from __future__ import annotations

import pytest

from rag_bench.parsing.base import Parsed, ParseFailure
from rag_bench.parsing.files import parse_isolated
from rag_bench.parsing.locate import locate
from tests.parsing.render import OWN, to_html, write_docx, write_encrypted_pdf, write_malformed_pdf, write_pdf

pytest.importorskip("pymupdf", reason="the PDFs are written by pymupdf (pip install 'rag-bench-harness[parse]')")
pytest.importorskip("markitdown.converters", reason="markitdown is not installed (pip install 'rag-bench-harness[parse]')")


def _parser():
    from rag_bench.parsing.markitdown_md import MarkitdownParser

    return MarkitdownParser()


def test_html_and_docx_keep_headings_and_the_table_as_a_markdown_table(tmp_path):
    html = _parser().parse(to_html("Web policy", OWN).encode(), ".html").text
    docx = _parser().parse(write_docx(tmp_path / "w.docx", "Word policy", OWN).read_bytes(), ".docx").text
    assert "# Web policy" in html and "## Returns" in html
    assert "# Returns" in docx and "# Refunds" in docx
    for text in (html, docx):
        assert "| Late return | 12 EUR | per day |" in text.splitlines()


def test_pdf_text_glues_the_table_cells_and_the_headings_to_the_text(tmp_path):
    """What the measures see (docs/parsing.md): markitdown's PDF text (pdfminer) runs a ruled
    table's cells together, so a row is found only fuzzily and a two-cell quote not at all."""
    text = _parser().parse(write_pdf(tmp_path / "p.pdf", "Shop policy", OWN).read_bytes(), ".pdf").text
    assert "Late return12 EURper day" in text
    assert not any(line.startswith("#") for line in text.splitlines())  # no Markdown heading
    assert locate(text, "Late return 12 EUR per day")[2] == "fuzzy"
    assert locate(text, "5 EUR once") is None
    assert locate(text, "returned within thirty days of delivery")[2] == "exact"


def test_encrypted_malformed_and_unknown_files_fail_with_their_reason(tmp_path):
    parser = _parser()
    with pytest.raises(ParseFailure, match="encrypted PDF"):
        parser.parse(write_encrypted_pdf(tmp_path / "l.pdf", "secret").read_bytes(), ".pdf")
    with pytest.raises(ParseFailure, match="could not convert the .pdf"):
        parser.parse(write_malformed_pdf(tmp_path / "b.pdf").read_bytes(), ".pdf")
    with pytest.raises(ParseFailure, match="empty"):
        parser.parse(b"  ", ".html")
    with pytest.raises(ParseFailure, match="not .txt"):
        parser.parse(b"x", ".txt")


def test_it_never_runs_magika_and_parses_in_the_network_less_child(tmp_path, monkeypatch):
    import magika

    def refuse(*args, **kwargs):
        raise AssertionError("magika's model was loaded")

    monkeypatch.setattr(magika.Magika, "__init__", refuse)
    assert "## Returns" in _parser().parse(to_html("Web policy", OWN).encode(), ".html").text
    # The bounded child refuses every connection (rag_bench.parsing.files): the PDF still parses.
    data = write_pdf(tmp_path / "p.pdf", "Shop policy", OWN).read_bytes()
    outcome, cacheable = parse_isolated(_parser(), data, ".pdf", timeout=120)
    assert outcome.parsed is not None and cacheable, outcome.reason
    assert isinstance(outcome.parsed, Parsed) and "thirty days of delivery" in outcome.parsed.text
