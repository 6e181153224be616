"""index.target_recall: doubling then bisection picks the smallest knob value reaching the target."""

from __future__ import annotations

import numpy as np
import pytest

from rag_bench.errors import ConfigError
from rag_bench.indexing.flat import FlatIndex
from rag_bench.indexing.hnsw import HnswIndex
from rag_bench.indexing.ivf import IvfIndex
from rag_bench.indexing.tuning import tune


def unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(3)
    return unit(rng.normal(size=(2000, 16))), unit(rng.normal(size=(40, 16)))


@pytest.mark.parametrize("make", [lambda: HnswIndex(M=4, ef_construction=16, ef_search=1),
                                  lambda: IvfIndex(nlist=64, nprobe=1)], ids=["hnsw", "ivf"])
def test_tune_reaches_target_with_the_smallest_value(data, make):
    x, q = data
    index = make()
    index.build(x)
    result = tune(index, x, q, target=0.9, k=10)
    assert result.reached and result.point().recall >= 0.9
    assert getattr(index, result.knob) == result.chosen
    below = [p for p in result.curve if p.value < result.chosen]
    assert not below or max(below, key=lambda p: p.value).value == result.chosen - 1
    assert all(p.recall < 0.9 for p in below[-1:])  # the value just below the choice misses
    assert [p.value for p in result.curve] == sorted({p.value for p in result.curve})
    assert result.as_metrics()["curve"][0]["value"] == 1


def test_tune_refuses_exact_index_and_bad_target(data):
    x, q = data
    flat = FlatIndex()
    flat.build(x)
    with pytest.raises(ConfigError, match="needs an approximate index"):
        tune(flat, x, q)
    index = IvfIndex(nlist=8, nprobe=1)
    index.build(x)
    with pytest.raises(ConfigError, match="index.target_recall must be a number in"):
        tune(index, x, q, target=1.5)
