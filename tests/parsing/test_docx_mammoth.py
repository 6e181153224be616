"""parser=mammoth on DOCX files written at test time: the title and headings as python_docx reads
them, the table as a Markdown table (mammoth's own Markdown writer splits it a cell per
paragraph), list items, mammoth's messages as warnings, unreadable files a recorded failure."""

from __future__ import annotations

import pytest

from rag_bench.parsing.base import ParseFailure
from tests.conftest import compose_config
from tests.parsing.render import OWN, write_docx

pytest.importorskip("mammoth", reason="the parse extra is not installed (pip install 'rag-bench-harness[parse]')")
pytest.importorskip("docx", reason="the DOCX files are written by python-docx (the parse extra)")


def test_mammoth_keeps_title_headings_and_the_table_row(tmp_path):
    from rag_bench.parsing.docx_mammoth import MammothParser

    parsed = MammothParser().parse(write_docx(tmp_path / "own.docx", "Shop policy", OWN).read_bytes(), ".docx")
    lines = parsed.text.splitlines()
    assert lines[0] == "# Shop policy" and "## Returns" in lines and "## Refunds" in lines
    assert "| Late return | 12 EUR | per day |" in lines
    assert OWN["Returns"] in parsed.text  # no Markdown escapes ("box\\.") in the text
    assert parsed.warnings == ()


def test_mammoth_reads_the_same_headings_as_python_docx(tmp_path):
    from rag_bench.parsing.docx_mammoth import MammothParser
    from rag_bench.parsing.docx_text import DocxParser

    data = write_docx(tmp_path / "own.docx", "Shop policy", OWN).read_bytes()
    def heads(text: str) -> list[str]:
        return [line for line in text.splitlines() if line.startswith("#")]

    assert heads(MammothParser().parse(data, ".docx").text) == heads(DocxParser().parse(data, ".docx").text)


def test_mammoth_lists_and_an_unknown_style_as_a_warning(tmp_path):
    import docx
    from docx.enum.style import WD_STYLE_TYPE

    from rag_bench.parsing.docx_mammoth import MammothParser

    d = docx.Document()
    d.add_paragraph("Bring these:")
    d.add_paragraph("the receipt", style="List Bullet")
    d.add_paragraph("the card", style="List Bullet")
    d.styles.add_style("Fancy Note", WD_STYLE_TYPE.PARAGRAPH)
    d.add_paragraph("A note in a style of the team's own.", style="Fancy Note")
    d.save(str(tmp_path / "list.docx"))
    parsed = MammothParser().parse((tmp_path / "list.docx").read_bytes(), ".docx")
    items = [line for line in parsed.text.splitlines() if line.lstrip().startswith(("* ", "- "))]
    assert [i.lstrip()[2:] for i in items] == ["the receipt", "the card"]
    assert "A note in a style of the team's own." in parsed.text
    assert any("Fancy Note" in w for w in parsed.warnings), parsed.warnings


def test_mammoth_unreadable_and_empty_documents_fail_with_their_reason(tmp_path):
    import docx

    from rag_bench.parsing.docx_mammoth import MammothParser

    with pytest.raises(ParseFailure, match="unreadable DOCX"):
        MammothParser().parse(b"PK\x03\x04 not a zip", ".docx")
    docx.Document().save(str(tmp_path / "empty.docx"))
    with pytest.raises(ParseFailure, match="no text"):
        MammothParser().parse((tmp_path / "empty.docx").read_bytes(), ".docx")


def test_the_option_builds_from_its_config_and_runs_in_the_bounded_child(tmp_path):
    from rag_bench.parsing.files import ParseCache, parse_files
    from rag_bench.runner.config import build

    parser = build(compose_config(["parser=mammoth"]).parser, "parser")
    from rag_bench.parsing.base import package_version

    assert parser.name == "mammoth" and parser.version().startswith(package_version("mammoth") + "+html2text-")
    path = write_docx(tmp_path / "own.docx", "Shop policy", OWN)
    store = ParseCache(tmp_path / "parses.sqlite")
    first = parse_files([path], parser, store)[0]
    assert first.parsed is not None and first.parser == "mammoth" and "| Lost card | 5 EUR | once |" in first.parsed.text
    assert parse_files([path], parser, store)[0].cached
