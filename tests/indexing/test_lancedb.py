"""LanceDB index: the access filter inside the search (prefilter) never leaks and fills k, the
post-filter alternative measured against it, flat-equivalent rankings equal FAISS flat's, private
per-index folders, and a LanceDB cell on squad2-normans reporting ANN figures."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from rag_bench.errors import ConfigError
from rag_bench.indexing.base import _exact
from rag_bench.indexing.flat import FlatIndex
from rag_bench.indexing.lancedb import LanceDbIndex
from tests.conftest import SHARED
from tests.indexing.conftest import random_unit, unit

pytest.importorskip("lancedb")
SQUAD = SHARED / "datasets" / "squad2-normans"


@pytest.fixture(scope="module")
def data():
    return random_unit(7, 1500, 30, 24)


@pytest.mark.parametrize("index_type", ["IVF_PQ", "IVF_HNSW_SQ", "flat"])
@pytest.mark.parametrize("every", [2, 50, 700])
def test_prefilter_never_leaks_and_fills_k(data, index_type, every):
    x, q = data
    mask = np.zeros(len(x), bool)
    mask[::every] = True
    idx = LanceDbIndex(index_type=index_type, num_partitions=16, nprobe=1, num_sub_vectors=6)
    idx.build(x)
    s, ids = idx.search(q, 10, mask)
    want = min(10, int(mask.sum()))
    assert ((ids >= 0).sum(axis=1) == want).all(), "under-filled"
    assert mask[ids[ids >= 0]].all(), "leaked a forbidden vector"
    _, conf = idx.search_as_configured(q, 10, mask)
    assert mask[conf[conf >= 0]].all()
    if index_type == "flat":
        _, ei = _exact(x, q, 10, mask)
        assert np.array_equal(ids, ei)


def test_hnsw_beam_narrower_than_k_is_widened_to_k(data):
    """LanceDB raises "ef must be greater than or equal to k" for an IVF_HNSW_SQ search with a beam
    below k (found by the ACL property test with ef_search=4, depth 8): the beam is max(ef_search, k)."""
    x, q = data
    idx = LanceDbIndex(index_type="IVF_HNSW_SQ", num_partitions=8, nprobe=1, ef_search=2)
    idx.build(x)
    _, ids = idx.search_as_configured(q, 10)
    assert (ids >= 0).any(axis=1).all()


def test_nprobe_ranges_over_the_lists_lancedb_trains():
    """LanceDB trains one IVF list per 256 rows whatever num_partitions asks ("training 1 of the 20
    requested IVF partitions" for 326 rows): the lists that exist bound nprobe and its tuning."""
    x = unit(np.random.default_rng(5).normal(size=(600, 8)))
    idx = LanceDbIndex(index_type="IVF_HNSW_SQ", num_partitions=16, nprobe=1)
    idx.build(x)
    assert idx._partitions == 2


def test_prefilter_versus_postfilter(data, capsys):
    """LanceDB's prefilter=True filters before the vector search (k allowed hits); prefilter=False
    filters LanceDB's top-k afterwards and leaves a selective filter's queries short."""
    x, q = data
    mask = np.zeros(len(x), bool)
    mask[::50] = True
    filled = {}
    for pre in (True, False):
        idx = LanceDbIndex(index_type="flat", prefilter=pre)
        idx.build(x)
        _, ids = idx.search_as_configured(q, 10, mask)
        assert mask[ids[ids >= 0]].all()
        filled[pre] = float((ids >= 0).sum(axis=1).mean())
    with capsys.disabled():
        print(f"\nmean hits of 10 (1 row in 50 allowed): prefilter {filled[True]}, postfilter {filled[False]}")
    assert filled[True] == 10 and filled[False] < 10


def test_flat_equivalent_rankings_equal_faiss_flat(data):
    """index_type=flat (and an IVF probing every list, refined) rank as FAISS flat does: the same
    hits with the same scores; the order equals _exact's (scores summed per row in float64, so an
    exact duplicate ties, and ties go by row number). FAISS flat may order a duplicate pair either
    way (its float32 scores for equal rows differ in the last bit)."""
    x, q = data
    x = np.vstack([x, x[:5]])  # exact duplicates: tied scores
    ref = FlatIndex()
    ref.build(x)
    rs, ri = ref.search(q, 10)
    for idx in (LanceDbIndex(index_type="flat"), LanceDbIndex(index_type="IVF_PQ", num_partitions=8, nprobe=8,
                                                               num_sub_vectors=24, refine_factor=50)):
        idx.build(x)
        s, i = idx.search(q, 10)
        assert np.array_equal(i, _exact(x, q, 10, None)[1]) and np.allclose(s, rs, atol=1e-5)
        assert all(set(a) == set(b) for a, b in zip(i.tolist(), ri.tolist()))


def test_each_index_has_its_own_private_folder(data):
    x, _ = data
    a, b = LanceDbIndex(index_type="flat"), LanceDbIndex(index_type="flat")
    a.build(x[:300])
    b.build(x[:300])
    assert a._dir != b._dir and oct(os.stat(a._dir).st_mode & 0o777) == "0o700"
    assert a.nbytes() > 300 * 24 * 4


def test_bad_parameters_are_config_errors():
    with pytest.raises(ConfigError, match="index.index_type must be one of"):
        LanceDbIndex(index_type="IVF_FOO")
    with pytest.raises(ConfigError, match="index.nprobe must be an integer >= 1"):
        LanceDbIndex(nprobe=0)
    with pytest.raises(ConfigError, match="does not divide"):
        LanceDbIndex(num_sub_vectors=5).build(unit(np.random.default_rng(1).normal(size=(300, 24))))


@pytest.mark.slow
@pytest.mark.skipif(not SQUAD.is_dir(), reason="../shared/datasets/squad2-normans is absent")
def test_lancedb_cell_on_squad2_normans_reports_ann_figures():
    """80-character chunks (326 of them: enough rows for LanceDB to train its IVF_PQ index; its
    42 sections are too few and would be searched exhaustively), index.target_recall=0.95: the
    cell reports the ANN figures of a real IVF_PQ index and its tuning; lancedb_flat ranks as
    FAISS flat does."""
    from rag_bench.data.loader import load_dataset
    from rag_bench.memo import SharedWork
    from rag_bench.runner.main import compute as run_pipeline
    from tests.conftest import compose_config

    work = SharedWork()  # one embedding of the corpus for the three cells

    def cell(*index: str):
        cfg = compose_config(["tracking=none", f"dataset.path={SQUAD}", "chunker=fixed", "chunker.size=80",
                              "chunker.overlap=0", "retriever=dense", "generator=none", *index])
        return run_pipeline(cfg, load_dataset(SQUAD), index[0], work)

    lance, flat = cell("index=lancedb", "index.target_recall=0.95"), cell("index=lancedb_flat")
    ann = lance.metrics["ann"]
    print({k: v for k, v in ann.items() if k != "tuned_on"})
    assert lance.metrics["counts"]["searchable_chunks"] >= 256
    assert ann["index"] == "lancedb" and 0 < ann["ann_recall@10"] < 1  # PQ codes: approximate
    assert ann["index_bytes"] > 0 and ann["build_s"] > 0 and ann["ann_p50_ms"] > 0
    assert ann["tuned_knob"] == "nprobe" and ann["tune_questions"] + ann["held_out_questions"] == 208
    assert 0 < ann["held_out_recall@10"] <= 1 and ann["tune_curve"]
    assert flat.metrics["ann"]["ann_recall@10"] == 1.0
    faiss = cell("index=flat")
    assert flat.records["chunk_ids"].tolist() == faiss.records["chunk_ids"].tolist()


def test_a_data_folder_named_datasets_does_not_break_lancedb(tmp_path):
    # A folder named datasets/ on sys.path (this repository's demo data under `python -m pytest`,
    # a team's data folder in a notebook) imports as a namespace package when transformers probes
    # for Hugging Face datasets; lancedb then failed at import and at create_table with
    # "cannot import name 'Dataset' from 'datasets'". In a fresh process: lancedb remembers a
    # failed registration, so an earlier failure in this process would hide the bug. Where Hugging
    # Face datasets is installed (make llm installs it with ragas) a bare folder loses to it, so the
    # foreign folder is a regular package here: the same module without `Dataset`, on any machine.
    (tmp_path / "datasets").mkdir()
    (tmp_path / "datasets" / "__init__.py").write_text("")
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import datasets, numpy as np\n"
            "assert not hasattr(datasets, 'Dataset')\n"
            "from rag_bench.indexing.lancedb import LanceDbIndex\n"
            "index = LanceDbIndex(index_type='flat'); v = np.eye(4, dtype=np.float32); index.build(v)\n"
            "print(index.search(v[:1], 2)[1].tolist(), sys.modules['datasets'] is datasets)\n")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split()[-1] == "True" and out.stdout.startswith("[[0, ")
