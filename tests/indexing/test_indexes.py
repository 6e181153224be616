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


def unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(7)
    return unit(rng.normal(size=(1500, 24))), unit(rng.normal(size=(40, 24)))


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
