"""Parse figures that tell the truth on real documents (issue 56 item 4), through a real cell
(`rag-bench run parser=pymupdf4llm`): a numbered heading ("2.4 Library Notes") is the section a locator
names ("Library Notes") for parse/headings_found; a parse whose words are glued together and one with
almost no text (a scan's thin text layer) each come with a warning and a measure."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.parsing.render import write_pdf

pytest.importorskip("pymupdf", reason="the PDFs are written by pymupdf (pip install 'rag-bench-harness[parse]')")
pytest.importorskip("pymupdf4llm", reason="the parser that keeps headings (pip install 'rag-bench-harness[parse]')")
NOTES = "Members may borrow up to six books at a time and keep them for three weeks."


def _scan(path: Path, pages: int) -> None:
    """A scan's text layer: nothing but a page number on each page."""
    import pymupdf

    doc = pymupdf.open()
    for i in range(pages):
        doc.new_page().insert_text((300, 800), str(i + 1), fontsize=9)
    doc.save(path)
    doc.close()


def test_numbered_headings_glued_words_and_almost_empty_parses(tmp_path):
    data = tmp_path / "data"
    (data / "docs").mkdir(parents=True)
    write_pdf(data / "docs" / "library.pdf", "Library handbook",
              {"2.4 Library Notes": NOTES, "2.5 Opening Hours": "The library opens at nine on weekdays."}, None)
    write_pdf(data / "docs" / "glued.pdf", "Notice",
              {"Returns": "Itemsmaybereturnedwithinthirtydaysofdeliverywhenunusedandintheirbox."}, None)
    _scan(data / "docs" / "scan.pdf", 3)
    (data / "dataset.yaml").write_text("name: signs\ndescription: three PDFs\nlicense: CC-BY-4.0\nsource: tests\n")
    q = {"id": "q1", "question": "How many books may members borrow?", "answerable": True,
         "evidence": [{"doc_id": "library", "section": "Library Notes", "quote": NOTES}]}
    (data / "questions.jsonl").write_text(json.dumps(q) + "\n")
    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
    env["RAG_BENCH_CACHE"] = str(tmp_path / "cache")
    done = subprocess.run([str(Path(sys.executable).parent / "rag-bench"), "run", f"dataset.path={data}",
                           "parser=pymupdf4llm", "tracking=none", f"output.root={tmp_path / 'out'}"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    (cell,) = [p for p in (tmp_path / "out" / "default").iterdir() if (p / "DONE").exists()]
    metrics = json.loads((cell / "metrics.json").read_text())
    parse = metrics["parse"]
    assert parse["headings_found"] == 1.0, parse  # was 0: "2.4 Library Notes" never matched "Library Notes"
    assert parse["evidence_exact"] == 1.0
    assert parse["glued_documents"] == 1 and parse["sparse_documents"] == 1, parse
    glued = [w for w in metrics["warnings"] if "reads as glued words" in w]
    sparse = [w for w in metrics["warnings"] if "has almost no text" in w]
    assert len(glued) == 1 and "'glued'" in glued[0] and "-- fix:" in glued[0], metrics["warnings"]
    assert len(sparse) == 1 and "'scan'" in sparse[0], metrics["warnings"]
    assert any("reads as glued words" in line for line in done.stdout.splitlines())  # said on the console too
