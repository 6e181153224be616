"""Any OpenAI-compatible chat endpoint (OpenAI, vLLM, Ollama, llama.cpp server).

Plain HTTP (``urllib``) with a timeout per call, bounded retries with exponential backoff on
connection errors, timeouts, 429 and 5xx, and a concurrency limit. A call that still fails is
recorded with its reason; it is never dropped silently.
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from tqdm import tqdm

from rag_bench.errors import ConfigError
from rag_bench.generation.base import Generation, GenerationInput
from rag_bench.generation.prompt import ANSWER_SCHEMA

_RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504}


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

    def _body(self, item: GenerationInput) -> bytes:
        body: dict[str, Any] = {"model": self.model, "messages": item.prompt.messages(),
                                "temperature": self.temperature, "max_tokens": self.max_tokens, "seed": self.seed}
        if self.response_format == "json_schema":
            body["response_format"] = {"type": "json_schema",
                                       "json_schema": {"name": "answer", "schema": ANSWER_SCHEMA, "strict": True}}
        elif self.response_format == "json_object":
            body["response_format"] = {"type": "json_object", "schema": ANSWER_SCHEMA}
        return json.dumps(body).encode()

    def _call(self, item: GenerationInput) -> Generation:
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(self.api_key_env)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        t0 = time.perf_counter()
        reason = ""
        for attempt in range(1, self.max_retries + 2):
            try:
                req = urllib.request.Request(self.url, data=self._body(item), headers=headers, method="POST")
                with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
                    data = json.loads(resp.read())
                text = data["choices"][0]["message"]["content"] or ""
                usage = data.get("usage") or {}
                return Generation(text, None, int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0)),
                                  time.perf_counter() - t0, attempts=attempt)
            except urllib.error.HTTPError as exc:
                reason = f"HTTP {exc.code}: {exc.read()[:200].decode('utf-8', 'replace')}"
                if exc.code not in _RETRY_STATUS:
                    break
            except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as exc:
                reason = f"{type(exc).__name__}: {getattr(exc, 'reason', exc)}"
            except (KeyError, IndexError, ValueError) as exc:
                reason = f"malformed response: {exc}"
                break
            if attempt <= self.max_retries:
                time.sleep(self.backoff_s * 2 ** (attempt - 1))
        return Generation("", reason or "unknown error", seconds=time.perf_counter() - t0,
                          attempts=min(attempt, self.max_retries + 1))

    def generate(self, items: Sequence[GenerationInput]) -> list[Generation]:
        """Calls in parallel up to ``concurrency``; results in input order."""
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            return list(tqdm(pool.map(self._call, items), total=len(items), desc="generate", unit="q", disable=None,
                             leave=False))
