"""Any OpenAI-compatible chat endpoint (OpenAI, vLLM, Ollama, llama.cpp server).

Plain HTTP (:mod:`rag_bench.http`) with a deadline per call, bounded retries with exponential
backoff on connection errors, timeouts, a reply cut short, 429 and 5xx, and a concurrency limit. A
call that still fails is recorded with its reason (the key redacted); it is never dropped
silently. An endpoint that redirects elsewhere, or answers something that is not a chat
completion (no ``choices[0].message.content`` string, token counts that are not counts), stops
the cell with an :class:`~rag_bench.errors.EndpointError` naming it (exit 2; nothing of the reply
cached): that is the endpoint, not one question.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from tqdm import tqdm

from rag_bench.errors import ConfigError, EndpointError
from rag_bench.generation.base import Generation, GenerationInput
from rag_bench.generation.prompt import ANSWER_SCHEMA
from rag_bench.http import check_settings, check_url, is_json_int, post_json


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
        Call behaviour (``timeout_s`` bounds a whole request, reply included).
    """

    cacheable = True

    def __init__(self, base_url: str | None = None, model: str = "local", api_key_env: str = "OPENAI_API_KEY",
                 response_format: str = "json_object", timeout_s: float = 60.0, max_retries: int = 3,
                 backoff_s: float = 1.0, concurrency: int = 2, temperature: float = 0.0, max_tokens: int = 256,
                 seed: int = 0) -> None:
        url = check_url("generator", base_url)
        if response_format not in ("json_schema", "json_object", "none"):
            raise ConfigError(f"generator.response_format must be json_schema, json_object or none, got "
                              f"{response_format!r}")
        if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
            raise ConfigError(f"generator.concurrency must be an integer >= 1, got {concurrency!r}")
        timeout_s, max_retries, backoff_s = check_settings("generator", timeout_s=timeout_s, max_retries=max_retries,
                                                           backoff_s=backoff_s)
        self.url = url.rstrip("/") + "/chat/completions"
        self.model, self.api_key_env, self.response_format = model, api_key_env, response_format
        self.timeout_s, self.max_retries, self.backoff_s = timeout_s, max_retries, backoff_s
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
        if reply.fatal:
            raise self._error(reply.reason, reply.fix)
        if reply.body is None:
            return Generation("", reply.reason, seconds=time.perf_counter() - t0, attempts=reply.attempts)
        text, tokens_in, tokens_out = self._parse(reply.body)
        return Generation(text, None, tokens_in, tokens_out, time.perf_counter() - t0, attempts=reply.attempts)

    def _error(self, what: str, fix: str) -> EndpointError:
        return EndpointError(f"generator endpoint {self.url} (model {self.model!r}): {what}; nothing was written "
                             f"-- fix: {fix}")

    def _parse(self, payload: bytes) -> tuple[str, int, int]:
        """The text and token counts of a chat completion: ``choices[0].message.content`` a string
        (null: empty), ``usage``'s ``prompt_tokens``/``completion_tokens`` counts when given."""
        try:
            data = json.loads(payload)
            content = data["choices"][0]["message"]["content"]
            if content is not None and not isinstance(content, str):
                raise TypeError(f"content is a {type(content).__name__}, not a string")
            usage = data.get("usage") or {}
            if not isinstance(usage, dict):
                raise TypeError("usage is not an object")
        except (KeyError, IndexError, ValueError, TypeError, AttributeError) as exc:
            raise self._error(f"the response is not a chat completion ({type(exc).__name__}: {str(exc)[:120]}; "
                              f"starts {payload[:80]!r})", "point generator.base_url at an OpenAI-compatible /v1 "
                              "(…/v1/chat/completions)") from None
        counts = [usage.get(name) for name in ("prompt_tokens", "completion_tokens")]
        wrong = [f"{name}={v!r}" for name, v in zip(("prompt_tokens", "completion_tokens"), counts)
                 if v is not None and not (is_json_int(v) and v >= 0)]
        if wrong:
            raise self._error(f"usage holds token counts that are not counts ({', '.join(wrong)})",
                              "check the endpoint")
        return content or "", counts[0] or 0, counts[1] or 0

    def generate(self, items: Sequence[GenerationInput]) -> list[Generation]:
        """Calls in parallel up to ``concurrency``; results in input order."""
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            return list(tqdm(pool.map(self._call, items), total=len(items), desc="generate", unit="q", disable=None,
                             leave=False))
