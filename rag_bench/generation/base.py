"""Generator protocol, its inputs and outputs, and the persistent generation cache."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from rag_bench import memo
from rag_bench.generation.prompt import Prompt
from rag_bench.records import Passage
from rag_bench.storage import BlobStore, default_cache_dir, get_or_compute


@dataclass(frozen=True)
class GenerationInput:
    """What a generator sees for one question."""

    question: str
    passages: tuple[Passage, ...]
    prompt: Prompt


@dataclass(frozen=True)
class Generation:
    """Raw output of one call (``error`` set when the call failed after its retries)."""

    raw: str
    error: str | None = None
    tokens_in: int = 0
    tokens_out: int = 0
    seconds: float = 0.0
    cached: bool = False
    attempts: int = 1


class Generator(Protocol):
    """Batch in, batch out, same order. ``identity`` names everything that changes the output."""

    identity: dict[str, Any]
    cacheable: bool

    def generate(self, items: Sequence[GenerationInput]) -> list[Generation]:
        """One :class:`Generation` per input."""
        ...


class GenerationCache(BlobStore):
    """Successful generations by (generator identity, prompt): identical prompts across cells,
    sweeps and processes are generated once."""

    table = "generations"


def cache_key(identity: dict[str, Any] | str, prompt: Prompt) -> str:
    """Key of one prompt for one generator configuration (``identity`` as a dict, or already
    serialised by :func:`identity_text`)."""
    text = identity if isinstance(identity, str) else identity_text(identity)
    return hashlib.sha256((text + "\0" + prompt.key).encode()).hexdigest()


def identity_text(identity: dict[str, Any]) -> str:
    """The serialised generator identity that :func:`cache_key` hashes."""
    return json.dumps(identity, sort_keys=True, default=str)


def generate_cached(generator: Any, items: Sequence[GenerationInput], cache_dir: str | Path | None = None,
                    use_cache: bool = True) -> list[Generation]:
    """Serve what the cache has, generate the rest once per distinct prompt, store successes."""
    if not getattr(generator, "cacheable", True) or not use_cache or not memo.sharing_enabled():
        return list(generator.generate(items))
    cache = GenerationCache(Path(cache_dir or default_cache_dir()) / "generations.sqlite")
    identity = identity_text(generator.identity)
    keys = [cache_key(identity, it.prompt) for it in items]
    first = {k: i for i, k in reversed(list(enumerate(keys)))}  # each distinct prompt's first item

    def generate(todo: list[str]) -> Iterable[tuple[str, Generation]]:
        return zip(todo, generator.generate([items[first[k]] for k in todo]))

    got = get_or_compute(cache, keys, compute=generate, encode=_encode, decode=_decode,
                         keep=lambda g: g.error is None)
    return [got.values[k] for k in keys]


def _encode(g: Generation) -> bytes:
    return json.dumps({"raw": g.raw, "tokens_in": g.tokens_in, "tokens_out": g.tokens_out,
                       "seconds": g.seconds}).encode()


def _decode(data: bytes) -> Generation:
    d = json.loads(data)
    return Generation(d["raw"], None, d["tokens_in"], d["tokens_out"], 0.0, cached=True, attempts=0)
