"""BM25 retrieval: ranking, access control inside retrieval, archived exclusion, strict scores."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rag_bench.chunking.section import SectionChunker
from rag_bench.domain import Asker, Question
from rag_bench.errors import ConfigError
from rag_bench.retrieval.base import AccessFilter, strictly_decreasing, top_k
from rag_bench.retrieval.bm25 import Bm25Retriever, SparseBm25
from rag_bench.text.tokenize import ENGLISH_STOPWORDS, tokenize

CUSTOMER = Asker("kettleby", ("customers",))


def index(dataset, include_archived=False):
    chunks = [c for c in SectionChunker(size=600).chunk(list(dataset.documents.values()))
              if include_archived or not dataset.documents[c.doc_id].archived]
    r = Bm25Retriever()
    r.fit(chunks)
    return r, chunks, AccessFilter(chunks, dataset.documents)


def test_top_k_orders_by_score_then_index():
    idx, sc = top_k(np.array([1.0, 3.0, 3.0, 0.5, 3.0]), 3, None)
    assert idx.tolist() == [1, 2, 4] and sc.tolist() == [3.0, 3.0, 3.0]
    idx, _ = top_k(np.array([1.0, 3.0, 3.0, 0.5, 3.0]), 2, np.array([True, False, True, True, True]))
    assert idx.tolist() == [2, 4]
    idx, _ = top_k(np.array([1.0, 2.0]), 5, None)
    assert idx.tolist() == [1, 0]


def test_strictly_decreasing_keeps_order():
    out = strictly_decreasing(np.array([2.0, 2.0, 2.0, 1.0, 0.0, 0.0]))
    assert np.all(np.diff(out) < 0) and out[0] == 2.0 and out[3] == 1.0


def test_tokenize_keeps_identifiers_whole_and_in_parts():
    toks = tokenize("What does error E21 mean on the KB-DW-4410?")
    assert {"e21", "kb", "dw", "4410", "kbdw4410"} <= set(toks) and "the" not in toks


def test_exact_identifier_question_finds_its_chunk(demo_dataset):
    r, chunks, access = index(demo_dataset)
    hits = 0
    exact = [q for q in demo_dataset.questions if "exact_id" in q.tags]
    for q in exact:
        (ranking,) = r.search([q], 5, access)
        top = [chunks[i] for i in ranking.indices]
        hits += any(c.doc_id == e.doc_id and c.start < e.end and e.start < c.end for c in top for e in q.evidence)
    assert hits / len(exact) >= 0.7


def test_customer_never_sees_internal_chunks_and_gets_full_depth(demo_dataset):
    r, chunks, access = index(demo_dataset)
    allowed = sum(demo_dataset.documents[c.doc_id].readable_by(CUSTOMER) for c in chunks)
    internal_only = [q for q in demo_dataset.questions if "internal_only" in q.tags]
    assert internal_only
    for q in internal_only:
        for depth in (5, allowed, allowed + 10):
            (ranking,) = r.search([q], depth, access)
            assert len(ranking.indices) == min(depth, allowed)
            assert all(demo_dataset.documents[chunks[i].doc_id].readable_by(q.asker) for i in ranking.indices)
    # The same question from staff does reach the internal documents.
    staff = Question("s", internal_only[0].question, False, asker=Asker("kettleby", ("staff",)))
    (ranking,) = r.search([staff], 5, access)
    assert any(demo_dataset.documents[chunks[i].doc_id].acl == ("staff",) for i in ranking.indices)


def test_other_tenant_sees_nothing(demo_dataset):
    r, _, access = index(demo_dataset)
    (ranking,) = r.search([Question("x", "returns policy", True, asker=Asker("othershop", ("staff",)))], 5, access)
    assert ranking.indices == ()


def test_archived_versions_excluded_by_default(demo_dataset):
    archived = {d for d, doc in demo_dataset.documents.items() if doc.archived}
    assert archived
    _, chunks, _ = index(demo_dataset)
    assert not {c.doc_id for c in chunks} & archived
    _, chunks, _ = index(demo_dataset, include_archived=True)
    assert {c.doc_id for c in chunks} & archived


def test_scores_strictly_decrease(demo_dataset):
    r, _, access = index(demo_dataset)
    for ranking in r.search(list(demo_dataset.questions), 20, access):
        assert all(a > b for a, b in zip(ranking.scores, ranking.scores[1:]))


@pytest.mark.parametrize(("kwargs", "needle"), [({"k1": -1}, "retriever.k1"), ({"b": 2}, "retriever.b"),
                                                 ({"backend": "nope"}, "retriever.backend"),
                                                 ({"stopwords": "klingon"}, "retriever.stopwords")])
def test_bad_parameters(kwargs, needle):
    with pytest.raises(ConfigError, match=needle.replace(".", r"\.")):
        Bm25Retriever(**kwargs)


def test_strict_in_float32_as_trec_eval_reads_scores():
    # 1.0 and 1.0 + 1e-12 are different doubles but the same C float: they must still be split.
    out = strictly_decreasing(np.array([1.0 + 1e-12, 1.0, 1.0, 0.5]))
    as_float = out.astype(np.float32)
    assert np.all(np.diff(as_float) < 0)
    assert np.array_equal(np.array([repr(float(v)) for v in out], dtype=float).astype(np.float32), as_float)


# --- the sparse backend is rank-bm25's BM25Okapi, bit for bit ---------------------------------

_WORDS = st.sampled_from(["kettle", "toaster", "refund", "days", "the", "oven", "fee", "kb-dw-4410", "x"])


@given(corpus=st.lists(st.lists(_WORDS, max_size=12), min_size=1, max_size=25),
       query=st.lists(_WORDS, max_size=6), k1=st.floats(0.01, 3), b=st.floats(0, 1))
def test_sparse_backend_scores_equal_rank_bm25_bitwise(corpus, query, k1, b):
    # k1 = 0 is excluded: rank-bm25 computes 0/0 = NaN for documents without the term there;
    # the sparse backend gives them 0 (their limit), which test_sparse_k1_zero checks.
    from rank_bm25 import BM25Okapi

    if not any(corpus):
        return  # rank-bm25 divides by a zero average length
    ref = np.asarray(BM25Okapi(corpus, k1=k1, b=b).get_scores(query), dtype=np.float64)
    assert np.array_equal(SparseBm25(corpus, k1, b).scores(query), ref)


def test_sparse_backend_equals_rank_bm25_on_the_demo_chunks(demo_dataset):
    from rank_bm25 import BM25Okapi

    corpus = [tokenize(c.text, ENGLISH_STOPWORDS) for c in SectionChunker().chunk(list(demo_dataset.documents.values()))]
    ref, ours = BM25Okapi(corpus), SparseBm25(corpus, 1.5, 0.75)
    for q in demo_dataset.questions:
        t = tokenize(q.question, ENGLISH_STOPWORDS)
        assert np.array_equal(ours.scores(t), np.asarray(ref.get_scores(t), dtype=np.float64)), q.qid


def test_sparse_k1_zero_scores_absent_terms_zero():
    scores = SparseBm25([[], ["kettle"], ["oven", "oven"]], 0.0, 0.75).scores(["kettle"])
    assert scores[0] == 0.0 and scores[2] == 0.0 and scores[1] > 0
