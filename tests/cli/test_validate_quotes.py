"""`rag-bench validate` looks for every quote of a PDF, HTML or Word document in its parse (issue 56: a typo in
a quote passed, exit 0, and the sweep then blamed the parser): a quote in no parser's text is the user's typo
(exit 2, file:line, field, fix); one the chosen parser lost but another parser's text holds is that parser's
loss (a note, exit 0). Through the real command, the parses from the parse cache."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.parsing.render import HIDDEN_SENTENCE, OWN, write_hidden_pdf

pytest.importorskip("pymupdf", reason="the PDFs are written by pymupdf (pip install 'rag-bench-harness[parse]')")
pytest.importorskip("pymupdf4llm", reason="the parser that drops white text (pip install 'rag-bench-harness[parse]')")
CANARY = "CANARY-7Q2X"
HIDDEN = HIDDEN_SENTENCE.format(canary=CANARY)


def _dataset(root: Path, *quotes: str) -> Path:
    (root / "docs").mkdir(parents=True)
    write_hidden_pdf(root / "docs" / "policy.pdf", "white", CANARY)
    (root / "dataset.yaml").write_text("name: quotes\ndescription: a PDF\nlicense: CC-BY-4.0\nsource: tests\n")
    lines = [{"id": f"q{i}", "question": "What does the policy say?", "answerable": True,
              "evidence": [{"doc_id": "policy", "quote": q}]} for i, q in enumerate(quotes, 1)]
    (root / "questions.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return root


def _validate(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "RAG_BENCH_CACHE": str(tmp_path / "cache")}
    return subprocess.run([str(Path(sys.executable).parent / "rag-bench"), "validate", *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)


def test_a_quote_in_no_parsers_text_is_a_typo(tmp_path):
    data = _dataset(tmp_path / "data", OWN["Returns"], "Items may be exchanged for store credit within ninety weeks.")
    done = _validate(tmp_path, str(data))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "questions.jsonl:2: [evidence[0].quote] quote not found in document 'policy' in any parser's text (auto, " \
        in done.stderr and "-- fix: copy the exact sentence" in done.stderr, done.stderr
    assert "questions.jsonl:1:" not in done.stderr and not done.stdout.startswith("ok:")


def test_a_quote_another_parser_holds_is_the_parsers_loss(tmp_path):
    data = _dataset(tmp_path / "data", OWN["Returns"], HIDDEN)
    assert _validate(tmp_path, str(data)).stdout.count("note: ") == 0  # auto (pypdf) keeps the white text
    done = _validate(tmp_path, str(data), "parser=pymupdf4llm")  # which drops it
    assert done.returncode == 0, done.stderr
    (note,) = [line for line in done.stdout.splitlines() if line.startswith("note: ")]
    assert note.startswith("note: questions.jsonl:2: [evidence[0].quote] not in parser=pymupdf4llm's text of "
                           "'policy' but in ") and "pypdf" in note and "the parser's loss" in note, note
