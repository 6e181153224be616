"""Generator protocol, its inputs and outputs, and the persistent generation cache."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from rag_bench import memo
from rag_bench.generation.prompt import Prompt
from rag_bench.records import Passage
from rag_bench.storage import BlobStore, default_cache_dir


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


def cache_key(identity: dict[str, Any], prompt: Prompt) -> str:
    """Key of one prompt for one generator configuration."""
    blob = json.dumps(identity, sort_keys=True, default=str) + "\0" + prompt.key
    return hashlib.sha256(blob.encode()).hexdigest()


def generate_cached(generator: Any, items: Sequence[GenerationInput], cache_dir: str | Path | None = None,
                    use_cache: bool = True) -> list[Generation]:
    """Serve what the cache has, generate the rest once per distinct prompt, store successes."""
    if not getattr(generator, "cacheable", True) or not use_cache or not memo.sharing_enabled():
        return list(generator.generate(items))
    cache = GenerationCache(Path(cache_dir or default_cache_dir()) / "generations.sqlite")
    keys = [cache_key(generator.identity, it.prompt) for it in items]
    found = cache.get_bytes(keys)
    todo: dict[str, int] = {}
    for i, k in enumerate(keys):
        if k not in found:
            todo.setdefault(k, i)
    fresh: dict[str, Generation] = {}
    if todo:
        outs = generator.generate([items[i] for i in todo.values()])
        fresh = dict(zip(todo, outs))
        cache.put_bytes((k, json.dumps({"raw": g.raw, "tokens_in": g.tokens_in, "tokens_out": g.tokens_out,
                                        "seconds": g.seconds}).encode()) for k, g in fresh.items() if g.error is None)
    out = []
    for k in keys:
        if k in fresh:
            out.append(fresh[k])
        else:
            d = json.loads(found[k])
            out.append(Generation(d["raw"], None, d["tokens_in"], d["tokens_out"], 0.0, cached=True, attempts=0))
    return out

