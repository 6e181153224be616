"""Each reranker on a tiny case; the reranked run stays strictly decreasing; a real cross-encoder
built in a temporary folder (the real class and code path, offline); each pair scored once."""

from __future__ import annotations

import numpy as np
import pytest

from rag_bench.domain import Chunk, Question, Ranking
from rag_bench.errors import ConfigError
from rag_bench.reranking.base import apply_rerank, one_blas_thread
from rag_bench.reranking.dense import DenseReranker
from rag_bench.reranking.mmr import MmrReranker, mmr_order
from tests.fakes import KeywordEmbedder

CHUNKS = [Chunk("c0", "d", 0, 1, "toaster browns bread"), Chunk("c1", "d", 0, 1, "kettle boils water"),
          Chunk("c2", "d", 0, 1, "kettle boils water"), Chunk("c3", "d", 0, 1, "kettle descaling with vinegar")]
Q = Question("q", "kettle boils", True)


def test_apply_rerank_head_and_tail():
    r = Ranking("q", (10, 11, 12, 13, 14), (5.0, 4.0, 3.0, 2.0, 1.0))
    out = apply_rerank(r, np.array([0.1, 0.9, 0.5]))
    assert out.indices == (11, 12, 10, 13, 14)
    assert all(a > b for a, b in zip(out.scores, out.scores[1:]))
    tie = apply_rerank(r, np.array([0.5, 0.5]))
    assert tie.indices[:2] == (10, 11)  # ties keep retrieval order


def test_dense_reranker_orders_by_cosine():
    (scores,) = DenseReranker(embedder=KeywordEmbedder(), depth=4).scores([Q], [CHUNKS])
    assert scores[1] == scores[2] > scores[3] > scores[0]


def test_mmr_penalises_duplicates():
    emb = KeywordEmbedder()
    (pure,) = MmrReranker(embedder=emb, lambda_=1.0).scores([Q], [CHUNKS])
    (diverse,) = MmrReranker(embedder=emb, lambda_=0.5).scores([Q], [CHUNKS])
    assert np.argsort(-pure).tolist()[:2] == [1, 2]      # relevance only: the duplicate is second
    assert np.argsort(-diverse).tolist()[:2] == [1, 3]   # MMR: the duplicate drops below c3
    assert mmr_order(np.array([1.0, 0.0]), np.array([[1.0, 0.0], [1.0, 0.0], [0.6, 0.8]]), 0.3) == [0, 2, 1]


def test_mmr_runs_numpys_blas_on_one_thread_and_gives_it_back():
    """A shortlist's Gram matrix is a small product: on one BLAS thread (threads spinning between
    such products cost ~15x their CPU in a sweep, issue 57), the same floats, the limit lifted after."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    blas = threadpoolctl.ThreadpoolController().select(user_api="blas")
    before = [lib.num_threads for lib in blas.lib_controllers]
    rng = np.random.default_rng(0)
    docs = rng.normal(size=(50, 384)).astype(np.float32)
    with one_blas_thread():
        assert [lib.num_threads for lib in blas.lib_controllers] == [1] * len(before)
        inside = docs @ docs.T
    assert [lib.num_threads for lib in blas.lib_controllers] == before
    assert np.array_equal(inside, docs @ docs.T)


def _mmr_order_by_definition(query, docs, lam):
    """MMR as first written: re-slice the similarities of the picks at every step."""
    rel, sim = docs @ query, docs @ docs.T
    picked, left = [], list(range(len(docs)))
    while left:
        red = sim[np.ix_(left, picked)].max(axis=1) if picked else np.zeros(len(left))
        best = left[int(np.argmax(lam * rel[left] - (1 - lam) * red))]
        picked.append(best)
        left.remove(best)
    return picked


@pytest.mark.parametrize("seed", range(40))
def test_mmr_order_equals_the_definition(seed):
    """The running-max selection picks exactly what the definition picks, ties and duplicates
    included (rows drawn from a few distinct unit vectors, float32 like the embedder's)."""
    rng = np.random.default_rng(seed)
    n, dim = int(rng.integers(1, 60)), int(rng.integers(2, 8))
    pool = rng.normal(size=(int(rng.integers(1, 6)), dim))
    docs = pool[rng.integers(0, len(pool), n)] if seed % 2 else rng.normal(size=(n, dim))
    docs = (docs / np.linalg.norm(docs, axis=1, keepdims=True)).astype(np.float32)
    query = docs[0] if seed % 3 == 0 else rng.normal(size=dim).astype(np.float32)
    for lam in (0.0, 0.3, 0.7, 1.0):
        assert mmr_order(query, docs, lam) == _mmr_order_by_definition(query, docs, lam)
        q64 = query.astype(np.float64)  # relevance in float64, redundancy in float32: both as written out
        assert mmr_order(q64, docs, lam) == _mmr_order_by_definition(q64, docs, lam)


def test_mmr_order_same_picks_as_the_former_loop_on_near_ties():
    """Five numpy calls a step instead of eight: the former loop's picks on 384-dim float32 rows
    (float32 and float64 queries), where products round differently by dtype, and with NaN rows."""
    def former(query, docs, lam):
        rel, sim = docs @ query, docs @ docs.T
        red = np.zeros(len(docs), dtype=np.result_type(rel, sim))
        alive, picked = np.ones(len(docs), dtype=bool), []
        for step in range(len(docs)):
            val = lam * rel - (1 - lam) * red
            val[~alive] = -np.inf
            best = int(np.argmax(val))
            if not alive[best]:
                best = int(np.flatnonzero(alive)[0])
            picked.append(best)
            alive[best] = False
            red = sim[:, best] if step == 0 else np.maximum(red, sim[:, best])
        return picked

    rng = np.random.default_rng(5)
    for n in (1, 2, 10, 50):
        base = rng.normal(size=(3, 384))
        docs = (base[rng.integers(0, 3, n)] + 1e-7 * rng.normal(size=(n, 384))).astype(np.float32)
        docs /= np.linalg.norm(docs, axis=1, keepdims=True)
        for query in (docs[0], rng.normal(size=384).astype(np.float32), rng.normal(size=384)):
            for lam in (0.0, 0.3, 0.7, 1.0):
                assert mmr_order(query, docs, lam) == former(query, docs, lam)
        with_nan = docs.copy()
        with_nan[n // 2] = np.nan
        assert mmr_order(docs[0], with_nan, 0.7) == former(docs[0], with_nan, 0.7)


@pytest.mark.parametrize(("cls", "kwargs", "key"), [(MmrReranker, {"lambda_": 2}, "lambda_"),
                                                     (DenseReranker, {"depth": 0}, "reranker.depth")])
def test_bad_parameters(cls, kwargs, key):
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        cls(embedder=KeywordEmbedder(), **kwargs)


@pytest.mark.slow
def test_cross_encoder_scores_each_pair_once(tiny_cross_encoder):
    from sentence_transformers import CrossEncoder

    from rag_bench.reranking.cross_encoder import CrossEncoderReranker

    rr = CrossEncoderReranker(model=str(tiny_cross_encoder), depth=4, max_length=64)
    (scores,) = rr.scores([Q], [CHUNKS])
    direct = CrossEncoder(str(tiny_cross_encoder), max_length=64).predict([(Q.question, c.text) for c in CHUNKS])
    assert np.allclose(scores, direct, atol=1e-5)
    assert rr.pairs_scored == 3  # c1 and c2 have the same text: one pair
    again = CrossEncoderReranker(model=str(tiny_cross_encoder), depth=4, max_length=64)
    again.scores([Q, Q], [CHUNKS, CHUNKS[:2]])
    assert again.pairs_scored == 0  # every pair was scored before in this process


@pytest.mark.slow
def test_cross_encoder_pairs_are_scored_once_across_processes(tiny_cross_encoder, tmp_path):
    """A second process with the same cache folder scores no pair again and gets the same scores."""
    import json
    import os
    import subprocess
    import sys

    code = f"""
import json, sys
from rag_bench.domain import Asker, Chunk, Question
from rag_bench.reranking.cross_encoder import CrossEncoderReranker
rr = CrossEncoderReranker(model={str(tiny_cross_encoder)!r}, depth=4, max_length=64)
(s,) = rr.scores([{Q!r}], [{CHUNKS!r}])
print(json.dumps({{"scored": rr.pairs_scored, "scores": s.tolist()}}))
"""
    env = {**os.environ, "RAG_BENCH_CACHE": str(tmp_path)}
    runs = [json.loads(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                                      check=True, timeout=300).stdout.strip().splitlines()[-1]) for _ in range(2)]
    assert runs[0]["scored"] == 3 and runs[1]["scored"] == 0
    assert runs[0]["scores"] == runs[1]["scores"]


def test_cross_encoder_needs_a_model():
    from rag_bench.reranking.cross_encoder import CrossEncoderReranker

    with pytest.raises(ConfigError, match="reranker.model"):
        CrossEncoderReranker(model=None)


def test_unknown_cross_encoder_fails_fast_offline(monkeypatch):
    """As for the embedder: in a process that imported huggingface_hub before HF_HUB_OFFLINE was
    set, an unknown model name is a config error at once, not after the hub's retries."""
    import socket

    import huggingface_hub.constants
    import sentence_transformers  # noqa: F401 (imported before the model is asked for)

    from rag_bench.reranking.cross_encoder import CrossEncoderReranker, _load

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)  # as read at an earlier import

    def no_network(host, *args, **kwargs):
        raise OSError(f"this test allows no network ({host})")

    monkeypatch.setattr(socket, "getaddrinfo", no_network)
    _load.cache_clear()
    reranker = CrossEncoderReranker(model="no-such-org/no-such-cross-encoder")
    q = Question("q1", "what?", True)
    chunk = Chunk("d#0", "d", 0, 4, "text")
    with pytest.raises(ConfigError, match="reranker.model"):
        reranker.scores([q], [[chunk]])


def test_the_processs_pair_memo_is_bounded_oldest_first(monkeypatch):
    from rag_bench.reranking import cross_encoder

    monkeypatch.setattr(cross_encoder, "_PAIR_SCORES", {})
    cross_encoder._remember({"a": 1.0, "b": 2.0}, limit=3)
    cross_encoder._remember({"c": 3.0, "d": 4.0}, limit=3)
    assert cross_encoder._PAIR_SCORES == {"b": 2.0, "c": 3.0, "d": 4.0}


def test_a_cross_encoder_loaded_in_a_sweeps_batch_is_frozen_with_what_stays_loaded(tiny_cross_encoder, monkeypatch):
    """Issue 57 (rag_bench.heap): a model loaded within a batch joins what full collections skip."""
    from rag_bench import heap
    from rag_bench.reranking import cross_encoder

    calls = []
    monkeypatch.setattr(heap, "freeze_loaded", lambda: calls.append("frozen"))
    model = cross_encoder._load.__wrapped__(str(tiny_cross_encoder), "cpu", None)  # past the process's memo
    assert model is not None and calls == ["frozen"]
