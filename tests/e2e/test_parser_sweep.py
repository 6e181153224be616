"""A parser sweep through the real CLI over PDFs rendered at test time from squad2-normans: every
cell reports parse/*, the malformed and the encrypted PDF are recorded per-document failures
(exit 0), and a second sweep parses nothing (the parse cache)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.parsing.render import normans, write_encrypted_pdf, write_malformed_pdf, write_pdf

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]
PARSERS = ("pypdf", "pdfplumber", "pymupdf4llm")


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
    return root


def _sweep(tmp_path: Path, data: Path, name: str) -> tuple[subprocess.CompletedProcess[str], list[dict]]:
    env = {**os.environ, "RAG_BENCH_CACHE": str(tmp_path / "cache"), "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-m", "rag_bench.cli", "run", "-m", f"parser={','.join(PARSERS)}",
                           f"dataset.path={data}", "tracking=none", f"output.root={tmp_path / 'out'}",
                           f"experiment.name={name}"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=900)
    cells = []
    for metrics in sorted((tmp_path / "out" / name).glob("*/metrics.json")):
        cfg = (metrics.parent / "config.yaml").read_text()
        cells.append({"metrics": json.loads(metrics.read_text()), "config": cfg})
    return done, cells


def test_parser_sweep_reports_parse_figures_and_records_unreadable_pdfs(tmp_path):
    pytest.importorskip("pymupdf", reason="the parse extra is not installed (make parse)")
    data = _dataset(tmp_path / "normans-pdf")
    done, cells = _sweep(tmp_path, data, "parse")
    assert done.returncode == 0, done.stderr[-3000:] + done.stdout[-3000:]
    assert len(cells) == 3
    by_parser = {}
    for cell in cells:
        parser = next(p for p in PARSERS if f"name: {p}\n" in cell["config"])
        parse = cell["metrics"]["parse"]
        by_parser[parser] = parse
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
    assert "document 'locked' could not be parsed: encrypted PDF" in done.stdout + done.stderr

    again, cells2 = _sweep(tmp_path, data, "parse-again")
    assert again.returncode == 0, again.stderr[-3000:]
    assert [c["metrics"]["parse"]["parsed_documents"] for c in cells2] == [0, 0, 0]
    assert [c["metrics"]["parse"]["cache_hits"] for c in cells2] == [4, 4, 4]
