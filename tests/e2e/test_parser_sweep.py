"""The parser sweep of issue 43 through the real CLI (``-m parser=pypdf,pdfplumber,pymupdf4llm,markitdown``)
over PDFs rendered at test time from squad2-normans (headings, a table, two columns): every cell
reports parse/* and they differ, the malformed and the encrypted PDF are recorded per-document
failures (exit 0), a parser that loses a table row's quote has the question labelled ``parsing``
(evaluated, not left out), and a second sweep parses nothing (the parse cache)."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.parsing.render import normans, write_encrypted_pdf, write_malformed_pdf, write_pdf

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]
PARSERS = ("pypdf", "pdfplumber", "pymupdf4llm", "markitdown")
# Two questions on the table the first page holds (tests/parsing/render.py TABLE), tagged ``table``:
# one quotes the whole row, one the two cells holding the answer.
TABLE_QUESTIONS = [
    {"id": "table-late", "question": "What is the fee for a late return?", "answerable": True, "tags": ["table"],
     "evidence": [{"doc_id": "normans", "quote": "Late return 12 EUR per day"}], "answers": ["12 EUR per day"]},
    {"id": "table-card", "question": "How much is charged for a lost card?", "answerable": True, "tags": ["table"],
     "evidence": [{"doc_id": "normans", "quote": "5 EUR once"}], "answers": ["5 EUR once"]},
]


def _dataset(root: Path) -> Path:
    title, sections, questions = normans(10)
    items = list(sections.items())
    docs = root / "docs"
    docs.mkdir(parents=True)
    write_pdf(docs / "normans.pdf", title, dict(items[:6]))  # a page per paragraph, a table on page 1
    write_pdf(docs / "normans_columns.pdf", title, dict(items[6:]), table=None, two_columns=True)
    write_encrypted_pdf(docs / "locked.pdf", "The Normans' locked chronicle.")
    write_malformed_pdf(docs / "broken.pdf")
    first = set(dict(items[:6]))
    with open(root / "questions.jsonl", "w", encoding="utf-8") as f:
        for q in questions:
            doc = "normans" if q["evidence"][0]["section"] in first else "normans_columns"
            q["evidence"] = [{**e, "doc_id": doc} for e in q["evidence"]]
            f.write(json.dumps(q) + "\n")
        for q in TABLE_QUESTIONS:
            f.write(json.dumps(q) + "\n")
    return root


def _sweep(tmp_path: Path, data: Path, name: str) -> tuple[subprocess.CompletedProcess[str], list[dict]]:
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, "RAG_BENCH_CACHE": str(tmp_path / "cache"), "PYTHONPATH": path}
    done = subprocess.run([sys.executable, "-m", "rag_bench.cli", "run", "-m", f"parser={','.join(PARSERS)}",
                           f"dataset.path={data}", "tracking=none", f"output.root={tmp_path / 'out'}",
                           f"experiment.name={name}"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=900)
    cells = []
    for metrics in sorted((tmp_path / "out" / name).glob("*/metrics.json")):
        cfg = (metrics.parent / "config.yaml").read_text()
        with open(metrics.parent / "failures.csv", newline="", encoding="utf-8") as f:
            labels = {row["qid"]: row["failure"] for row in csv.DictReader(f)}
        cells.append({"metrics": json.loads(metrics.read_text()), "config": cfg, "labels": labels})
    return done, cells


def test_parser_sweep_reports_parse_figures_and_records_unreadable_pdfs(tmp_path):
    pytest.importorskip("pymupdf", reason="the parse extra is not installed (make parse)")
    pytest.importorskip("markitdown.converters", reason="the parse extra is not installed (make parse)")
    data = _dataset(tmp_path / "normans-pdf")
    done, cells = _sweep(tmp_path, data, "parse")
    assert done.returncode == 0, done.stderr[-3000:] + done.stdout[-3000:]
    assert len(cells) == 4
    by_parser = {}
    labels = {}
    for cell in cells:
        parser = next(p for p in PARSERS if f"name: {p}\n" in cell["config"])
        parse = cell["metrics"]["parse"]
        by_parser[parser] = parse
        labels[parser] = (cell["metrics"]["failures"], cell["labels"])
        # Every question is evaluated, whatever its parser lost (none left out of the cell).
        assert cell["metrics"]["counts"]["questions"] == len(normans(10)[2]) + len(TABLE_QUESTIONS)
        assert parse["documents"] == 4 and parse["failed_documents"] == 2
        assert parse["parsed_documents"] + parse["cache_hits"] == 4
        failures = cell["metrics"]["parse_failures"]
        assert set(failures) == {"broken", "locked"} and "encrypted" in failures["locked"]
        assert 0 < parse["evidence_located"] <= 1 and parse["evidence_exact"] <= parse["evidence_located"]
        assert parse["seconds"] > 0
        assert cell["metrics"]["counts"]["documents"] == 2
    assert set(by_parser) == set(PARSERS)
    figures = {p: tuple(v for k, v in sorted(f.items()) if k.startswith("evidence")) for p, f in by_parser.items()}
    assert len(set(figures.values())) > 1, figures  # the parsers read the same PDFs differently
    # The table rows: pypdf keeps a row as one text line, pdfplumber and pymupdf4llm as one Markdown
    # table row; markitdown's PDF text glues the cells ("Late return12 EURper day"): the whole-row
    # quote is found only fuzzily (not intact) and the two-cell quote not at all -- that question is
    # evaluated and labelled parsing.
    assert {p: f["table_rows_intact"] for p, f in by_parser.items()} == {
        "pypdf": 1.0, "pdfplumber": 1.0, "pymupdf4llm": 1.0, "markitdown": 0.0}
    assert by_parser["markitdown"]["questions_lost"] == 1 and by_parser["pypdf"]["questions_lost"] == 0
    counts, per_question = labels["markitdown"]
    assert counts["parsing"] == 1 and per_question["table-card"] == "parsing"
    for parser in ("pypdf", "pdfplumber", "pymupdf4llm"):
        assert labels[parser][0]["parsing"] == 0 and labels[parser][1]["table-card"] != "parsing"
    # Headings: only pymupdf4llm writes the rendered headings as Markdown headings.
    assert by_parser["pymupdf4llm"]["headings_found"] > by_parser["pypdf"]["headings_found"]
    assert "document 'locked' could not be parsed: encrypted PDF" in done.stdout + done.stderr

    again, cells2 = _sweep(tmp_path, data, "parse-again")
    assert again.returncode == 0, again.stderr[-3000:]
    assert [c["metrics"]["parse"]["parsed_documents"] for c in cells2] == [0, 0, 0, 0]
    assert [c["metrics"]["parse"]["cache_hits"] for c in cells2] == [4, 4, 4, 4]
    for a, b in zip(cells, cells2):  # the same figures from the cached parses
        assert {k: v for k, v in a["metrics"]["parse"].items() if k not in ("parsed_documents", "cache_hits")} == \
            {k: v for k, v in b["metrics"]["parse"].items() if k not in ("parsed_documents", "cache_hits")}
