"""reranker=rerank_api: a /rerank service. Our client's logic against a fake service (both result
shapes, order by index, retries, cache, errors naming the service); end to end (slow) against a
small /rerank server of ours wrapping a real sentence-transformers CrossEncoder: llama-cpp-python's
server has no reranking endpoint (its routes: completions, chat, embeddings, models, tokenize).
llama.cpp's own C++ server has one (--reranking), but building it and finding a reranking GGUF that
ships on PyPI was not attempted."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rag_bench.cli import main as cli
from rag_bench.domain import Chunk, Question
from rag_bench.errors import EndpointError
from rag_bench.reranking.rerank_api import RerankApiReranker
from tests.bad_inputs.test_bad_inputs import nothing_left
from tests.conftest import TINY
from tests.servers import JsonEndpoint, free_port, serving

Q = Question("q1", "refund window", True)
CHUNKS = [Chunk(f"d#{i}", "d", 0, 1, text) for i, text in
          enumerate(["refund window is 14 days", "pricing", "the window for a refund", "security"])]


def overlap(query: str, text: str) -> float:
    return float(len(set(query.split()) & set(text.split())))


class Rerank(JsonEndpoint):
    """Scores = word overlap; results sorted by score (as services do), each with its index.
    ``server.shape``: cohere (results / relevance_score) or tei (a list / score)."""

    def answer(self, body):
        server = self.server
        if server.fail > 0:
            server.fail -= 1
            return 429, b'{"error": "rate limited"}'
        if server.mode == "garbage":
            return 200, b'{"ranking": "no"}'
        docs = body["documents"]
        scored = sorted(((i, overlap(body["query"], d)) for i, d in enumerate(docs)), key=lambda x: -x[1])
        if server.mode == "short":
            scored = scored[:-1]
        if server.shape == "tei":
            return 200, json.dumps([{"index": i, "score": s} for i, s in scored]).encode()
        return 200, json.dumps({"results": [{"index": i, "relevance_score": s} for i, s in scored]}).encode()


def service(**attrs):
    return serving(Rerank, **{"fail": 0, "mode": "ok", "shape": "cohere", **attrs})


@pytest.mark.parametrize("shape", ["cohere", "tei"])
def test_scores_by_index_in_either_shape_cached_and_retried(tmp_path, monkeypatch, shape):
    monkeypatch.setenv("RAG_BENCH_CACHE", str(tmp_path))
    with service(shape=shape, fail=1) as server:
        url = f"http://127.0.0.1:{server.server_port}/v1"
        rr = RerankApiReranker(base_url=url, depth=4, backoff_s=0.01)
        (scores,) = rr.scores([Q], [CHUNKS])
        assert scores.tolist() == [overlap(Q.question, c.text) for c in CHUNKS]
        assert rr.retries == 1 and len(server.requests) == 2
        assert server.requests[-1]["query"] == Q.question and server.requests[-1]["top_n"] == 4
        again = RerankApiReranker(base_url=url, depth=4)  # a re-run: every pair from the cache
        assert again.scores([Q], [CHUNKS])[0].tolist() == scores.tolist() and len(server.requests) == 2


@pytest.mark.parametrize(("mode", "needle"), [("garbage", "not a rerank result"), ("short", "3 scores for 4")])
def test_a_service_that_answers_wrong_is_an_error_naming_it(tmp_path, monkeypatch, mode, needle):
    monkeypatch.setenv("RAG_BENCH_CACHE", str(tmp_path))
    with service(mode=mode) as server:
        url = f"http://127.0.0.1:{server.server_port}/v1"
        with pytest.raises(EndpointError, match=f"reranker endpoint {url}/rerank") as err:
            RerankApiReranker(base_url=url, depth=4, max_retries=0).scores([Q], [CHUNKS])
        assert needle in str(err.value)


def test_through_the_cli_and_an_unreachable_service_exits_2(tmp_path, capsys):
    out = tmp_path / "out"
    with service() as server:
        url = f"http://127.0.0.1:{server.server_port}/v1"
        assert cli(["run", f"dataset.path={TINY}", f"output.root={out}", "tracking=none", "experiment.name=r",
                    "reranker=rerank_api", f"reranker.base_url={url}", "reranker.depth=5", "generator=none"]) == 0
        assert server.requests and len(list((out / "r").glob("*/DONE"))) == 1
    dead = f"http://127.0.0.1:{free_port()}/v1"
    assert cli(["run", f"dataset.path={TINY}", f"output.root={out / 'x'}", "tracking=none", "reranker=rerank_api",
                f"reranker.base_url={dead}", "reranker.max_retries=0", "generator=none"]) == 2
    assert f"reranker endpoint {dead}/rerank" in capsys.readouterr().err
    nothing_left(out / "x")


@pytest.mark.slow
def test_against_a_rerank_server_wrapping_a_real_cross_encoder(tiny_cross_encoder, tmp_path, monkeypatch):
    """The service is ours (a /rerank handler around sentence-transformers' CrossEncoder); its
    scores through the client equal the model's own predictions."""
    from sentence_transformers import CrossEncoder

    model = CrossEncoder(str(tiny_cross_encoder), max_length=64)

    class CrossEncoderService(JsonEndpoint):
        def answer(self, body):
            scores = model.predict([(body["query"], d) for d in body["documents"]], convert_to_numpy=True)
            order = np.argsort(-scores, kind="stable")
            return 200, json.dumps({"results": [{"index": int(i), "relevance_score": float(scores[i])}
                                                for i in order]}).encode()

    monkeypatch.setenv("RAG_BENCH_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "out"
    with serving(CrossEncoderService) as server:
        url = f"http://127.0.0.1:{server.server_port}/v1"
        rr = RerankApiReranker(base_url=url, depth=4)
        (scores,) = rr.scores([Q], [CHUNKS])
        cell = ["run", f"dataset.path={TINY}", f"output.root={out}", "tracking=none", "experiment.name=r",
                "reranker=rerank_api", f"reranker.base_url={url}", "reranker.depth=5", "generator=none"]
        assert cli(cell) == 0 and len(server.requests) > 1
    direct = model.predict([(Q.question, c.text) for c in CHUNKS], convert_to_numpy=True)
    assert np.allclose(scores, direct, atol=1e-6)
    # The service is gone: the same reranking in another cell (another k) comes from the pair cache
    # with zero calls -- an unreachable service would exit 2.
    assert cli([*cell, "pipeline.k=3"]) == 0
    assert len(list((out / "r").glob("*/DONE"))) == 2
