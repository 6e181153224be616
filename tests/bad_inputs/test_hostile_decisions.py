"""Fourth round of hostile inputs, on what rag_bench decides and keeps, through the real command
line: an application's passages its asker may not read (counted, their text written nowhere), a
primary measure no cell has, tags whose MLflow names collide once sanitised, a measure named twice
in ``compare -m``, a failed call's trace span, and report URLs whose hash names ``Object``'s own
properties."""

from __future__ import annotations

import gzip
import json
import sqlite3
import zlib
from pathlib import Path

import pandas as pd
import pytest

from rag_bench.cli import main as cli

MLFLOW_ENV = ("MLFLOW_TRACKING_URI", "RAG_BENCH_PARENT_RUN_ID", "RAG_BENCH_SWEEP_ID")


@pytest.fixture
def local_mlflow(monkeypatch):
    """MLflow's default store (a SQLite file under output.root), no sweep of an earlier test."""
    for name in MLFLOW_ENV:
        monkeypatch.delenv(name, raising=False)


# --- 3. an application's passages the asker may not read ---------------------------------------

CANARY = "Zq7CanaryStaffOnly"  # in the staff document only
PUBLIC = "Refunds are paid within 14 days of the request."
SECRET = f"Staff may approve refunds up to 500 euros without review, code {CANARY}."
CUSTOMER = {"tenant": "acme", "groups": ["customers"]}


def _staff_dataset(tmp: Path) -> Path:
    """a-staff (staff only) holds SECRET with the canary; z-faq (public) holds PUBLIC."""
    data = tmp / "data"
    (data / "docs").mkdir(parents=True)
    (data / "docs" / "a-staff.md").write_text(f"# Staff notes\n\n{SECRET}\n")
    (data / "docs" / "z-faq.md").write_text(f"# FAQ\n\n{PUBLIC}\n")
    (data / "docs.jsonl").write_text("".join(json.dumps(d) + "\n" for d in [
        {"doc_id": "a-staff", "title": "Staff notes", "tenant": "acme", "acl": ["staff"]},
        {"doc_id": "z-faq", "title": "FAQ", "tenant": "acme", "acl": []}]))
    (data / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in [
        {"id": "q1", "question": "When are refunds paid?", "answerable": True, "asker": CUSTOMER,
         "evidence": [{"doc_id": "z-faq", "quote": PUBLIC}], "facts": ["14 days"], "answers": ["within 14 days"]},
        {"id": "q2", "question": "How much may staff refund?", "answerable": False, "asker": CUSTOMER}]))
    (data / "dataset.yaml").write_text("name: staff\nlicense: CC-BY-4.0 (written by the rag_bench authors)\n")
    return data


def _holds(value: object, needle: str) -> bool:
    """``needle`` in a stored value: text, bytes (raw, gzip or zlib), or anything printed."""
    if isinstance(value, (bytes, memoryview)):
        raw = bytes(value)
        for unpack in (gzip.decompress, zlib.decompress):
            try:
                raw += unpack(raw)
            except Exception:  # noqa: BLE001 -- not that format
                pass
        return needle.encode() in raw
    return needle in str(value)


def _files_holding(root: Path, needle: str) -> list[str]:
    """Every file under ``root`` (parquet and SQLite decoded, row by row) that holds ``needle``."""
    found = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        if path.suffix == ".parquet":
            frame = pd.read_parquet(path)
            found += [f"{path}[{c}]" for c in frame.columns if frame[c].map(lambda v: _holds(v, needle)).any()]
        elif path.suffix == ".db":
            with sqlite3.connect(path) as db:
                tables = [t for (t,) in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
                for table in tables:
                    rows = db.execute(f'SELECT * FROM "{table}"').fetchall()
                    found += [f"{path}[{table}]"] if any(_holds(v, needle) for r in rows for v in r) else []
        elif _holds(path.read_bytes(), needle):
            found.append(str(path))
    return found


# How the application handed the staff passage to a customer: (outputs line passage, CLI flag)
STAFF_PASSAGES = [
    ("span", {"doc_id": "a-staff", "start": 15, "end": 15 + len(SECRET)}),
    ("text", {"text": SECRET}),
    ("text-claims-public-doc", {"doc_id": "z-faq", "text": SECRET}),
    ("ragas-context", None),
]


@pytest.mark.parametrize(("case", "passage"), STAFF_PASSAGES, ids=[c[0] for c in STAFF_PASSAGES])
def test_evaluate_counts_an_unreadable_passage_and_writes_its_text_nowhere(tmp_path, capsys, local_mlflow,
                                                                           case, passage):
    """The console said `SECURITY: 2 unauthorized retrieval(s)` while context_texts (records,
    MLflow), the traces, the label page and the report drill-down held the staff text."""
    data = _staff_dataset(tmp_path)
    public = {"doc_id": "z-faq", "start": 7, "end": 7 + len(PUBLIC)}
    out, outputs = tmp_path / "out", tmp_path / "outputs.jsonl"
    if passage is None:  # ragas: contexts by text, matched to the questions by their text
        samples = [{"user_input": "When are refunds paid?", "retrieved_contexts": [SECRET, PUBLIC],
                    "response": "Within 14 days [2]."},
                   {"user_input": "How much may staff refund?", "retrieved_contexts": [SECRET],
                    "response": "I cannot answer this from the provided sources."}]
        outputs.write_text("".join(json.dumps(s) + "\n" for s in samples))
        source = ["--ragas", str(outputs)]
    else:
        lines = [{"id": "q1", "retrieved": [passage, public], "answer": "Within 14 days [2].", "citations": [1, 2]},
                 {"id": "q2", "retrieved": [passage], "answer": "It depends.", "citations": [1]}]
        outputs.write_text("".join(json.dumps(line) + "\n" for line in lines))
        source = [str(outputs)]
    assert cli(["evaluate", *source, "--dataset", str(data), "--name", "app", f"output.root={out}",
                "experiment.name=x"]) == 0, capsys.readouterr().err
    said = capsys.readouterr()
    assert "SECURITY: 2 unauthorized retrieval(s)" in said.out + said.err
    (cell,) = [p.parent for p in (out / "x").glob("*/DONE")]
    metrics = json.loads((cell / "metrics.json").read_text())
    assert metrics["security"]["unauthorized_retrievals"] == 2
    records = pd.read_parquet(cell / "records.parquet").set_index("qid")
    assert records.loc["q1", "hit@1"] == 0.0 and records.loc["q1", "hit@3"] == 1.0  # the public one keeps rank 2
    assert list(records["unauthorized_retrievals"]) == [1, 1]
    # The pages that show passages: the label page and the report's drill-down.
    assert cli(["label", str(cell), "--out", str(tmp_path / "label.html")]) == 0
    assert cli(["report", str(out / "x"), "--out", str(tmp_path / "reports")]) == 0
    assert PUBLIC in (tmp_path / "label.html").read_text()  # the page does show the readable passage
    leaks = [f for root in (out, tmp_path / "reports", tmp_path / "label.html")
             for f in ([str(root)] if root.is_file() and CANARY in root.read_text() else
                       _files_holding(root, CANARY) if root.is_dir() else [])]
    assert not leaks, leaks
