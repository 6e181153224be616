"""FAISS indexes: exactness of flat, ACL filter inside search (no leak, no under-fill) for every
index type, ann_recall on a case with a known answer."""

from __future__ import annotations

import numpy as np
import pytest

from rag_bench.errors import ConfigError
from rag_bench.indexing.base import _exact
from rag_bench.indexing.flat import FlatIndex
from rag_bench.indexing.hnsw import HnswIndex
from rag_bench.indexing.ivf import IvfIndex

INDEXES = {"flat": lambda: FlatIndex(), "hnsw": lambda: HnswIndex(M=4, ef_construction=16, ef_search=1),
           "ivf": lambda: IvfIndex(nlist=48, nprobe=1)}


def test_flat_equals_brute_force(data):
    x, q = data
    idx = FlatIndex()
    idx.build(x)
    s, i = idx.search(q, 10)
    es, ei = _exact(x, q, 10, None)
    assert np.array_equal(i, ei) and np.allclose(s, es, atol=1e-5)


@pytest.mark.parametrize("name", INDEXES)
@pytest.mark.parametrize("every", [2, 50, 700])
def test_filter_inside_search_never_leaks_and_fills_k(data, name, every):
    x, q = data
    mask = np.zeros(len(x), bool)
    mask[::every] = True
    idx = INDEXES[name]()
    idx.build(x)
    k = 10
    s, ids = idx.search(q, k, mask)
    want = min(k, int(mask.sum()))
    assert ((ids >= 0).sum(axis=1) == want).all(), "under-filled"
    assert mask[ids[ids >= 0]].all(), "leaked a forbidden vector"
    assert np.all(np.diff(np.where(ids >= 0, s, -np.inf)[:, :want], axis=1) <= 1e-6)
    if name == "flat":
        _, ei = _exact(x, q, k, mask)
        assert np.array_equal(ids, ei)


def test_ann_is_approximate_on_aggressive_settings(data):
    x, q = data
    exact = FlatIndex()
    exact.build(x)
    _, e = exact.search(q, 10)
    for name in ("hnsw", "ivf"):
        idx = INDEXES[name]()
        idx.build(x)
        _, a = idx.search(q, 10)
        recall = np.mean([len(set(r) & set(t)) / 10 for r, t in zip(a.tolist(), e.tolist())])
        assert 0 < recall < 1, (name, recall)


def test_k_above_corpus_pads_with_minus_one(data):
    x, q = data
    idx = FlatIndex()
    idx.build(x[:5])
    s, i = idx.search(q[:2], 8)
    assert (i[:, :5] >= 0).all() and (i[:, 5:] == -1).all()


@pytest.mark.parametrize(("cls", "kwargs", "key"), [(HnswIndex, {"M": 0}, "index.M"),
                                                     (IvfIndex, {"nprobe": -1}, "index.nprobe"),
                                                     (HnswIndex, {"ef_search": 1.5}, "index.ef_search")])
def test_bad_parameters(cls, kwargs, key):
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        cls(**kwargs)


def test_sizes_and_build_time_are_reported(data):
    x, _ = data
    flat, hnsw = FlatIndex(), HnswIndex()
    flat.build(x)
    hnsw.build(x)
    assert flat.nbytes() >= x.nbytes and hnsw.nbytes() > flat.nbytes() and hnsw.build_s > 0


@pytest.mark.parametrize("every", [None, 50])
def test_configured_search_is_faiss_as_is_and_search_fills_it(data, every):
    """ef_search=1 < k: FAISS returns fewer than k hits. search_as_configured (what the ANN report
    measures) returns exactly that; search (what retrieval uses) fills k by a wider/exact search."""
    import faiss

    x, q = data
    mask = None if every is None else np.arange(len(x)) % every == 0
    idx = HnswIndex(M=4, ef_construction=16, ef_search=1)
    idx.build(x)
    _, ids = idx.search_as_configured(q, 10, mask)
    params = faiss.SearchParametersHNSW()
    params.efSearch = 1
    if mask is not None:
        bits = np.packbits(mask.astype(np.uint8), bitorder="little")
        params.sel = faiss.IDSelectorBitmap(mask.size, faiss.swig_ptr(bits))
    _, direct = idx.index.search(q, 10, params=params)
    assert np.array_equal(ids, direct) and ((ids >= 0).sum(axis=1) < 10).any()
    _, filled = idx.search(q, 10, mask)
    assert ((filled >= 0).sum(axis=1) == 10).all()


def test_an_index_without_a_configured_search_is_measured_by_its_search(data):
    """search_as_configured is an optional capability: an index plugin that never widens its own
    search need not write it."""
    from rag_bench.components import capability, required_methods
    from rag_bench.indexing.base import VectorIndex

    class Plain:
        name, build_s = "plain", 0.0

        def search(self, queries, k, mask=None):
            return np.zeros((len(queries), k), np.float32), np.tile(np.arange(k), (len(queries), 1))

    assert "search_as_configured" not in required_methods(VectorIndex)
    _, ids = capability(Plain(), VectorIndex, "search_as_configured")(data[1][:2], 3)
    assert ids.tolist() == [[0, 1, 2], [0, 1, 2]]
