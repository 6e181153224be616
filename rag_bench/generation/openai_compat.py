"""Any OpenAI-compatible chat endpoint (OpenAI, vLLM, Ollama, llama.cpp server).

Plain HTTP (``urllib``) with a timeout per call, bounded retries with exponential backoff on
connection errors, timeouts, 429 and 5xx, and a concurrency limit. A call that still fails is
recorded with its reason; it is never dropped silently.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from tqdm import tqdm

from rag_bench.errors import ConfigError
from rag_bench.generation.base import Generation, GenerationInput
from rag_bench.generation.prompt import ANSWER_SCHEMA
from rag_bench.http import post_json


class OpenAICompatibleGenerator:
    """Parameters
    ----------
    base_url:
        e.g. ``http://127.0.0.1:8080/v1``.
    model:
        Model name the endpoint expects.
    api_key_env:
        Name of the environment variable holding the key (never the key itself in config).
    response_format:
        ``json_schema`` (OpenAI structured outputs), ``json_object`` (llama.cpp/Ollama style, with
        the schema attached) or ``none``.
    timeout_s, max_retries, backoff_s, concurrency, temperature, max_tokens, seed:
        Call behaviour.
    """

    cacheable = True

    def __init__(self, base_url: str | None = None, model: str = "local", api_key_env: str = "OPENAI_API_KEY",
                 response_format: str = "json_object", timeout_s: float = 60.0, max_retries: int = 3,
                 backoff_s: float = 1.0, concurrency: int = 2, temperature: float = 0.0, max_tokens: int = 256,
                 seed: int = 0) -> None:
        if not base_url:
            raise ConfigError("generator.base_url is not set -- fix: generator.base_url=http://HOST:PORT/v1")
        if response_format not in ("json_schema", "json_object", "none"):
            raise ConfigError(f"generator.response_format must be json_schema, json_object or none, got "
                              f"{response_format!r}")
        for name, v in (("max_retries", max_retries), ("concurrency", concurrency)):
            if isinstance(v, bool) or not isinstance(v, int) or v < (0 if name == "max_retries" else 1):
                raise ConfigError(f"generator.{name} must be a non-negative integer, got {v!r}")
        if not timeout_s > 0:
            raise ConfigError(f"generator.timeout_s must be > 0, got {timeout_s!r}")
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model, self.api_key_env, self.response_format = model, api_key_env, response_format
        self.timeout_s, self.max_retries, self.backoff_s = float(timeout_s), max_retries, float(backoff_s)
        self.concurrency, self.temperature, self.max_tokens, self.seed = concurrency, temperature, max_tokens, seed
        # The URL and model say which model answers; timeouts and keys do not change outputs.
        self.identity: dict[str, Any] = {"generator": "openai", "url": self.url, "model": model,
                                         "temperature": temperature, "max_tokens": max_tokens, "seed": seed,
                                         "response_format": response_format}

    def _body(self, item: GenerationInput) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "messages": item.prompt.messages(),
                                "temperature": self.temperature, "max_tokens": self.max_tokens, "seed": self.seed}
        if self.response_format == "json_schema":
            body["response_format"] = {"type": "json_schema",
                                       "json_schema": {"name": "answer", "schema": ANSWER_SCHEMA, "strict": True}}
        elif self.response_format == "json_object":
            body["response_format"] = {"type": "json_object", "schema": ANSWER_SCHEMA}
        return body

    def _call(self, item: GenerationInput) -> Generation:
        t0 = time.perf_counter()
        reply = post_json(self.url, self._body(item), timeout_s=self.timeout_s, max_retries=self.max_retries,
                          backoff_s=self.backoff_s, api_key_env=self.api_key_env)
        if reply.body is None:
            return Generation("", reply.reason, seconds=time.perf_counter() - t0, attempts=reply.attempts)
        try:
            data = json.loads(reply.body)
            text = data["choices"][0]["message"]["content"] or ""
            usage = data.get("usage") or {}
            return Generation(text, None, int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0)),
                              time.perf_counter() - t0, attempts=reply.attempts)
        except (KeyError, IndexError, ValueError, TypeError, AttributeError) as exc:
            return Generation("", f"malformed response: {exc}", seconds=time.perf_counter() - t0,
                              attempts=reply.attempts)

    def generate(self, items: Sequence[GenerationInput]) -> list[Generation]:
        """Calls in parallel up to ``concurrency``; results in input order."""
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            return list(tqdm(pool.map(self._call, items), total=len(items), desc="generate", unit="q", disable=None,
                             leave=False))
