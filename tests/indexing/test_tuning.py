"""index.target_recall: doubling then bisection picks the smallest knob value reaching the target,
on half of the questions (the other half held out), under each asker's filter; a cell tunes before
it retrieves and reports the choice, the curve and the held-out recall."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from rag_bench.errors import ConfigError
from rag_bench.indexing.base import _exact
from rag_bench.indexing.flat import FlatIndex
from rag_bench.indexing.hnsw import HnswIndex
from rag_bench.indexing.ivf import IvfIndex
from rag_bench.indexing.tuning import split_for_tuning, tune, tune_held_out
from tests.indexing.conftest import random_unit, unit


def exact_ids(vectors: np.ndarray, queries: np.ndarray, k: int,
              masks: Sequence[np.ndarray | None] | None = None) -> np.ndarray:
    """Exact top-``k`` row ids per query among its allowed rows (-1 where fewer are allowed)."""
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    queries = np.ascontiguousarray(queries, dtype=np.float32)
    if masks is None:
        return _exact(vectors, queries, k, None)[1]
    return np.vstack([_exact(vectors, queries[r:r + 1], k, m)[1] for r, m in enumerate(masks)]) \
        if len(masks) else np.empty((0, k), np.int64)


@pytest.fixture(scope="module")
def data():
    return random_unit(3, 2000, 40, 16)


@pytest.mark.parametrize("make", [lambda: HnswIndex(M=4, ef_construction=16, ef_search=1),
                                  lambda: IvfIndex(nlist=64, nprobe=1)], ids=["hnsw", "ivf"])
def test_tune_reaches_target_with_the_smallest_value(data, make):
    x, q = data
    index = make()
    index.build(x)
    result = tune(index, q, exact_ids(x, q, 10), target=0.9, k=10)
    assert result.reached and result.point().recall >= 0.9
    assert getattr(index, result.knob) == result.chosen
    below = [p for p in result.curve if p.value < result.chosen]
    assert not below or max(below, key=lambda p: p.value).value == result.chosen - 1
    assert all(p.recall < 0.9 for p in below[-1:])  # the value just below the choice misses
    assert [p.value for p in result.curve] == sorted({p.value for p in result.curve})
    assert result.curve[0].value == 1


def test_tuning_measures_each_query_under_its_filter(data):
    """With a selective filter HNSW's beam starves: recall under the mask needs a wider beam than
    without, and a query whose asker may read nothing is left out (not a recall of 0)."""
    x, q = data
    mask = np.zeros(len(x), bool)
    mask[::40] = True
    nothing = np.zeros(len(x), bool)
    masks = [mask] * (len(q) - 1) + [nothing]
    index = HnswIndex(M=4, ef_construction=16, ef_search=1)
    index.build(x)
    free = tune(index, q, exact_ids(x, q, 10), target=0.95)
    filtered = tune(index, q, exact_ids(x, q, 10, masks), target=0.95, masks=masks)
    assert filtered.reached and filtered.chosen > free.chosen
    _, ids = index.search_as_configured(q[:1], 10, mask)
    assert mask[ids[ids >= 0]].all()


def test_split_is_stable_disjoint_and_independent_of_order():
    qids = [f"q{i}" for i in range(21)]
    tuning, held = split_for_tuning(qids)
    assert len(tuning) == 11 and len(held) == 10 and not set(tuning) & set(held)
    again = split_for_tuning(qids[::-1])
    assert {qids[::-1][i] for i in again[0]} == {qids[i] for i in tuning}
    assert split_for_tuning(["only"]) == ([0], [])


def test_the_choice_never_sees_the_held_out_questions(data):
    """Replacing every held-out query leaves the chosen value as it was; the held-out recall is
    measured on them at that value."""
    x, q = data
    qids = [f"q{i}" for i in range(len(q))]
    _, held = split_for_tuning(qids)
    other = q.copy()
    other[held] = unit(np.random.default_rng(9).normal(size=(len(held), q.shape[1])))
    results = []
    for queries in (q, other):
        index = IvfIndex(nlist=64, nprobe=1)
        index.build(x)
        results.append(tune_held_out(index, queries, exact_ids(x, queries, 10), qids, target=0.9))
    assert results[0].chosen == results[1].chosen
    assert [(p.value, p.recall) for p in results[0].curve] == [(p.value, p.recall) for p in results[1].curve]
    assert results[0].held_out_n == len(held) == results[0].n == 20
    assert 0 <= results[0].held_out_recall <= 1 and results[0].held_out_recall != results[1].held_out_recall


def test_tune_refuses_exact_index_and_bad_target(data):
    x, q = data
    flat = FlatIndex()
    flat.build(x)
    with pytest.raises(ConfigError, match="needs an approximate index"):
        tune(flat, q, exact_ids(x, q, 10))
    index = IvfIndex(nlist=8, nprobe=1)
    index.build(x)
    with pytest.raises(ConfigError, match="index.target_recall must be a number in"):
        tune(index, q, exact_ids(x, q, 10), target=1.5)
    for bad in (0, 1.2, True, "high"):
        with pytest.raises(ConfigError, match="index.target_recall must be a number in"):
            HnswIndex(target_recall=bad)


def test_a_cell_tunes_before_it_retrieves_and_reports_the_choice(demo_dataset):
    """index.target_recall=0.95 on the demo set: the ann section holds the choice, its curve and
    the held-out recall (MLflow gets them as ann/ metrics), and the cell's rankings are those of the
    same index configured with the chosen ef_search; null changes neither behaviour nor cell id."""
    from omegaconf import open_dict

    from rag_bench.memo import SharedWork
    from rag_bench.runner.config import build, cell_id
    from rag_bench.runner.main import compute as run_pipeline
    from rag_bench.tracking.base import tracked_metrics
    from tests.conftest import compose_config

    base = ["tracking=none", "retriever=dense", "generator=none", "index=hnsw_m4_ef1"]
    work = SharedWork()  # one embedding of the corpus; the two indexes differ in their parameters
    tuned = run_pipeline(compose_config([*base, "index.target_recall=0.95"]), demo_dataset, "t", work)
    ann = tuned.metrics["ann"]
    chosen = ann["tuned_value"]
    assert ann["tuned_knob"] == "ef_search" and ann["tuned_reached"] and ann["tune_recall@10"] >= 0.95
    assert ann["tune_questions"] + ann["held_out_questions"] == len(demo_dataset.questions)
    assert 0 < ann["held_out_recall@10"] <= 1 and "held_out_recall" in ann["tuned_on"]
    curve = {p["value"]: p["recall"] for p in ann["tune_curve"]}
    assert curve[chosen] >= 0.95 and curve[chosen - 1] < 0.95
    assert {"ann/tuned_value", "ann/held_out_recall@10", "ann/tuned_p50_ms"} <= set(tracked_metrics(tuned.metrics))
    fixed = run_pipeline(compose_config([*base, f"index.ef_search={chosen}"]), demo_dataset, "f", work)
    assert tuned.records["chunk_ids"].tolist() == fixed.records["chunk_ids"].tolist()
    assert "tuned_value" not in fixed.metrics["ann"]

    cfg = compose_config(base)
    assert cfg.index.target_recall is None
    before = cell_id(cfg, "fp")
    with open_dict(cfg):
        del cfg.index["target_recall"]  # the config as it was before the key existed
    assert cell_id(cfg, "fp") == before
    with pytest.raises(ConfigError, match="index.target_recall must be a number in"):
        build(compose_config([*base, "index.target_recall=2"]).index, "index")
