"""Generator protocol, its inputs and outputs, and the persistent generation cache."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from rag_bench import budget, memo
from rag_bench.components import optional
from rag_bench.digests import module_digest
from rag_bench.domain import Passage
from rag_bench.generation.prompt import Prompt
from rag_bench.storage import BlobStore, default_cache_dir, get_or_compute

log = logging.getLogger(__name__)

# A UTF-16 surrogate is no character: JSON's "\ud83d" escape decodes to one (an endpoint that cut a
# reply between the two halves of an emoji), and UTF-8 cannot encode it, so records.parquet could
# not be written.
_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True)
class GenerationInput:
    """What a generator sees for one question."""

    question: str
    passages: tuple[Passage, ...]
    prompt: Prompt


@dataclass(frozen=True)
class Generation:
    """Raw output of one call (``error`` set when the call failed after its retries). A cached
    answer took no time in this run (``seconds`` 0); ``original_seconds`` is the time the generator
    took when it produced it (the price of a local model's answer: rag_bench.evaluation.prices)."""

    raw: str
    error: str | None = None
    tokens_in: int = 0
    tokens_out: int = 0
    seconds: float = 0.0
    cached: bool = False
    attempts: int = 1
    original_seconds: float | None = None


@dataclass(frozen=True)
class Traits:
    """What a generator declares of itself beyond its answers: ``stand_in`` (a deterministic
    stand-in for a model, such as the extractive generator: its answers must not decide which
    configuration is best) and ``refusal_setting`` (the config key that sets how readily it
    refuses, named by the warning when it refuses questions whose evidence it was handed) and
    ``can_clarify`` (whether it can ask a clarifying question back, the answer contract's
    ``clarify``: a model told by the prompt can, the extractive stand-in cannot -- questions that
    expect one are then wrong by construction, which the evaluation says once)."""

    stand_in: bool = False
    refusal_setting: str | None = None
    can_clarify: bool = True


class Generator(Protocol):
    """Batch in, batch out, same order. ``identity`` names everything that changes the output."""

    identity: dict[str, Any]
    cacheable: bool

    def generate(self, items: Sequence[GenerationInput]) -> list[Generation]:
        """One :class:`Generation` per input."""
        ...

    @optional
    def traits(self) -> Traits:
        """What the generator declares of itself; default: a model, with no refusal setting."""
        return Traits()


def checked_traits(generator: Any) -> Traits:
    """``generator``'s :meth:`Generator.traits`, checked: a plugin's reply that is not a
    :class:`Traits` of a bool and a config key is a ConfigError with the fix, never guessed."""
    from rag_bench.components import capability
    from rag_bench.errors import ConfigError

    got = capability(generator, Generator, "traits")()
    name = type(generator).__name__
    if not isinstance(got, Traits) or not isinstance(got.stand_in, bool) or not isinstance(got.can_clarify, bool) \
            or not (got.refusal_setting is None or (isinstance(got.refusal_setting, str) and got.refusal_setting.strip())):
        raise ConfigError(f"{name}.traits() returned {got!r} -- fix: return rag_bench.generation.base.Traits("
                          "stand_in=True|False, refusal_setting='generator.<key>' or None, can_clarify=True|False)")
    return got


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


def generator_identity(generator: Any) -> str:
    """What the generation cache keys ``generator``'s outputs by: its declared ``identity`` and,
    for a class outside rag_bench (a plugin), its qualified name and a digest of its source --
    two plugins that declare the same identity, or one plugin edited, never share answers."""
    text = identity_text(generator.identity)
    cls = type(generator)
    if not cls.__module__.startswith("rag_bench."):
        text += f"\0{cls.__module__}.{cls.__qualname__}@{module_digest(cls.__module__)}"
    return text


def generation_keys(generator: Any, items: Sequence[GenerationInput], use_cache: bool = True) -> list[str] | None:
    """The generation cache's key of each item for ``generator`` (what :func:`generate_cached`
    looks up and stores, and what ``--plan`` counts); None when its outputs are not cached (the
    generator is not cacheable, ``use_cache`` is off, or sharing is: every item is a call)."""
    if not getattr(generator, "cacheable", True) or not use_cache or not memo.sharing_enabled():
        return None
    identity = generator_identity(generator)
    return [cache_key(identity, it.prompt) for it in items]


def generate_cached(generator: Any, items: Sequence[GenerationInput], cache_dir: str | Path | None = None,
                    use_cache: bool = True,
                    check: Callable[[Any, int], list[Generation]] | None = None) -> list[Generation]:
    """Serve what the cache has, generate the rest once per distinct prompt, store successes.
    ``check(outputs, count)`` validates what the generator returned before anything is stored."""
    stand_in = checked_traits(generator).stand_in  # a stand-in (extractive) makes no LLM calls

    def call(batch: Sequence[GenerationInput]) -> list[Generation]:
        # search.max_llm_calls / budget_usd: all of them fit (their cost bounded), or none is made
        held = None if stand_in else budget.hold("generator", len(batch),
                                                 lambda: [request_bytes(generator, it) for it in batch],
                                                 _max_tokens(generator))
        raw = generator.generate(batch)
        got = [valid_unicode(g) for g in (check(raw, len(batch)) if check is not None else raw)]
        budget.charge(held, len(batch), sum(g.tokens_in or 0 for g in got), sum(g.tokens_out or 0 for g in got),
                      sum(g.seconds for g in got))
        return got

    keys = generation_keys(generator, items, use_cache)
    if keys is None:
        return call(items)
    cache = GenerationCache(Path(cache_dir or default_cache_dir()) / "generations.sqlite")
    first = {k: i for i, k in reversed(list(enumerate(keys)))}  # each distinct prompt's first item

    def generate(todo: list[str]) -> Iterable[tuple[str, Generation]]:
        return zip(todo, call([items[first[k]] for k in todo]))

    got = get_or_compute(cache, keys, compute=generate, encode=_encode, decode=_decode,
                         keep=lambda g: g.error is None)
    return [got.values[k] for k in keys]


def request_bytes(generator: Any, item: GenerationInput) -> int:
    """The bound of ``item``'s input tokens (rag_bench.budget.request_bytes): its request's messages
    and output schema as the generator sends them (an HTTP generator's ``_body``), else the prompt's
    messages."""
    body = getattr(generator, "_body", None)
    if callable(body):
        sent = body(item)
        return budget.request_bytes({k: sent[k] for k in ("messages", "response_format") if k in sent})
    return budget.request_bytes(item.prompt.messages())


def _max_tokens(generator: Any) -> int | None:
    got = getattr(generator, "max_tokens", None)
    return got if isinstance(got, int) and not isinstance(got, bool) and got > 0 else None


def valid_unicode(g: Generation) -> Generation:
    """``g`` with each UTF-16 surrogate in its text replaced by U+FFFD (as a UTF-8 decoder replaces
    a broken byte), so what is scored, cached and written is text; the same for a fresh generation
    and for one served from a cache entry stored before this check existed."""
    raw, n_raw = _SURROGATE.subn("\ufffd", g.raw) if isinstance(g.raw, str) else (g.raw, 0)
    error, n_error = _SURROGATE.subn("\ufffd", g.error) if isinstance(g.error, str) else (g.error, 0)
    if not n_raw + n_error:
        return g
    log.warning("a generation held %d UTF-16 surrogate(s), not text: replaced by U+FFFD", n_raw + n_error)
    return dataclasses.replace(g, raw=raw, error=error)


def _encode(g: Generation) -> bytes:
    return json.dumps({"raw": g.raw, "tokens_in": g.tokens_in, "tokens_out": g.tokens_out,
                       "seconds": g.seconds}).encode()


def _decode(data: bytes) -> Generation:
    d = json.loads(data)
    return valid_unicode(Generation(d["raw"], None, d["tokens_in"], d["tokens_out"], 0.0, cached=True, attempts=0,
                                    original_seconds=float(d.get("seconds") or 0.0)))
