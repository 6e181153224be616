"""``rag-bench parse`` through the real command line (a subprocess): a dataset's PDF, HTML and DOCX
files (written at test time) printed with page marks, or written as .md files with parse.json;
unreadable files recorded (exit 0); the sweep's parse cache shared; bad input exits 2 with the
file and a fix."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.parsing.render import OWN, to_html, write_docx, write_encrypted_pdf, write_malformed_pdf, write_pdf

pytest.importorskip("pymupdf", reason="the PDFs are written by pymupdf (pip install 'rag-bench-harness[parse]')")
REPO = Path(__file__).resolve().parents[2]


def _cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "RAG_BENCH_CACHE": str(tmp_path / "cache"), "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "rag_bench.cli", "parse", *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)


def _dataset(root: Path) -> Path:
    docs = root / "docs"
    (docs / "shop").mkdir(parents=True)
    write_pdf(docs / "policy.pdf", "Shop policy", OWN)
    (docs / "shop" / "page.html").write_text(to_html("Shop policy", OWN), encoding="utf-8")
    write_docx(docs / "handbook.docx", "Shop policy", OWN)
    write_malformed_pdf(docs / "broken.pdf")
    write_encrypted_pdf(docs / "locked.pdf", "secret")
    (docs / "notes.md").write_text("# Notes\n\nRead as it is.\n", encoding="utf-8")
    return root


def test_parse_prints_each_document_with_its_pages_and_records_failures(tmp_path):
    data = _dataset(tmp_path / "ds")
    done = _cli(tmp_path, str(data), "parser=pdfplumber")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "==> policy.pdf [parser=pdfplumber, 2 pages," in out and "parsed now" in out
    pdf = out.split("==> policy.pdf", 1)[1].split("==> ", 1)[0]
    assert "[page 1]" in pdf and "[page 2]" in pdf and "| Late return | 12 EUR | per day |" in pdf
    assert pdf.index("thirty days") < pdf.index("[page 2]") < pdf.index("refund is paid")
    # types pdfplumber does not read go to auto's parser for the type, as in a sweep
    assert "==> shop/page.html [parser=html2text," in out and "==> handbook.docx [parser=python_docx," in out
    assert "==> broken.pdf [parser=pdfplumber] FAILED: unreadable PDF" in out
    assert "==> locked.pdf [parser=pdfplumber] FAILED: encrypted PDF" in out
    assert "notes.md" not in out  # read as it is, not parsed
    assert "parser=pdfplumber: 5 documents, 3 parsed (0 from the cache), 2 failed" in done.stderr


def test_parse_out_writes_the_exact_parse_and_a_json_and_shares_the_cache(tmp_path):
    data = _dataset(tmp_path / "ds")
    first = _cli(tmp_path, str(data), "parser=pypdf", "--out", str(tmp_path / "parses"))
    assert first.returncode == 0, first.stderr
    report = json.loads((tmp_path / "parses" / "parse.json").read_text())
    files = {f["file"]: f for f in report["files"]}
    assert report["parser"] == "pypdf" and report["documents"] == 5 and report["failed"] == 2
    pdf = files["policy.pdf"]
    text = (tmp_path / "parses" / pdf["markdown"]).read_text(encoding="utf-8")
    assert pdf["ok"] and not pdf["cached"] and pdf["chars"] == len(text) and pdf["seconds"] > 0
    assert [p["page"] for p in pdf["pages"]] == [1, 2] and pdf["pages"][1]["end"] == len(text)
    second = text[pdf["pages"][1]["start"]:]
    assert "refund is paid" in second and "thirty days" not in second  # the page map indexes the .md text
    assert (tmp_path / "parses" / "shop" / "page.html.md").is_file()
    assert files["locked.pdf"]["reason"].startswith("encrypted PDF") and "markdown" not in files["locked.pdf"]
    assert "[page 1]" not in text and "# Shop policy" not in first.stdout  # texts go to the files, not stdout

    again = _cli(tmp_path, str(data), "parser=pypdf", "--out", str(tmp_path / "parses2"))
    hits = {f["file"]: f["cached"] for f in json.loads((tmp_path / "parses2" / "parse.json").read_text())["files"]}
    assert hits == dict.fromkeys(files, True)  # every file (failures too) from the parse cache
    assert "5 documents, 3 parsed (5 from the cache), 2 failed; 0.00 s parsing now (" in again.stderr
    assert json.loads((tmp_path / "parses2" / "parse.json").read_text())["seconds_now"] == 0
    fresh = _cli(tmp_path, str(data), "parser=pypdf", "--no-cache", "--out", str(tmp_path / "parses3"))
    assert fresh.returncode == 0 and "3 parsed (0 from the cache)" in fresh.stderr
    assert not any(f["cached"] for f in json.loads((tmp_path / "parses3" / "parse.json").read_text())["files"])
    assert (tmp_path / "parses3" / "policy.pdf.md").read_text(encoding="utf-8") == text


def test_parse_one_file_with_the_chosen_parser(tmp_path):
    data = _dataset(tmp_path / "ds")
    done = _cli(tmp_path, str(data / "docs" / "shop" / "page.html"), "parser=trafilatura")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("==> page.html [parser=trafilatura,") and "## Refunds" in done.stdout
    assert "1 document, 1 parsed" in done.stderr


@pytest.mark.parametrize(("args", "wanted"), [
    (["{data}", "parser=pdfplumbr"], "did you mean parser=pdfplumber? (parser's options: auto, "),
    (["{data}/nope"], "nope: [PATH] no such file or folder -- fix: give a dataset folder"),
    (["{data}/docs/notes.md"], "notes.md: [PATH] is read as it is, by every parser (nothing to parse) -- fix:"),
    (["{data}", "chunker=fixed"], "parse takes parser=NAME and parser.KEY=VALUE only -- fix:"),
    (["{data}", "parser=trafilatura", "parser.favor_recal=false"], "did you mean parser.favor_recall?"),
    (["{data}", "--out", "{data}/docs/out"], "[--out] is inside the documents being parsed"),
])
def test_bad_input_exits_2_with_the_file_and_a_fix(tmp_path, args, wanted):
    data = _dataset(tmp_path / "ds")
    done = _cli(tmp_path, *(a.format(data=data) for a in args))
    assert done.returncode == 2 and wanted in done.stderr, done.stderr
    assert done.stdout == "" and not (data / "docs" / "out").exists()


def test_help_explains_the_command(tmp_path):
    done = _cli(tmp_path, "--help")
    assert done.returncode == 0
    for words in ("PATH", "parser=NAME", "--out DIR", "parse.json", "--no-cache", "exits 2", "conf/parser/"):
        assert words in done.stdout


def test_pymupdf4llm_prints_no_library_messages_on_the_console(tmp_path):
    """pymupdf4llm printed "=== Document parser messages === / Warning: RapidOCR is missing" and a blank
    line once per document it parsed (each in a child of its own): twice in a sweep over two PDFs."""
    docs = tmp_path / "data" / "docs"
    docs.mkdir(parents=True)
    write_pdf(docs / "a.pdf", "Shop policy", OWN)
    write_pdf(docs / "b.pdf", "Other policy", OWN)
    done = _cli(tmp_path, str(tmp_path / "data"), "parser=pymupdf4llm", "--out", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    said = done.stdout + done.stderr
    assert "RapidOCR" not in said and "Document parser messages" not in said, said
    assert [line for line in done.stdout.splitlines() if not line.strip()] == [], done.stdout
    assert done.stdout.count("==> ") == 2
