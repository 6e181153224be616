"""A cell over parsed documents whose parse lost gold quotes (issue 43): the questions stay in the
cell, the lost quotes stay gold -- relevant and never retrieved -- and the figures metrics.json
reports are trec_eval's on the cell's own run.trec and qrels.trec (lost quotes listed as
``lost:<doc_id>:<n>``) and run.document.trec / qrels.document.trec."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from rag_bench.runner.main import run_cell
from tests.conftest import compose_config
from tests.parsing.render import OWN, write_encrypted_pdf, write_pdf

pytest.importorskip("pymupdf", reason="the PDFs are written by pymupdf (pip install 'rag-bench-harness[parse]')")


def _dataset(root: Path) -> Path:
    (root / "docs").mkdir(parents=True)
    write_pdf(root / "docs" / "policy.pdf", "Shop policy", OWN)
    write_encrypted_pdf(root / "docs" / "locked.pdf", "Gift cards never expire.")
    (root / "docs" / "shipping.md").write_text("# Shipping\n\nParcels leave the warehouse every weekday at noon.\n")
    for name, text in (("opening", "The shop opens at nine and closes at six."),  # BM25 needs a few documents
                       ("contact", "Write to the shop by post or call the help line."),  # for a positive idf
                       ("stores", "There are stores in three towns along the coast.")):
        (root / "docs" / f"{name}.md").write_text(f"# {name.title()}\n\n{text}\n")
    questions = [
        {"id": "gift", "question": "Do gift cards expire?", "answerable": True, "answers": ["never"],
         "evidence": [{"doc_id": "locked", "quote": "Gift cards never expire"}]},
        {"id": "both", "question": "How long do returns take and do gift cards expire?", "answerable": True,
         "answers": ["thirty days"], "evidence": [{"doc_id": "policy", "quote": "returned within thirty days"},
                                                  {"doc_id": "locked", "quote": "Gift cards never expire", "grade": 2}]},
        {"id": "ship", "question": "When do parcels leave the warehouse?", "answerable": True,
         "answers": ["every weekday at noon"], "evidence": [{"doc_id": "shipping", "quote": "every weekday at noon"}]},
    ]
    (root / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in questions))
    return root


def test_lost_quotes_are_scored_as_trec_eval_scores_the_cell_files(tmp_path, monkeypatch):
    from rag_bench.metrics.trec import evaluate, read_qrels, read_run

    monkeypatch.setenv("RAG_BENCH_CACHE", str(tmp_path / "cache"))
    data = _dataset(tmp_path / "shop")
    cell = run_cell(compose_config(["tracking=none", f"output.root={tmp_path / 'out'}", f"dataset.path={data}",
                                    "parser=pypdf", "eval.unit=both", "generator=none"]))
    m = json.loads((cell / "metrics.json").read_text())
    qrels_text = (cell / "qrels.trec").read_text()
    assert "gift 0 lost:locked:1 1\n" in qrels_text and "both 0 lost:locked:1 2\n" in qrels_text
    assert m["counts"]["questions"] == 3 and m["parse"]["questions_lost"] == 2
    records = pd.read_parquet(cell / "records.parquet").set_index("qid")
    assert records.loc["gift", "failure"] == "parsing"  # nothing located: nothing to retrieve
    assert records.loc["gift", "n_relevant"] == 1 and records.loc["both", "n_relevant"] >= 2
    ks = [1, 3, 5, 10]
    measures = ["map", "recip_rank"] + [f"{p}.{','.join(map(str, ks))}" for p in ("P", "recall", "success", "ndcg_cut")]
    names = {"P": "precision", "recall": "recall", "success": "hit", "ndcg_cut": "ndcg"}
    for section, run_file, qrels_file in (("retrieval", "run.trec", "qrels.trec"),
                                          ("document", "run.document.trec", "qrels.document.trec")):
        _, overall = evaluate(read_qrels(cell / qrels_file), read_run(cell / run_file), measures=measures)
        for trec_name, ours in names.items():
            for k in ks:
                assert overall[f"{trec_name}_{k}"] == pytest.approx(m[section][f"{ours}@{k}"], abs=1e-9), \
                    (section, trec_name, k)
        assert overall["map"] == pytest.approx(m[section]["map"], abs=1e-9)
    # The lost quote's document is relevant at document level too (it failed to parse: never retrieved).
    assert "gift 0 locked 1" in (cell / "qrels.document.trec").read_text()
    # Evidence: the lost quote is a span never covered, so "both" is at most half covered.
    assert records.loc["both", "evidence_recall@10"] <= 0.5
