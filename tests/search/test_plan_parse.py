"""``--plan`` counts the parse (issue 56 item 5: the plan said "at most ~78 s" for a sweep that took
213 s, the parse left out): through the real CLI, a grid over a dataset of PDFs plans each parser's
files not in the parse cache with the seconds the plan itself took to parse them (it stores none)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pymupdf", reason="the PDFs are written by pymupdf (pip install 'rag-bench-harness[parse]')")

REPO = Path(__file__).resolve().parents[2]


def test_the_plan_times_the_parse_of_the_files_not_cached(tmp_path):
    from tests.reporting.test_report_parsed import _dataset

    data = _dataset(tmp_path / "shop")
    env = {k: v for k, v in os.environ.items() if k not in ("MLFLOW_TRACKING_URI", "RAG_BENCH_FAILPOINT")}
    env["RAG_BENCH_CACHE"] = str(tmp_path / "cache")
    done = subprocess.run([sys.executable, "-m", "rag_bench.cli", "run", "-m", f"dataset.path={data}",
                           "parser=pypdf,pdfplumber", "retriever=bm25", "generator=none", "tracking=none",
                           f"output.root={tmp_path / 'out'}", "--plan"], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    for parser in ("pypdf", "pdfplumber"):  # policy.pdf and the locked one, per parser; the .md file is read as it is
        line = re.search(rf"parsing 2 of 2 document files \({parser}\): ([\d.]+) (ms|s) \(timed by this plan", done.stdout)
        assert line, done.stdout
    assert re.search(r"~[\d.]+ (ms|s) in all", done.stdout), done.stdout
    assert not (tmp_path / "out").exists()
