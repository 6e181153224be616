"""The ANN report measures the index as configured, checked against FAISS itself.

The ANN report (:func:`rag_bench.indexing.ann_report.probe_report` of
:meth:`DenseRetriever.ann_probe`) over random unit vectors is compared with a recall computed
from ``faiss.IndexHNSWFlat`` and ``faiss.IndexFlatIP`` built and searched directly with the same
parameters and the same access filter (an ``IDSelectorBitmap``), for ``ef_search`` below and above
k, with and without a filter. Below k FAISS returns fewer than k hits: those count as misses, and
retrieval (not the report) widens the search to fill its ranking.
"""

from __future__ import annotations

import numpy as np
import pytest

from rag_bench.domain import Asker, Chunk, Document, Question
from rag_bench.evaluation.scorers.ann import section
from rag_bench.indexing import ann_report
from rag_bench.indexing.hnsw import HnswIndex
from rag_bench.retrieval.base import AccessFilter
from rag_bench.retrieval.dense import DenseRetriever

faiss = pytest.importorskip("faiss")

DIM, N, NQ, M, EF_CONSTRUCTION = 24, 1500, 40, 4, 16
KS = (1, 5, 10)
PUBLIC_EVERY = 5  # one chunk in five is public: a selective filter for customers
DOCS = {"pub": Document("pub", "x", tenant="t", acl=()), "staff": Document("staff", "x", tenant="t", acl=("staff",))}
CUSTOMER = Asker("t", ("customers",))


def probe_report(probe, ks):
    """The ANN report of a retriever's laid-open index, as a cell's ``ann`` section."""
    report = ann_report.probe_report(probe, ks)
    return section(report, report.index)


def _unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


class TableEmbedder:
    """Texts ``c<i>`` and ``q<j>`` mapped to fixed vectors: the report sees exactly the vectors the
    direct FAISS search sees."""

    def __init__(self, docs: np.ndarray, queries: np.ndarray) -> None:
        self.docs, self.queries = docs, queries

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        return self.docs[[int(t[1:]) for t in texts]]

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return self.queries[[int(t[1:]) for t in texts]]


@pytest.fixture(scope="module")
def data():
    """Vectors, chunks (one in PUBLIC_EVERY public) and the customers' mask; FAISS single-threaded
    so that our build and the direct one make the same graph."""
    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    rng = np.random.default_rng(11)
    x, q = _unit(rng.normal(size=(N, DIM))), _unit(rng.normal(size=(NQ, DIM)))
    chunks = [Chunk(f"c{i}", "pub" if i % PUBLIC_EVERY == 0 else "staff", 0, 1, f"c{i}") for i in range(N)]
    mask = np.arange(N) % PUBLIC_EVERY == 0
    yield x, q, chunks, mask
    faiss.omp_set_num_threads(threads)


def faiss_recall(x: np.ndarray, q: np.ndarray, ef_search: int, mask: np.ndarray | None) -> tuple[dict[int, float], int]:
    """recall@k of HNSW against flat, both straight from FAISS, and the queries HNSW left short."""
    hnsw = faiss.IndexHNSWFlat(DIM, M, faiss.METRIC_INNER_PRODUCT)
    hnsw.hnsw.efConstruction = EF_CONSTRUCTION
    hnsw.add(x)
    flat = faiss.IndexFlatIP(DIM)
    flat.add(x)
    params = faiss.SearchParametersHNSW()
    params.efSearch = ef_search
    exact_params = faiss.SearchParameters()
    if mask is not None:
        bits = np.packbits(mask.astype(np.uint8), bitorder="little")
        sel = faiss.IDSelectorBitmap(mask.size, faiss.swig_ptr(bits))
        params.sel = exact_params.sel = sel
    kmax = max(KS)
    _, got = hnsw.search(q, kmax, params=params)
    _, want = flat.search(q, kmax, params=exact_params)
    recall = {k: float(np.mean([len(set(g[:k][g[:k] >= 0]) & set(w[:k][w[:k] >= 0])) / (w[:k] >= 0).sum()
                                for g, w in zip(got, want)])) for k in KS}
    short = int(((got >= 0).sum(axis=1) < (want >= 0).sum(axis=1)).sum())
    return recall, short


def report(data, ef_search: int, asker: Asker | None) -> dict:
    x, q, chunks, _ = data
    r = DenseRetriever(embedder=TableEmbedder(x, q), index=HnswIndex(M=M, ef_construction=EF_CONSTRUCTION,
                                                                     ef_search=ef_search))
    r.fit(chunks)
    questions = [Question(f"q{j}", f"q{j}", True, asker=asker) for j in range(NQ)]
    return probe_report(r.ann_probe(questions, AccessFilter(chunks, DOCS)), list(KS))


@pytest.mark.parametrize("ef_search", [1, 4, 16, 64])  # below and above k = 10
@pytest.mark.parametrize("filtered", [False, True])
def test_ann_recall_is_faiss_own_recall(data, ef_search, filtered):
    x, q, _, mask = data
    rep = report(data, ef_search, CUSTOMER if filtered else None)
    want, short = faiss_recall(x, q, ef_search, mask if filtered else None)
    for k in KS:
        assert rep[f"ann_recall@{k}"] == pytest.approx(want[k], abs=1e-12), (k, rep, want)
    assert rep["underfill_fallbacks"] == short


def test_the_check_can_tell_a_widened_search_from_the_configured_one(data):
    """ef_search=1 leaves queries short of k in FAISS: the configured recall is well below what
    a widened search reaches, so the comparison above would catch a report of the widened one."""
    x, q, _, mask = data
    for m in (None, mask):
        low, short = faiss_recall(x, q, 1, m)
        wide, _ = faiss_recall(x, q, 64, m)
        assert short > 0 and low[10] < wide[10] - 0.05, (low, wide)


class CountingHnsw(HnswIndex):
    """Counts the searches made with a widened beam."""

    widened = 0

    def _params(self, sel, widen):
        CountingHnsw.widened += widen > 0
        return super()._params(sel, widen)


def test_the_report_times_no_widened_search_but_retrieval_still_fills_its_ranking(data):
    x, q, chunks, _ = data
    r = DenseRetriever(embedder=TableEmbedder(x, q), index=CountingHnsw(M=M, ef_construction=EF_CONSTRUCTION,
                                                                        ef_search=1))
    r.fit(chunks)
    access = AccessFilter(chunks, DOCS)
    questions = [Question(f"q{j}", f"q{j}", True, asker=a) for j in range(NQ) for a in (None, CUSTOMER)]
    CountingHnsw.widened = 0
    rep = probe_report(r.ann_probe(questions, access), list(KS))
    assert CountingHnsw.widened == 0 and rep["underfill_fallbacks"] > 0
    # Retrieval (documented): a ranking the configured search leaves short is widened to full depth.
    rankings = r.search(questions, 10, access)
    assert CountingHnsw.widened > 0 and all(len(rk.indices) == 10 for rk in rankings)
