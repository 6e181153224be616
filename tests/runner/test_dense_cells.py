"""Dense, hybrid, ANN and reranked cells end to end with the real packaged embedder."""

from __future__ import annotations

import json

import pytest

from tests.runner.test_run_cell import run

pytestmark = pytest.mark.slow


def metrics(cell):
    return json.loads((cell / "metrics.json").read_text())


def test_second_identical_run_computes_no_embeddings(tmp_path):
    first = metrics(run(tmp_path, "retriever=dense", "experiment.name=a"))
    assert first["cost"]["embeddings_computed"] + first["cost"]["embedding_cache_hits"] == \
        first["cost"]["embedding_requests"] > 0
    second = metrics(run(tmp_path, "retriever=dense", "experiment.name=b"))
    assert second["cost"]["embeddings_computed"] == 0
    assert second["cost"]["embedding_cache_hits"] == second["cost"]["embedding_requests"]
    assert second["retrieval"] == first["retrieval"]
    assert first["ann"]["index"] == "flat" and first["ann"]["ann_recall@10"] == 1.0


@pytest.mark.parametrize("retriever", ["dense", "hybrid"])
@pytest.mark.parametrize("index", ["flat", "hnsw_m4_ef1", "ivf_nl16_np1"])
def test_demo_dense_cells_never_leak(tmp_path, retriever, index):
    m = metrics(run(tmp_path, f"retriever={retriever}", f"index={index}", dataset=None))
    assert m["security"] == {"unauthorized_retrievals": 0, "unauthorized_from_retriever": 0,
                             "unauthorized_from_reranker": 0, "stale_retrievals": 0}
    assert m["ann"]["index"] == index and 0 < m["ann"]["ann_recall@10"] <= 1
    if index == "flat":
        assert m["ann"]["ann_recall@1"] == 1.0
    assert m["retrieval"]["hit@10"] > 0.5


@pytest.mark.parametrize("reranker", ["dense", "mmr"])
def test_reranked_cells(tmp_path, reranker):
    m = metrics(run(tmp_path, f"reranker={reranker}", "reranker.depth=10", dataset=None))
    assert m["counts"]["depth"] == 10 and m["security"]["unauthorized_retrievals"] == 0
    assert "rerank_p50_ms" in m["latency"]


def test_semantic_chunker_cell(tmp_path):
    m = metrics(run(tmp_path, "chunker=semantic", dataset=None))
    assert m["counts"]["chunks"] > 50 and m["retrieval"]["hit@10"] > 0.5
