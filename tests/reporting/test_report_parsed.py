"""The drill-down on a dataset of PDFs: each cell's passages are read from that cell's own parse
(a chunk's offsets index its parser's text), and a question's evidence is shown in the parse --
the located span marked, its page from the page map, how the quote was located, and the quotes
this parse did not find (headless Chromium on the written report)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag_bench.cells import load_cell
from rag_bench.reporting import drill
from rag_bench.reporting.report import render_report
from tests.parsing.render import OWN, write_encrypted_pdf, write_pdf
from tests.reporting.cdp import CHROMIUM, Page
from tests.runner.test_run_cell import run

pytest.importorskip("pymupdf", reason="the PDFs are written by pymupdf (pip install 'rag-bench-harness[parse]')")
EXTRA = {"Exchanges": "An exchange for another size is free of charge and is shipped the same day it is asked for.",
         "Gift cards": "Gift cards never expire and can be used for any item in the shop or online."}
QUESTIONS = [
    {"id": "q1", "question": "How fast is a refund paid?", "answerable": True, "answers": ["five working days"],
     "evidence": [{"doc_id": "policy", "quote": "within five working days"}]},  # page 2, as written
    {"id": "q2", "question": "How long may items be returned?", "answerable": True, "answers": ["thirty days"],
     "evidence": [{"doc_id": "policy", "quote": "ITEMS MAY BE RETURNED WITHIN THIRTY DAYS"}]},  # case differs
    {"id": "q3", "question": "Do gift cards expire?", "answerable": True, "answers": ["never"],
     "evidence": [{"doc_id": "policy", "quote": "Gift cards never expire"},
                  {"doc_id": "policy", "quote": "Gift vouchers are valid for ten years from purchase."},
                  {"doc_id": "locked", "quote": "gift cards"}]},
    {"id": "q4", "question": "Where do I ask about orders?", "answerable": True, "answers": ["the help desk"],
     "evidence": [{"doc_id": "contact", "quote": "Ask the help desk about orders."}]},
]


def _dataset(root: Path) -> Path:
    docs = root / "docs"
    docs.mkdir(parents=True)
    write_pdf(docs / "policy.pdf", "Shop policy", {**OWN, **EXTRA})  # a page per section, the table on page 1
    write_encrypted_pdf(docs / "locked.pdf", "Gift cards are sold at the desk.")
    (docs / "contact.md").write_text("# Contact\n\nAsk the help desk about orders.\n", encoding="utf-8")
    (root / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS), encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def parsed_cells(tmp_path_factory):
    root = tmp_path_factory.mktemp("parsed-cells")
    data = _dataset(root / "shop")
    return {p: load_cell(run(root, "experiment.name=shop", f"parser={p}", "chunker=fixed", "chunker.size=120",
                             "chunker.overlap=0", dataset=data)) for p in ("pypdf", "pdfplumber")}


def test_each_cells_passages_come_from_its_own_parse(parsed_cells):
    from rag_bench.data.loader import load_dataset
    from rag_bench.parsing.pdf_plumber import PdfplumberParser

    cell = parsed_cells["pdfplumber"]
    own = load_dataset(cell.config["dataset"]["path"], parser=PdfplumberParser()).documents
    passages = drill.Passages()
    rows = drill.cell_rows(cell, passages, drill.Corpus())
    records = cell.records.set_index("qid")
    checked = 0
    for row in rows:
        spans = list(records.loc[row["qid"], "chunk_spans"])
        for (n, _cid, _s, _g), span in zip(row["ranked"], spans):
            assert passages.texts[n] == own[span["doc_id"]].text[int(span["start"]):int(span["end"])]
            checked += 1
    assert checked >= 8
    # pypdf reads the same PDF into another text: the offsets of one parse do not fit the other
    assert own["policy"].text != load_dataset(cell.config["dataset"]["path"]).documents["policy"].text


def test_parsed_evidence_rows_carry_page_method_and_the_unlocated_quotes(parsed_cells):
    rows = {r["qid"]: r for r in drill.cell_rows(parsed_cells["pdfplumber"], drill.Passages(), drill.Corpus())}
    q1 = rows["q1"]["parsed"]
    assert rows["q1"]["parser"] == "pdfplumber"
    assert [(e["doc"], e["method"], e["page"], e["pages"], e["text"][1]) for e in q1] == \
        [("policy", "exact", 2, 4, "within five working days")]
    assert "refund is paid to the original card" in " ".join((q1[0]["text"][0] + q1[0]["text"][1]).split())
    (q2,) = rows["q2"]["parsed"]
    assert (q2["method"], q2["page"], q2["text"][1].lower()) == ("normalised", 1, "items may be returned within thirty days")
    q3 = rows["q3"]["parsed"]
    assert [(e["doc"], e["method"]) for e in q3] == [("policy", "exact"), ("policy", "none"), ("locked", "failed")]
    assert q3[0]["page"] == 4 and q3[1]["why"] == "not found in this parse"
    assert q3[2]["why"].startswith("the document could not be parsed (encrypted PDF")
    assert rows["q4"]["parsed"] == []  # a .md document is not parsed


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")
def test_drill_down_shows_the_parse_around_the_evidence(parsed_cells, tmp_path):
    cell = parsed_cells["pdfplumber"]
    index = render_report(cell.path.parent, out_root=tmp_path / "reports", log_to_mlflow=False)
    with Page(tmp_path / "p") as page:
        page.goto(index.as_uri() + f"#drill={cell.cell_id}&q=q3&only=drill")
        page.wait("document.body.dataset.drillQ === 'q3'")
        boxes = page.eval("Array.from(document.querySelectorAll('#rb-detail .rb-parsed')).map(d => "
                          "[d.dataset.method, d.querySelector('b').textContent.trim(), "
                          "(d.querySelector('mark') || {}).textContent || null, (d.querySelector('mark') || {}).className || null])")
        assert boxes == [
            ["exact", "[policy, page 4 of 4] located: exact", "Gift cards never expire", "loc-exact"],
            ["none", "[policy] not found in this parse", None, None],
            ["failed", "[locked] the document could not be parsed (encrypted PDF (a password is needed))", None, None]]
        heading = page.eval("Array.from(document.querySelectorAll('#rb-detail h4')).map(h => h.textContent)")
        assert "Evidence in the parse (parser=pdfplumber)" in heading
        around = page.eval("document.querySelector('#rb-detail .rb-parsed').textContent")
        assert "can be used for any item" in " ".join(around.split())  # the parse after the span, shown
        page.eval("location.hash = 'drill=" + cell.cell_id + "&q=q2&only=drill'")
        page.wait("document.body.dataset.drillQ === 'q2'")
        assert page.eval("document.querySelector('#rb-detail .rb-parsed mark').className") == "loc-normalised"
        assert "page 1 of 4" in page.eval("document.querySelector('#rb-detail .rb-parsed b').textContent")
        assert not page.errors


def test_the_drill_down_reads_the_stored_run_and_parses_nothing(parsed_cells, monkeypatch, tmp_path, caplog):
    """Issue 51, item 4: reports never recompute -- the texts come from the run each cell stored (its
    own parse), so neither the dataset nor a parser is needed where the report is made (a parser not
    installed here changes nothing); a cell that stored no run shows ids and the records' context texts."""
    import copy
    import dataclasses
    import shutil

    import rag_bench.data.loader as loader

    def refused(*args, **kwargs):
        raise AssertionError("the report parsed the dataset again")

    monkeypatch.setattr(loader, "load_dataset", refused)
    cell = parsed_cells["pdfplumber"]
    config = copy.deepcopy(cell.config)
    config["parser"]["_target_"] = "no_such_package.Parser"
    other = dataclasses.replace(cell, config=config)
    seen = drill.Corpus().get(other)
    assert seen is not None and seen.parse is not None and seen.parse.parser == cell.config["parser"]["name"]
    assert [r["parsed"] for r in drill.cell_rows(other, drill.Passages(), drill.Corpus())] == \
        [r["parsed"] for r in drill.cell_rows(cell, drill.Passages(), drill.Corpus())]
    bare = tmp_path / cell.path.name
    shutil.copytree(cell.path, bare)
    (bare / "question-runs.jsonl").unlink()
    without = dataclasses.replace(cell, path=bare)
    corpus = drill.Corpus()
    assert corpus.get(without) is None and "stored no readable run" in caplog.text
    rows = drill.cell_rows(without, drill.Passages(), corpus)
    assert len(rows) == len(cell.records) and all(r["parsed"] == [] for r in rows)


def test_the_report_lists_each_cells_parse_and_every_file_that_failed_with_its_reason(parsed_cells, tmp_path):
    # issue 43: a file a parser cannot read is recorded with its reason in metrics.json AND the report
    cell = parsed_cells["pypdf"]
    text = render_report(cell.path.parent, out_root=tmp_path / "reports", log_to_mlflow=False).read_text()
    section = text[text.index("data-sec='documents'"):]
    section = section[:section.index("</section>")]
    assert "Documents: parsing and hostile text" in section
    for parser in ("pypdf", "pdfplumber"):
        assert f">{parser}<" in section
    assert section.count(">encrypted PDF (a password is needed)<") == 2  # the locked file, in each cell
    assert "2 document file(s) could not be parsed" in section


def test_the_documents_section_is_per_parser_and_document_not_per_cell(parsed_cells, tmp_path):
    """Issue 56 item 4: every cell of one parser reads one parse, so the section has a row per parser
    and per (parser, document) -- a second cell of pypdf adds no row -- with each document's quotes
    (metrics.json parse_documents) and the parse seconds as a cost column."""
    import shutil

    import yaml

    cell = parsed_cells["pypdf"]
    docs = cell.metrics["parse_documents"]
    assert docs["policy"]["quotes"] == 4 and 0 < docs["policy"]["located"] <= 4 and docs["policy"]["exact"] <= 4
    assert docs["locked"]["quotes"] == 1 and docs["locked"]["located"] == 0
    exp = tmp_path / "shop"
    shutil.copytree(cell.path.parent, exp, ignore=shutil.ignore_patterns(".hydra"))
    twin = exp / "0123456789ab"  # another cell of the same parser (k differs): the same parse
    shutil.copytree(cell.path, twin)
    config = yaml.safe_load((twin / "config.yaml").read_text())
    config["pipeline"]["k"] = int(config["pipeline"]["k"]) + 1
    (twin / "config.yaml").write_text(yaml.safe_dump(config))
    text = render_report(exp, out_root=tmp_path / "reports", log_to_mlflow=False).read_text()
    section = text[text.index("data-sec='documents'"):]
    section = section[:section.index("</section>")]
    per_document = section[section.index("Each parser, each document"):section.index("could not be parsed")]
    assert per_document.count(">policy<") == 2 and per_document.count(">locked<") == 2  # 2 parsers x 2 files
    assert "parse s" in section and ">pypdf<" in section and ">pdfplumber<" in section
    costs = text[text.index("data-sec='costs'"):]
    assert "parse s" in costs[:costs.index("</section>")]


def test_a_report_of_markdown_cells_has_no_documents_section(tmp_path):
    cell = run(tmp_path, "experiment.name=md")
    text = render_report(cell.parent, out_root=tmp_path / "reports", log_to_mlflow=False).read_text()
    assert "data-sec='documents'" not in text
