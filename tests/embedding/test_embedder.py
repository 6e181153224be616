"""The real embedder (packaged all-MiniLM-L6-v2, offline): prefixes, normalisation, cache, local folders."""

from __future__ import annotations

import time

import numpy as np
import pytest

from rag_bench import switches
from rag_bench.embedding.sentence_transformer import SentenceTransformerEmbedder, resolve_model
from rag_bench.errors import ConfigError

pytestmark = pytest.mark.slow
TEXTS = ["The dishwasher shows error E21.", "Refunds take up to 14 days.", "The dishwasher shows error E21."]


def test_vectors_are_normalised_and_match_the_model(tmp_path):
    emb = SentenceTransformerEmbedder(cache_dir=str(tmp_path))
    v = emb.embed_documents(TEXTS)
    assert v.shape == (3, 384) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1, atol=1e-5)
    raw = emb.encode_raw(TEXTS[:2])
    assert np.allclose(v[:2], raw / np.linalg.norm(raw, axis=1, keepdims=True), atol=1e-5)
    assert emb.usage().encoded == 2  # the repeated text was encoded once


def test_prefixes_are_applied_to_their_side_only(tmp_path):
    emb = SentenceTransformerEmbedder(cache_dir=str(tmp_path), query_prefix="query: ", document_prefix="passage: ")
    q = emb.embed_queries([TEXTS[1]])[0]
    d = emb.embed_documents([TEXTS[1]])[0]
    raw_q, raw_d, raw_plain = emb.encode_raw(["query: " + TEXTS[1], "passage: " + TEXTS[1], TEXTS[1]])
    assert np.allclose(q, raw_q / np.linalg.norm(raw_q), atol=1e-5)
    assert np.allclose(d, raw_d / np.linalg.norm(raw_d), atol=1e-5)
    assert not np.allclose(q, d, atol=1e-3) and not np.allclose(d, raw_plain / np.linalg.norm(raw_plain), atol=1e-3)


def test_second_embedder_reads_the_cache(tmp_path):
    first = SentenceTransformerEmbedder(cache_dir=str(tmp_path))
    a = first.embed_documents(TEXTS)
    second = SentenceTransformerEmbedder(cache_dir=str(tmp_path))
    b = second.embed_documents(TEXTS)
    assert np.array_equal(a, b)
    assert second.usage().encoded == 0 and second.usage().cache_hits == 3
    other_prefix = SentenceTransformerEmbedder(cache_dir=str(tmp_path), document_prefix="passage: ")
    other_prefix.embed_documents(TEXTS[:1])
    assert other_prefix.usage().encoded == 1  # the prefix is part of the key


def test_local_model_folder_loads_and_has_its_own_identity(tmp_path):
    packaged = SentenceTransformerEmbedder(cache_dir=str(tmp_path))
    folder = tmp_path / "my-model"
    packaged.model.save(str(folder))  # a model folder built by the test, as a user would have one
    local = SentenceTransformerEmbedder(model=str(folder), cache_dir=str(tmp_path))
    assert local.model_path == str(folder.resolve()) and local.identity != packaged.identity
    assert np.allclose(local.embed_documents(TEXTS[:1]), packaged.embed_documents(TEXTS[:1]), atol=1e-5)


def test_unknown_model_is_a_config_error(tmp_path, monkeypatch):
    """Fails fast, offline, also in a process that imported huggingface_hub before the embedder set
    HF_HUB_OFFLINE (ragas, datasets and transformers do): huggingface_hub reads the variable once, at
    import, and such a process used to retry hub requests for ~70 s before the error."""
    import socket

    import huggingface_hub.constants
    import sentence_transformers  # noqa: F401 (imported before the clock starts)

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)  # as read at an earlier import

    def no_network(host, *args, **kwargs):
        raise OSError(f"this test allows no network ({host})")

    monkeypatch.setattr(socket, "getaddrinfo", no_network)
    emb = SentenceTransformerEmbedder(model="no-such-org/no-such-model", cache_dir=str(tmp_path))
    assert resolve_model("no-such-org/no-such-model") == "no-such-org/no-such-model"
    t0 = time.perf_counter()
    with pytest.raises(ConfigError, match="embedder.model"):
        emb.embed_documents(["x"])
    assert time.perf_counter() - t0 < 10  # 0.2 s here; ~70 s of retries and backoff without local_files_only


def test_vectors_asked_again_come_from_memory_with_the_same_counts(tmp_path, monkeypatch):
    """A text this embedder already read or encoded is not looked up in SQLite again (a reranker's
    per-question calls, every cell's questions); it still counts as a cache hit, as the lookup
    did. With sharing off (RAG_BENCH_SHARE=0), every call goes to the cache."""
    from rag_bench.embedding import sentence_transformer as st

    lookups = []
    real = st.get_or_compute

    def counting(cache, keys, **kw):
        lookups.append(len(keys))
        return real(cache, keys, **kw)

    monkeypatch.setattr(st, "get_or_compute", counting)
    emb = SentenceTransformerEmbedder(cache_dir=str(tmp_path))
    first = emb.embed_documents(TEXTS)
    assert lookups == [3] and emb.usage().encoded == 2 and emb.usage().cache_hits == 0
    again = emb.embed_documents(TEXTS[::-1] + ["Descale the kettle monthly."])
    assert lookups == [3, 1]  # only the new text went to the cache
    assert np.array_equal(again[:3], first[::-1])
    assert emb.usage().requested == 7 and emb.usage().cache_hits == 3 and emb.usage().encoded == 3
    fresh = SentenceTransformerEmbedder(cache_dir=str(tmp_path))  # a new embedder starts from the cache
    assert np.array_equal(fresh.embed_documents(TEXTS), first) and lookups[-1] == 3
    monkeypatch.setattr(switches, "_CONFIGURED", switches.Switches(share=False))
    assert np.array_equal(emb.embed_documents(TEXTS), first) and lookups[-1] == 3
    assert emb.usage().cache_hits == 6  # found in the cache, not in memory: counted alike


def test_encoding_many_texts_is_announced_once(tmp_path, caplog):
    """The console is not silent while the first dense cell embeds (the model's load and the
    encoding took ~47 s of the demo with no line); vectors from the cache are not announced."""
    import logging

    from rag_bench.embedding.sentence_transformer import NOTICE_TEXTS

    texts = [f"Chunk number {i} of the manual." for i in range(NOTICE_TEXTS)]
    emb = SentenceTransformerEmbedder(cache_dir=str(tmp_path))
    with caplog.at_level(logging.INFO, logger="rag_bench"):
        emb.embed_documents(texts)
        emb.embed_queries(texts[:3])  # a few: silent
        SentenceTransformerEmbedder(cache_dir=str(tmp_path)).embed_documents(texts)  # cached: silent
    notices = [r.getMessage() for r in caplog.records if r.getMessage().startswith("embedding ")]
    assert notices == [f"embedding {NOTICE_TEXTS} chunks with all-MiniLM-L6-v2 (cached for the next cells)"]


def test_the_batches_bar_is_cleared_when_the_encoding_ends(tmp_path, monkeypatch):
    """On a terminal, sentence-transformers' bar of a long encoding is not left behind (a stale
    `Batches: 100%` row above every later line of a sweep); the vectors are the same call's."""
    import io
    import sys

    from tests.runner.test_console import _screen

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    texts = [f"Passage {i} about refunds." for i in range(9)]
    emb = SentenceTransformerEmbedder(cache_dir=str(tmp_path), batch_size=2)
    plain = emb.encode_raw(texts)  # stderr is not a terminal: no bar
    term = Terminal()
    monkeypatch.setattr(sys, "stderr", term)
    shown = emb.encode_raw(texts)
    assert "Batches" in term.getvalue()  # the bar was drawn
    assert not [row for row in _screen(term.getvalue()) if row.strip()], term.getvalue()  # and cleared
    assert np.array_equal(shown, plain)


def test_a_model_loaded_in_a_sweeps_batch_is_frozen_with_what_stays_loaded(monkeypatch):
    """Issue 57: the grid's first cell loads no model, so the batch's start froze none of torch's and the
    model's ~0.4 M objects; two full collections of 0.3-0.5 s walked them in the squad2-normans grid."""
    from rag_bench import heap
    from rag_bench.embedding.models import load_model

    calls = []
    monkeypatch.setattr(heap, "freeze_loaded", lambda: calls.append("frozen"))
    model = load_model.__wrapped__(resolve_model("all-MiniLM-L6-v2"), "cpu")  # past the process's memo
    assert model is not None and calls == ["frozen"]
