"""The same cell twice gives identical metrics.json (timings and cache counters excluded) and an
identical run.trec, for every deterministic retriever, reranker and generator."""

from __future__ import annotations

import json

import pytest

from tests.runner.test_run_cell import run

pytestmark = pytest.mark.slow
VOLATILE = ("latency", "cost")  # wall times; cache hits differ on purpose the second time


def stable(cell):
    m = json.loads((cell / "metrics.json").read_text())
    # ANN reports also carry timings (p50/p95 latency, build seconds)
    timing = ("_ms", "_s")
    return {k: ({kk: vv for kk, vv in v.items() if not kk.endswith(timing)} if isinstance(v, dict) else v)
            for k, v in m.items() if k not in VOLATILE}


@pytest.mark.parametrize("overrides", [
    ["retriever=bm25"], ["retriever=dense"], ["retriever=hybrid"],
    ["retriever=dense", "index=hnsw"], ["retriever=dense", "index=ivf_nl16_np1"],
    ["retriever=bm25", "reranker=dense"], ["retriever=hybrid", "reranker=mmr"],
    ["chunker=semantic", "retriever=bm25"], ["generator=extractive", "chunker=parent_child",
                                            "pipeline.expand_parents=true"],
], ids=lambda o: "+".join(x.split("=")[1] for x in o))
def test_same_cell_twice(tmp_path, overrides):
    a = run(tmp_path / "a", *overrides, dataset=None)
    b = run(tmp_path / "b", *overrides, dataset=None)
    assert a.name == b.name
    assert stable(a) == stable(b)
    assert (a / "run.trec").read_bytes() == (b / "run.trec").read_bytes()
    assert (a / "failures.csv").read_bytes() == (b / "failures.csv").read_bytes()
