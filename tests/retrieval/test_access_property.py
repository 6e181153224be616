"""Property: random askers never see a chunk they may not read, and what they get does not depend
on who asked before them.

Askers and document metadata are drawn from a small alphabet that includes the characters a
joined-string cache key once used as separators (``|``, ``,``), the wildcard it used for "no
tenant" (``*``) and empty strings, so askers whose rights differ but whose strings collide meet
in one batch. For every retriever, index and reranker, the batch result (one access cache shared
by all its askers, as in a cell) must equal a reference computed per question with a fresh
filter, and every retrieved chunk must be readable by its asker. The exact retrievers (BM25,
dense over a flat index, LanceDB without an ANN index) are also checked against an independent
reference: the unfiltered ranking with unreadable chunks dropped. LanceDB (flat, IVF_PQ,
IVF_HNSW_SQ) applies the filter as its own prefilter, inside the engine.
"""

from __future__ import annotations

import dataclasses
import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rag_bench.chunking.section import SectionChunker
from rag_bench.domain import Asker, Question
from rag_bench.indexing.flat import FlatIndex
from rag_bench.indexing.hnsw import HnswIndex
from rag_bench.indexing.ivf import IvfIndex
from rag_bench.indexing.lancedb import LanceDbIndex
from rag_bench.reranking.base import apply_rerank
from rag_bench.reranking.dense import DenseReranker
from rag_bench.reranking.mmr import MmrReranker
from rag_bench.retrieval.base import AccessFilter
from rag_bench.retrieval.bm25 import Bm25Retriever
from rag_bench.retrieval.dense import DenseRetriever
from rag_bench.retrieval.hybrid import HybridRetriever
from rag_bench.runner.config import build
from tests.conftest import compose_config

TENANTS = [None, "", "*", "kettleby", "a,b", "a", "kettleby|staff"]
GROUPS = ["", ",", "|", "*", "staff", "customers", "customers,staff", "a", "b", "a,b", "staff|"]
DOC_TENANTS = ["kettleby", None, "*", "", "a,b", "a"]
DOC_ACLS = [(), ("staff",), ("customers,staff",), ("customers", "staff"), ("",), ("a", "b"), ("a,b",), ("*",)]
DEPTH = 8

askers = st.one_of(st.none(), st.builds(Asker, st.sampled_from(TENANTS),
                                        st.lists(st.sampled_from(GROUPS), max_size=3).map(tuple)))


@pytest.fixture(scope="module")
def world(demo_dataset):
    # The demo corpus with adversarial metadata: every tenant/ACL shape, cycled over the documents.
    docs = {}
    for (doc_id, doc), tenant, acl in zip(sorted(demo_dataset.documents.items()), itertools.cycle(DOC_TENANTS),
                                          itertools.cycle(DOC_ACLS)):
        docs[doc_id] = dataclasses.replace(doc, tenant=tenant, acl=acl)
    chunks = [c for c in SectionChunker().chunk(list(docs.values())) if not c.is_parent]
    embedder = build(compose_config().embedder, "embedder")
    retrievers = {
        "bm25": Bm25Retriever(),
        "dense-flat": DenseRetriever(embedder=embedder, index=FlatIndex()),
        "dense-hnsw": DenseRetriever(embedder=embedder, index=HnswIndex(M=4, ef_search=2)),
        "dense-ivf": DenseRetriever(embedder=embedder, index=IvfIndex(nlist=8, nprobe=1)),
        # LanceDB's own engine, the filter as its prefilter. The demo corpus (~170 chunks) is below
        # the 256 rows its codebooks need and LanceDB trains one IVF list per 256 rows, so its ANN
        # variants index every chunk four times (same texts: no new embedding): real IVF_PQ /
        # IVF_HNSW_SQ indexes of 2 lists, one probed.
        "lancedb-flat": DenseRetriever(embedder=embedder, index=LanceDbIndex(index_type="flat")),
        "lancedb-ivf_pq": DenseRetriever(embedder=embedder, index=LanceDbIndex(
            index_type="IVF_PQ", num_partitions=8, nprobe=1, num_sub_vectors=8)),
        "lancedb-ivf_hnsw_sq": DenseRetriever(embedder=embedder, index=LanceDbIndex(
            index_type="IVF_HNSW_SQ", num_partitions=8, nprobe=1, ef_search=4)),
        "hybrid": HybridRetriever(embedder=embedder, index=FlatIndex(), sparse_depth=10, dense_depth=10),
    }
    chunks_of = {name: chunks * 4 if name.startswith("lancedb-ivf") else chunks for name in retrievers}
    for name, r in retrievers.items():
        r.fit(chunks_of[name])
    assert all(retrievers[n].index._ann and retrievers[n].index._partitions == 2  # ANN indexes, built
               for n in ("lancedb-ivf_pq", "lancedb-ivf_hnsw_sq"))
    rerankers = {"dense": DenseReranker(embedder=embedder, depth=5), "mmr": MmrReranker(embedder=embedder, depth=5)}
    texts = [q.question for q in demo_dataset.questions]
    return docs, chunks_of, retrievers, rerankers, texts


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(batch=st.lists(askers, min_size=2, max_size=8), start=st.integers(0, 60))
def test_no_asker_sees_an_unreadable_chunk_and_cache_never_changes_a_result(world, batch, start):
    docs, chunks_of, retrievers, rerankers, texts = world
    questions = [Question(f"q{i}", texts[(start + i) % len(texts)], True, asker=a) for i, a in enumerate(batch)]
    for name, retriever in retrievers.items():
        chunks = chunks_of[name]
        shared = AccessFilter(chunks, docs)  # one cache for the whole batch, as in a cell
        got = retriever.search(questions, DEPTH, shared)
        reference = [retriever.search([q], DEPTH, AccessFilter(chunks, docs))[0] for q in questions]
        assert [r.indices for r in got] == [r.indices for r in reference], name
        for q, ranking in zip(questions, got):
            readable = [docs[chunks[i].doc_id].readable_by(q.asker) for i in ranking.indices]
            assert all(readable), (name, q.asker, [chunks[i].doc_id for i in ranking.indices])
            n_readable = sum(docs[c.doc_id].readable_by(q.asker) for c in chunks)
            if name in ("bm25", "dense-flat", "hybrid") or name.startswith("lancedb"):  # LanceDB fills k too
                assert len(ranking.indices) == min(DEPTH, n_readable), (name, q.asker)
        if name in ("bm25", "dense-flat", "lancedb-flat"):
            unfiltered = retriever.search([dataclasses.replace(q, asker=None) for q in questions], len(chunks),
                                          AccessFilter(chunks, docs))
            for q, full, ranking in zip(questions, unfiltered, got):
                allowed = [i for i in full.indices if docs[chunks[i].doc_id].readable_by(q.asker)][:DEPTH]
                assert list(ranking.indices) == allowed, (name, q.asker)
        for rname, reranker in rerankers.items():
            shortlists = [[chunks[i] for i in r.indices[: reranker.depth]] for r in got]
            scores = reranker.scores(questions, shortlists)
            for q, ranking, s in zip(questions, got, scores):
                out = apply_rerank(ranking, s)
                assert sorted(out.indices) == sorted(ranking.indices), (name, rname)
                assert all(docs[chunks[i].doc_id].readable_by(q.asker) for i in out.indices), (name, rname, q.asker)


def test_the_alphabet_holds_askers_that_a_joined_key_confused():
    # The pairs the old "tenant-or-*|g1,g2" key mapped to one string: all are drawn above.
    pairs = [(Asker(None, ("customers", "staff")), Asker(None, ("customers,staff",))),
             (Asker(None, ("staff",)), Asker("*", ("staff",))), (Asker(None, ()), Asker("", ()))]
    for a, b in pairs:
        assert a.key != b.key
        assert a.tenant in TENANTS and b.tenant in TENANTS
        assert set(a.groups) | set(b.groups) <= set(GROUPS)
