"""Extractive generator, the OpenAI-compatible client against a scripted local HTTP endpoint
(retries, timeouts, failures recorded), and the persistent generation cache."""

from __future__ import annotations

import json
import time

import pytest

from rag_bench.domain import Passage
from rag_bench.errors import ConfigError
from rag_bench.generation.answer import parse_answer
from rag_bench.generation.base import GenerationInput, generate_cached
from rag_bench.generation.extractive import ExtractiveGenerator
from rag_bench.generation.openai_compat import OpenAICompatibleGenerator
from rag_bench.generation.prompt import REFUSAL, build_prompt
from tests.servers import JsonEndpoint, serving

PASSAGES = (Passage(1, "d#0", "d", 0, 80, "Opened items carry a restocking fee of 10%. Gift cards never expire."),
            Passage(2, "e#0", "e", 0, 60, "Delivery to zone B costs $49. Haul-away is free."))


def item(question: str, passages=PASSAGES) -> GenerationInput:
    return GenerationInput(question, passages, build_prompt(question, passages))


def test_extractive_answers_cites_and_refuses():
    gen = ExtractiveGenerator()
    out = [parse_answer(g.raw, 2) for g in gen.generate([item("What is the restocking fee for opened items?"),
                                                          item("Who won the 1998 world cup?"), item("x", ())])]
    assert out[0].text.startswith("Opened items carry a restocking fee of 10%.") and out[0].citations == (1,)
    assert out[1].refused and out[1].text == REFUSAL and out[2].refused
    assert gen.generate([item("restocking fee opened")])[0].raw == gen.generate([item("restocking fee opened")])[0].raw
    with pytest.raises(ConfigError, match="generator.threshold"):
        ExtractiveGenerator(threshold=2)


def test_extractive_batch_answers_equal_one_at_a_time(demo_dataset):
    """The batch splits each passage once and reuses it across prompts: every answer of a batch
    is the one that prompt gets alone (demo questions over overlapping passage sets)."""
    from rag_bench.chunking.section import SectionChunker

    chunks = SectionChunker().chunk(list(demo_dataset.documents.values()))
    def passages(j: int) -> tuple[Passage, ...]:  # six chunks from a sliding start: prompts overlap
        return tuple(Passage(n + 1, c.chunk_id, c.doc_id, c.start, c.end, c.text)
                     for n, c in enumerate(chunks[j % 7:j % 7 + 6]))

    items = [item(q.question, passages(j)) for j, q in enumerate(demo_dataset.questions)]
    gen = ExtractiveGenerator()
    batch = gen.generate(items)
    assert batch == [gen.generate([it])[0] for it in items]
    assert sum(not parse_answer(g.raw, 6).refused for g in batch) >= 5  # answers, not only refusals


class Scripted(JsonEndpoint):
    """Answers /v1/chat/completions from a per-server script: status codes, delays, bodies."""

    def answer(self, body):
        kind, delay = self.server.script.pop(0) if self.server.script else ("ok", 0)
        time.sleep(delay)
        if kind != "ok":
            return int(kind), b'{"error": "busy"}'
        content = json.dumps({"answer": "A fee of 10% [1].", "sources": [1]})
        return 200, json.dumps({"choices": [{"message": {"content": content}}],
                                "usage": {"prompt_tokens": 120, "completion_tokens": 12}}).encode()


@pytest.fixture
def endpoint():
    with serving(Scripted, script=[]) as server:
        yield server


def client(server, **kw):
    return OpenAICompatibleGenerator(base_url=f"http://127.0.0.1:{server.server_port}/v1", backoff_s=0.01, **kw)


def test_openai_success_and_request_shape(endpoint):
    (g,) = client(endpoint).generate([item("fee?")])
    assert g.error is None and g.tokens_in == 120 and g.tokens_out == 12 and g.attempts == 1
    assert parse_answer(g.raw, 2).citations == (1,)
    req = endpoint.requests[0]
    assert req["messages"][0]["role"] == "system" and req["temperature"] == 0.0 and req["seed"] == 0
    assert req["response_format"]["type"] == "json_object" and "schema" in req["response_format"]


def test_openai_retries_then_succeeds(endpoint):
    endpoint.script = [("503", 0), ("429", 0)]
    (g,) = client(endpoint, max_retries=3).generate([item("fee?")])
    assert g.error is None and g.attempts == 3


def test_openai_failure_is_recorded_with_reason(endpoint):
    endpoint.script = [("500", 0)] * 5
    (g,) = client(endpoint, max_retries=1).generate([item("fee?")])
    assert g.raw == "" and "HTTP 500" in g.error and g.attempts == 2
    endpoint.script = [("400", 0)]
    (g,) = client(endpoint, max_retries=3).generate([item("fee?")])
    assert "HTTP 400" in g.error and g.attempts == 1  # client errors are not retried


def test_openai_timeout_and_unreachable(endpoint):
    endpoint.script = [("ok", 1.5)]
    (g,) = client(endpoint, timeout_s=0.3, max_retries=0).generate([item("fee?")])
    assert g.error and "timed out" in g.error.lower()
    dead = OpenAICompatibleGenerator(base_url="http://127.0.0.1:9/v1", max_retries=1, backoff_s=0.01)
    (g,) = dead.generate([item("fee?")])
    assert g.error and "refused" in g.error.lower()


def test_openai_concurrency_keeps_order(endpoint):
    outs = client(endpoint, concurrency=4).generate([item(f"question {i}?") for i in range(8)])
    assert len(outs) == 8 and all(o.error is None for o in outs) and len(endpoint.requests) == 8


def test_openai_config_errors():
    with pytest.raises(ConfigError, match="generator.base_url"):
        OpenAICompatibleGenerator(base_url=None)
    with pytest.raises(ConfigError, match="response_format"):
        OpenAICompatibleGenerator(base_url="http://x/v1", response_format="xml")


def test_generation_cache_generates_each_prompt_once(endpoint, tmp_path):
    gen = client(endpoint)
    items = [item("fee?"), item("fee?"), item("delivery?")]
    first = generate_cached(gen, items, cache_dir=tmp_path)
    assert len(endpoint.requests) == 2 and [g.cached for g in first] == [False, False, False]
    endpoint.script = [("500", 0)] * 10  # a later failure is not cached...
    again = generate_cached(gen, items + [item("new?")], cache_dir=tmp_path)
    assert [g.cached for g in again] == [True, True, True, False] and again[3].error
    assert again[0].raw == first[0].raw
    endpoint.script = []
    third = generate_cached(gen, [item("new?")], cache_dir=tmp_path)  # ...so it is retried next time
    assert third[0].error is None and not third[0].cached
