"""What the model-written transforms share: a prompt read from ``prompts/<name>.txt``, one call per
question through the cell's generator -- the generator stage's own client, generation cache,
retries, budget (:mod:`rag_bench.budget`), prices and ``--plan`` count -- and a reply parsed
under the answer contract (``{"answer": ..., "sources": [], "clarify": ""}``: the generators
decode to that schema), its ``answer`` the transform's text. A failed call or a reply that does
not parse falls back to the question, with the reason (:func:`rag_bench.query.base.fallback`).

A transform needs a model: with the extractive stand-in or ``generator=none`` the cell is refused
before anything runs (:func:`needs_model`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from rag_bench.domain import Question
from rag_bench.errors import ComponentError, ConfigError
from rag_bench.generation.answer import parse_answer
from rag_bench.generation.base import Generation, GenerationInput, checked_traits, generate_cached, generator_identity
from rag_bench.generation.prompt import Prompt
from rag_bench.query.base import MAX_QUERIES, MAX_QUERY_CHARS, Transformed, clip, conversation

PROMPTS = Path(__file__).with_name("prompts")
# No placeholder to fill in: a small model copied "<your text>" into its reply (as it copied the
# answer prompt's "<question>", rag_bench.generation.prompt).
REPLY = 'Reply with JSON only: your text in "answer", "sources" an empty list, "clarify" an empty string.'
_BULLET = re.compile(r"^\s*(?:(?:[-*•]|\(?\d{1,2}[.):])\s+)+")


# Safe: the key is a transform's name and the value the text of a prompt file shipped in the
# package (read-only, a handful of names): nothing a run or a user changes.
@lru_cache(maxsize=16)
def instructions(name: str) -> str:
    """The instructions of transform ``name`` (``prompts/<name>.txt``), as written."""
    return (PROMPTS / f"{name}.txt").read_text(encoding="utf-8").strip()


def needs_model(query_name: str, generator: Any) -> None:
    """Refuse a model-written transform without a model: the null generator or a stand-in."""
    from rag_bench.components import is_null

    if is_null(generator) or checked_traits(generator).stand_in:
        what = "no generator (generator=none)" if is_null(generator) else \
            f"the {type(generator).__name__} stand-in, which writes no text"
        raise ConfigError(f"query={query_name} is written by a model, and this cell has {what} -- fix: "
                          "generator=xllamacpp (the packaged gemma3-270m) or generator=openai "
                          "(generator.base_url=...), or query=none / query=history (no model)")


def lines(text: str, limit: int) -> list[str]:
    """The distinct non-empty lines of ``text``, list bullets and numbers removed, at most ``limit``.

    >>> lines("1. a b\\n2. - c\\n\\n a b\\n3.5 GB", 5)
    ['a b', 'c', '3.5 GB']
    """
    out: list[str] = []
    for line in text.splitlines():
        line = clip(_BULLET.sub("", line))
        if line and line not in out:
            out.append(line)
    return out[:limit]


class LlmTransform:
    """A transform written by the cell's generator (``generator``, injected). Subclasses set
    ``name`` (the prompt file, the option) and :meth:`queries` (the texts searched, from the
    model's text; empty: unusable, the question is searched instead)."""

    name = ""

    def __init__(self, generator: Any = None, history_turns: int = 6, **params: Any) -> None:
        if isinstance(history_turns, bool) or not isinstance(history_turns, int) or history_turns < 0:
            raise ConfigError(f"query.history_turns must be an integer >= 0, got {history_turns!r} -- fix: "
                              "query.history_turns=6")
        needs_model(self.name, generator)
        self.generator, self.history_turns, self.params = generator, history_turns, params
        text = instructions(self.name)
        self.identity: dict[str, Any] = {
            "query": self.name, "history_turns": history_turns, **params,
            "prompt": hashlib.sha256(text.encode()).hexdigest()[:16], "generator": generator_identity(generator)}

    def prompt(self, q: Question) -> Prompt:
        """The instructions (system) and the conversation and question (user)."""
        parts = []
        talk = conversation(q, self.history_turns)
        if talk:
            parts.append(f"Conversation so far:\n{talk}")
        parts.append(f"Question: {q.question.strip()}")
        parts.append(REPLY)
        return Prompt(instructions(self.name).format(**self.params), "\n\n".join(parts), 0)

    def inputs(self, questions: Sequence[Question]) -> list[GenerationInput]:
        """What the model is sent, one item per question: :meth:`transform`'s calls, and what
        ``--plan`` counts."""
        return [GenerationInput(q.question, (), self.prompt(q)) for q in questions]

    def queries(self, q: Question, text: str) -> list[str]:
        """The texts searched for ``q`` from the model's ``text``."""
        raise NotImplementedError

    def transform(self, questions: Sequence[Question]) -> list[Transformed]:
        """One model call per question (served from the cache when the same prompt was asked
        before); each reply parsed, or the question searched instead with the reason."""
        items = self.inputs(questions)
        gens = generate_cached(self.generator, items, check=_checked) if items else []
        return [self._one(q, g) for q, g in zip(questions, gens)]

    def _one(self, q: Question, g: Generation) -> Transformed:
        seconds = float(g.original_seconds) if g.cached and g.original_seconds is not None else float(g.seconds)
        spent = Transformed((q.question,), g.raw, None, 1, seconds, int(g.tokens_in or 0), int(g.tokens_out or 0),
                            g.cached)
        if g.error:
            return dataclasses.replace(spent, fallback=f"the model call failed: {g.error[:200]}")
        answer = parse_answer(g.raw, 0)
        if answer.parse_error:
            return dataclasses.replace(spent, fallback=f"the reply does not parse: {answer.parse_error[:200]}")
        text = answer.text.strip()
        got = [clip(x, MAX_QUERY_CHARS) for x in self.queries(q, text)] if text and not answer.refused else []
        got = list(dict.fromkeys(x for x in got if x))[:MAX_QUERIES]
        if not got:
            return dataclasses.replace(spent, output=answer.text, fallback="the reply holds no usable text")
        return dataclasses.replace(spent, queries=tuple(got), output=answer.text)


def count_param(key: str, value: object, default: int) -> int:
    """``value`` of ``query.<key>``, checked: how many of the model's texts a transform keeps, an
    integer in [1, MAX_QUERIES)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value < MAX_QUERIES:
        raise ConfigError(f"query.{key} must be an integer in [1, {MAX_QUERIES - 1}], got {value!r} -- "
                          f"fix: query.{key}={default}")
    return value


class FusedTransform(LlmTransform):
    """A transform whose texts are searched beside the question (``with_question``), the rankings
    fused by reciprocal rank (:func:`rag_bench.retrieval.hybrid.rrf`). Subclasses set
    :meth:`written`.

    Parameters
    ----------
    generator:
        The cell's generator (injected).
    history_turns:
        Turns of the conversation shown to the model.
    with_question:
        Search the question too (True: fused with the model's texts), or the model's texts alone.
    """

    def __init__(self, generator: Any = None, history_turns: int = 6, with_question: bool = True,
                 **params: Any) -> None:
        super().__init__(generator, history_turns, **params)
        self.with_question = bool(with_question)
        self.identity["with_question"] = self.with_question

    def written(self, text: str) -> list[str]:
        """The texts searched from the model's ``text``."""
        raise NotImplementedError

    def queries(self, q: Question, text: str) -> list[str]:
        """The question (when ``with_question``) and :meth:`written`'s texts."""
        return ([q.question] if self.with_question else []) + self.written(text)


def _checked(out: Any, count: int) -> list[Generation]:
    """The generator's reply for the transform's prompts: one Generation per prompt."""
    if not isinstance(out, list) or len(out) != count or not all(
            isinstance(g, Generation) and isinstance(g.raw, str) for g in out):
        got = f"{len(out)} items" if isinstance(out, list) else type(out).__name__
        raise ComponentError(f"generator returned {got} for {count} query-transform prompts; nothing was written -- "
                             "fix: generate() returns one rag_bench.generation.base.Generation per input")
    return out
