"""Dense and hybrid retrieval on hand-made chunks with a keyword embedder; RRF; ANN report."""

from __future__ import annotations

import pytest

from rag_bench.domain import Asker, Chunk, Document, Question
from rag_bench.errors import ConfigError
from rag_bench.evaluation.scorers.ann import section
from rag_bench.indexing import ann_report
from rag_bench.indexing.flat import FlatIndex
from rag_bench.indexing.hnsw import HnswIndex
from rag_bench.indexing.ivf import IvfIndex
from rag_bench.retrieval.base import AccessFilter
from rag_bench.retrieval.dense import DenseRetriever
from rag_bench.retrieval.hybrid import HybridRetriever, rrf
from tests.fakes import KeywordEmbedder

DOCS = {"pub": Document("pub", "x", tenant="t", acl=()), "int": Document("int", "x", tenant="t", acl=("staff",))}
TEXTS = [("pub", "kettle boils water fast"), ("pub", "toaster browns bread"), ("int", "kettle margin is ten percent"),
         ("pub", "fridge keeps food cold"), ("int", "supplier of kettles is acme"), ("pub", "kettle descaling guide")]
CHUNKS = [Chunk(f"{d}#{i}", d, 0, 1, t) for i, (d, t) in enumerate(TEXTS)]
CUSTOMER = Asker("t", ("customers",))


def probe_report(probe, ks):
    """The ANN report of a retriever's laid-open index, as a cell's ``ann`` section."""
    report = ann_report.probe_report(probe, ks)
    return section(report, report.index)


def test_rrf_hand_made_lists():
    # a: 1/(60+1) + 1/(60+2) ; b: 1/(60+2) ; c: 1/(60+1)  -> a, c, b
    items, scores = rrf([["a", "b"], ["c", "a"]], weights=[1, 1], k=60)
    assert items == ["a", "c", "b"]
    assert scores[0] == pytest.approx(1 / 61 + 1 / 62) and scores[1] == pytest.approx(1 / 61)
    # Weights move the dense branch up: c gets 2/61 > a's 1/61 + 2/62? (0.0328 vs 0.0487) -> a first still
    items, _ = rrf([["a", "b"], ["c", "a"]], weights=[0.1, 1], k=60)
    assert items[0] == "a" and items[1] == "c"
    items, _ = rrf([["a"], ["b"]], weights=[1, 1], k=60)  # exact tie: by id
    assert items == ["a", "b"]
    with pytest.raises(ValueError, match="weights"):
        rrf([["a"]], weights=[1, 1])


@pytest.mark.parametrize("index", [FlatIndex, lambda: HnswIndex(M=4, ef_search=1), lambda: IvfIndex(nlist=3, nprobe=1)])
def test_dense_respects_acl_and_fills_depth(index):
    r = DenseRetriever(embedder=KeywordEmbedder(), index=index())
    r.fit(CHUNKS)
    access = AccessFilter(CHUNKS, DOCS)
    (rk,) = r.search([Question("q", "kettle", True, asker=CUSTOMER)], 4, access)
    assert len(rk.indices) == 4 and all(CHUNKS[i].doc_id == "pub" for i in rk.indices)
    assert CHUNKS[rk.indices[0]].body.startswith("kettle")
    assert all(a > b for a, b in zip(rk.scores, rk.scores[1:]))
    (staff,) = r.search([Question("q", "kettle margin", True, asker=Asker("t", ("staff",)))], 2, access)
    assert CHUNKS[staff.indices[0]].body == "kettle margin is ten percent"


def test_hybrid_fuses_both_branches():
    h = HybridRetriever(embedder=KeywordEmbedder(), index=FlatIndex(), sparse_depth=3, dense_depth=3)
    h.fit(CHUNKS)
    access = AccessFilter(CHUNKS, DOCS)
    (rk,) = h.search([Question("q", "kettle boils", True)], 6, access)
    assert rk.indices[0] == 0 and len(rk.indices) <= 6
    (cust,) = h.search([Question("q", "kettle supplier margin", True, asker=CUSTOMER)], 6, access)
    assert all(CHUNKS[i].doc_id == "pub" for i in cust.indices)


@pytest.mark.parametrize(("kwargs", "key"), [({"rrf_k": 0}, "rrf_k"), ({"dense_weight": -1}, "dense_weight"),
                                             ({"sparse_depth": 0}, "sparse_depth")])
def test_hybrid_bad_parameters(kwargs, key):
    with pytest.raises(ConfigError, match=key):
        HybridRetriever(embedder=KeywordEmbedder(), **kwargs)


class OffByOneIndex(FlatIndex):
    """Exact search, except that as configured the k-th result of a 5-deep search is replaced by
    the 6th (a known miss); the ANN report measures the configured search."""

    name = "fake_ann"

    def search_as_configured(self, queries, k, mask=None):
        s, i = super().search_as_configured(queries, max(k, 6), mask)
        if k == 5:
            i = i.copy()
            i[:, 4] = i[:, 5]
        return s[:, :k], i[:, :k]


def test_ann_report_known_answer():
    r = DenseRetriever(embedder=KeywordEmbedder(), index=OffByOneIndex())
    r.fit(CHUNKS)
    questions = [Question("a", "kettle", True), Question("b", "bread toaster", True)]
    rep = probe_report(r.ann_probe(questions, AccessFilter(CHUNKS, DOCS)), [1, 5])
    # k=5 search swaps the 5th exact result for the 6th: 4 of 5 kept -> 0.8; k=1 unaffected.
    assert rep["ann_recall@5"] == pytest.approx(0.8) and rep["ann_recall@1"] == 1.0
    assert rep["index"] == "fake_ann" and rep["index_bytes"] > 0 and rep["ann_p50_ms"] >= 0


def test_flat_ann_report_is_exact():
    r = DenseRetriever(embedder=KeywordEmbedder(), index=FlatIndex())
    r.fit(CHUNKS)
    probe = r.ann_probe([Question("a", "kettle", True, asker=CUSTOMER)], AccessFilter(CHUNKS, DOCS))
    rep = probe_report(probe, [1, 3])
    assert rep["ann_recall@1"] == rep["ann_recall@3"] == 1.0
