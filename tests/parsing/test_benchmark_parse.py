"""benchmarks/parse.py measures what it says (no timing asserted: speeds are what it prints on the
machine at hand): every parser option reads its file type of the document built at run time, the
warm run is a cache hit, and the parses hold the sampled sentences."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from tests.parsing.render import SHARED_NORMANS

pytestmark = pytest.mark.slow
pytest.importorskip("pymupdf", reason="the document is written by pymupdf (pip install 'rag-bench-harness[parse]')")


def test_the_parse_benchmark_runs_every_parser_on_its_file_type(tmp_path, capsys):
    if not (SHARED_NORMANS / "docs" / "Normans.md").is_file():
        pytest.skip(f"squad2-normans not found at {SHARED_NORMANS} (external data, never copied into the repo)")
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "parse.py"
    spec = importlib.util.spec_from_file_location("parse_bench", path)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert bench.main(["--pages", "4", "--repeat", "1", "--json", str(tmp_path / "b.json")]) == 0
    rows = {r["parser"]: r for r in json.loads((tmp_path / "b.json").read_text())["rows"]}
    built, skipped = bench.parsers()
    assert set(rows) == {p.name for p in built} and {"pypdf", "pdfplumber", "html2text", "python_docx"} <= set(rows)
    files = {"pypdf": "normans.pdf", "pdfplumber": "normans.pdf", "pymupdf4llm": "normans.pdf",
             "html2text": "normans.html", "trafilatura": "normans.html", "python_docx": "normans.docx",
             "mammoth": "normans.docx"}
    for name, r in rows.items():
        assert r["ok"] and r["warm_cached"] and r["chars"] > 1000, r
        assert r["file"] == files.get(name, r["file"])
    assert rows["pypdf"]["pages_in_parse"] == 4 and rows["html2text"]["pages_in_parse"] == 0
    for name in ("pypdf", "html2text", "python_docx"):
        assert rows[name]["located"] == 1.0, rows[name]  # the parse holds every sampled sentence
    table = capsys.readouterr().out
    assert "s/page" in table and all(f"\n{name:<12} " in table for name in rows)
