"""The query stage end to end with the real packaged model (gemma-3-270m through llama.cpp, in
process): ``query=rewrite,hyde,multi_query,decompose`` on two questions of the tiny set, each
transform's output in records.parquet and the drill-down, its fallbacks counted in metrics.json and
said on the console. A 270M base model writes poor rewrites and often breaks its JSON past
``max_tokens``: the plumbing and the counting are asserted, not the quality.

Cost: 4 cells x 2 questions, each a transform call and an answer (pipeline.k=1: short prompts;
max_tokens=48), some 16 calls of a few seconds each on 2 cores."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from rag_bench.cli import main as cli
from tests.e2e.test_llm_endpoint import TWO, questions

pytestmark = pytest.mark.slow
pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (pip install 'rag-bench-harness[llm]')")


def test_four_transforms_with_the_real_model_record_their_output_and_count_their_fallbacks(tmp_path, monkeypatch,
                                                                                          capsys):
    from rag_bench.cells import load_cell
    from rag_bench.reporting import drill

    monkeypatch.setenv("RAG_BENCH_CACHE", str(tmp_path / "cache"))
    data = questions(tmp_path, *TWO)
    out = tmp_path / "out"
    assert cli(["run", "-m", f"dataset.path={data}", "query=rewrite,hyde,multi_query,decompose", "generator=llama_cpp",
                "generator.max_tokens=48", "pipeline.k=1", "tracking=none", f"output.root={out}",
                "experiment.name=q"]) == 0
    printed = capsys.readouterr()
    seen = set()
    for done in sorted((out / "q").glob("*/DONE")):
        cell = load_cell(done.parent)
        name = cell.config["query"]["name"]
        seen.add(name)
        records = pd.read_parquet(done.parent / "records.parquet")
        assert len(records) == 2 and records["query_output"].map(lambda x: isinstance(x, str) and bool(x)).all(), name
        assert records["query_texts"].map(lambda t: 1 <= len(t) <= 16 and all(x.strip() for x in t)).all()
        failed = records["query_fallback"].map(lambda x: isinstance(x, str)).astype(float)
        metrics = json.loads((done.parent / "metrics.json").read_text())["query"]
        assert metrics["fallback_rate"] == pytest.approx(failed.mean()) and metrics["calls"] == 1.0
        assert metrics["fan_out"] == pytest.approx(records["query_texts"].map(len).mean())
        # a fallback searches the question itself, and the console says so
        for row in records[failed == 1.0].itertuples():
            assert list(row.query_texts) == [next(q for q in cell_questions(data) if q["id"] == row.qid)["question"]]
        if failed.any():
            assert f"query: the transform fell back to the question for {int(failed.sum())} of 2" in printed.out + printed.err
        rows = drill.cell_rows(cell, drill.Passages(), drill.Corpus())
        assert [r["query"]["name"] for r in rows] == [name, name]
        assert [r["query"]["output"] for r in rows] == [str(x)[:len(r["query"]["output"])] for x, r in
                                                          zip(records["query_output"], rows)]
    assert seen == {"rewrite", "hyde", "multi_query", "decompose"}


def cell_questions(data):
    return [json.loads(line) for line in (data / "questions.jsonl").read_text().splitlines() if line.strip()]
