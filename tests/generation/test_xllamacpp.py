"""generator=xllamacpp, our side of it: the request it sends, how it reads the server's reply, its
settings and identity, and the fix it names when the wheel is missing. The real model through the
real CLI: tests/e2e/test_xllamacpp.py."""

from __future__ import annotations

import sys

import pytest

from rag_bench.domain import Passage
from rag_bench.errors import ConfigError
from rag_bench.generation import xllamacpp
from rag_bench.generation.base import GenerationInput
from rag_bench.generation.prompt import build_prompt


def item(n: int = 2) -> GenerationInput:
    passages = tuple(Passage(i, f"c{i}", "doc", 0, 10, f"Passage {i} text.", ("Doc",)) for i in range(1, n + 1))
    return GenerationInput("How long?", passages, build_prompt("How long?", passages))


def test_request_closes_the_schema_bounds_sources_and_reads_every_prompt_from_zero():
    it = item(2)
    body = xllamacpp.request_body(it, max_tokens=64, temperature=0.0, seed=7, system_in_user=True)
    # Gemma's template has no system role: the instructions open the one user turn
    assert body["messages"] == [{"role": "user", "content": f"{it.prompt.system}\n\n{it.prompt.user}"}]
    schema = body["response_format"]["schema"]
    assert body["response_format"]["type"] == "json_object"
    assert schema["additionalProperties"] is False  # no keys of the model's own past the contract
    assert schema["x-guidance"]["whitespace_pattern"] == " ?"  # one optional space, as llama-cpp-python's grammar
    assert schema["properties"]["sources"] == {"type": "array", "items": {"enum": [1, 2]}, "maxItems": 2}
    assert set(schema["required"]) == {"answer", "sources", "clarify"}
    assert body["cache_prompt"] is False and body["seed"] == 7 and body["max_tokens"] == 64
    apart = xllamacpp.request_body(it, 64, 0.0, 7, system_in_user=False)["messages"]
    assert [m["role"] for m in apart] == ["system", "user"]


def test_reading_a_reply_an_error_object_and_a_reply_without_an_answer():
    ok = {"choices": [{"index": 0, "message": {"role": "assistant", "content": '{"answer": "45 days"}'}}],
          "usage": {"prompt_tokens": 360, "completion_tokens": 12}}
    g = xllamacpp.reading(ok, 0.5)
    assert (g.raw, g.error, g.tokens_in, g.tokens_out, g.seconds) == ('{"answer": "45 days"}', None, 360, 12, 0.5)
    # what the server answers for a prompt over n_ctx (its shape, copied from a real reply)
    over = {"error": {"code": 400, "message": "request (5024 tokens) exceeds the available context size "
                      "(2048 tokens), try increasing it", "type": "exceed_context_size_error"}}
    g = xllamacpp.reading(over, 0.1)
    assert g.raw == "" and g.error.startswith("exceed_context_size_error: request (5024 tokens)")
    assert "not a chat completion" in xllamacpp.reading("text", 0.1).error
    assert "without an answer" in xllamacpp.reading({"choices": []}, 0.1).error


def test_settings_threads_and_identity():
    from rag_bench.generation.llama_cpp import LlamaCppGenerator

    gen = xllamacpp.XLlamaCppGenerator()
    assert gen.n_threads == xllamacpp.default_threads() >= 1
    # threads change speed, not answers; the runtime is named, so its answers never pass for llama_cpp's
    assert xllamacpp.XLlamaCppGenerator(n_threads=1).identity == gen.identity
    assert gen.identity["generator"] == "xllamacpp" != LlamaCppGenerator().identity["generator"]
    assert xllamacpp.XLlamaCppGenerator(max_tokens=64).identity != gen.identity
    # the grammar's whitespace changed the answers (docs/generators.md): it keys the cache too
    assert gen.identity["grammar"] == xllamacpp.GUIDANCE
    for bad in (0, -1, True, 1.5):
        with pytest.raises(ConfigError, match="generator.n_threads"):
            xllamacpp.XLlamaCppGenerator(n_threads=bad)


def test_a_missing_wheel_is_a_config_error_naming_the_fix(tmp_path, monkeypatch):
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    monkeypatch.setitem(sys.modules, "xllamacpp", None)  # import xllamacpp now raises ImportError
    xllamacpp._load.cache_clear()
    with pytest.raises(ConfigError, match=r"generator=xllamacpp needs the xllamacpp wheel -- fix: .*make model"):
        xllamacpp.XLlamaCppGenerator(model=str(gguf)).generate([item(1)])
    xllamacpp._load.cache_clear()


def test_the_config_group_builds_the_generator():
    from rag_bench.runner.config import build
    from tests.conftest import compose_config

    gen = build(compose_config(["generator=xllamacpp"]).generator, "generator")
    assert isinstance(gen, xllamacpp.XLlamaCppGenerator)
    assert gen.model == "gemma3-270m" and gen.chat_format == "gemma" and gen.n_ctx == 4096
