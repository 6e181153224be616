"""The LLM drafter with the real packaged model (issue 54): gemma3-270m through the in-process
llama.cpp generator drafts from a few small documents; the filters judge every draft; the kept set
validates and a cell is swept on it. What the tiny model writes is not asserted, only that each
draft was judged, the kept ones load as a dataset and a sweep reads them."""

from __future__ import annotations

import json

import pytest

from rag_bench.cli.main import main
from tests.drafting.test_draft_cli import DOCS

pytestmark = pytest.mark.slow
pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (pip install 'rag-bench-harness[llm]')")


def test_the_packaged_model_drafts_a_set_that_validates_and_sweeps(tmp_path, capsys, packaged_gguf):
    from tests.runner.test_run_cell import run

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name, text in DOCS.items():
        (corpus / name).write_text(text, encoding="utf-8")
    out = tmp_path / "drafted"
    only_factoid = ["types.unanswerable=0", "types.multi_hop=0", "types.follow_up=0", "types.clarify=0"]
    assert main(["draft", str(corpus), "--out", str(out), "drafter=llm", "generator=llama_cpp",
                 f"generator.model={packaged_gguf}", "generator.max_tokens=40", "n=4", "~embedder", *only_factoid]) == 0
    drafts = [json.loads(line) for line in (out / "drafts.jsonl").read_text().splitlines()]
    assert len(drafts) == 4 and all(d["drafter"] == "llm" and d["filters"] for d in drafts)
    assert all(v["why"] for d in drafts for v in d["filters"].values())
    kept = [json.loads(line) for line in (out / "questions.jsonl").read_text().splitlines()]
    assert kept and len(kept) == sum(d["kept"] for d in drafts)
    capsys.readouterr()
    assert main(["validate", str(out)]) == 0
    cell = run(tmp_path / "exp", "generator=none", "chunker=section", dataset=out)
    metrics = json.loads((cell / "metrics.json").read_text())
    assert metrics["counts"]["questions"] == len(kept)
    assert 0 <= metrics["retrieval"]["ndcg@10"] <= 1
