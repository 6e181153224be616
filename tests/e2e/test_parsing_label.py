"""The ``parsing`` failure label through the real CLI (issue 43): a question whose gold quote a
parser lost is evaluated -- not left out of the cell -- and its failures.csv row and metrics.json
tally say ``parsing``; a parser that keeps the quote does not. markitdown's PDF text glues a table
row's cells ("5 EURonce"), so the two-cell quote "5 EUR once" is lost there and found by pypdf; a
quote in an encrypted PDF is lost by every parser (the document has no parse)."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.parsing.render import OWN, write_encrypted_pdf, write_pdf

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]


def _q(qid: str, question: str, doc: str, quote: str, answer: str, tags: tuple[str, ...] = ()) -> dict:
    return {"id": qid, "question": question, "answerable": True, "tags": list(tags),
            "evidence": [{"doc_id": doc, "quote": quote}], "answers": [answer]}


def test_a_question_whose_quote_one_parser_loses_is_evaluated_and_labelled_parsing(tmp_path):
    pytest.importorskip("pymupdf", reason="the parse extra is not installed (make parse)")
    pytest.importorskip("markitdown.converters", reason="the parse extra is not installed (make parse)")
    data = tmp_path / "shop"
    (data / "docs").mkdir(parents=True)
    write_pdf(data / "docs" / "policy.pdf", "Shop policy", OWN)  # with the fee table under Returns
    write_encrypted_pdf(data / "docs" / "locked.pdf", "Gift cards never expire.")
    (data / "docs" / "shipping.md").write_text("# Shipping\n\nParcels leave the warehouse every weekday at noon.\n")
    questions = [
        _q("card", "How much is charged for a lost card?", "policy", "5 EUR once", "5 EUR once", ("table",)),
        _q("returns", "How long do I have to return an item?", "policy", "returned within thirty days of delivery",
           "thirty days"),
        _q("gift", "Do gift cards expire?", "locked", "Gift cards never expire", "never"),
        _q("ship", "When do parcels leave the warehouse?", "shipping", "every weekday at noon", "every weekday at noon"),
    ]
    (data / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in questions))
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, "RAG_BENCH_CACHE": str(tmp_path / "cache"), "PYTHONPATH": path}
    done = subprocess.run([sys.executable, "-m", "rag_bench.cli", "run", "-m", "parser=pypdf,markitdown",
                           f"dataset.path={data}", "tracking=none", f"output.root={tmp_path / 'out'}",
                           "experiment.name=label"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stderr[-3000:] + done.stdout[-3000:]
    cells = {}
    for metrics in sorted((tmp_path / "out" / "label").glob("*/metrics.json")):
        parser = "markitdown" if "name: markitdown\n" in (metrics.parent / "config.yaml").read_text() else "pypdf"
        with open(metrics.parent / "failures.csv", newline="", encoding="utf-8") as f:
            labels = {row["qid"]: row["failure"] for row in csv.DictReader(f)}
        cells[parser] = (json.loads(metrics.read_text()), labels)
    assert set(cells) == {"pypdf", "markitdown"}
    for parser, (metrics, labels) in cells.items():
        # Every question is in the cell (main's code left the lost ones out) ...
        assert set(labels) == {"card", "returns", "gift", "ship"}
        assert metrics["counts"]["questions"] == 4 and metrics["counts"]["evaluated"] == 4
        # ... the encrypted document's question is lost to parsing in both cells ...
        assert labels["gift"] == "parsing", (parser, labels)
        assert metrics["failures"]["parsing"] == (2 if parser == "markitdown" else 1)
        assert metrics["parse"]["questions_lost"] == metrics["failures"]["parsing"]
        assert labels["ship"] != "parsing" and labels["returns"] != "parsing"
    # ... and the table question only where the parser lost its cells.
    assert cells["markitdown"][1]["card"] == "parsing"
    assert cells["pypdf"][1]["card"] != "parsing"
    assert cells["markitdown"][0]["parse"]["table_rows_intact"] == 0.0
    assert cells["pypdf"][0]["parse"]["table_rows_intact"] == 1.0
