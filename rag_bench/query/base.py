"""The query stage's protocol and its output contract.

A query transform turns each question (with its conversation, :attr:`Question.history`) into the
texts the retriever searches for: one (the question as is, a rewrite, a hypothetical passage) or
several (paraphrases, sub-questions), each retrieved and the rankings fused by reciprocal rank.
What it returns crosses a contract (:func:`check_transformed`, applied by the pipeline): per
question a :class:`Transformed`, or a plain list of strings -- between 1 and :data:`MAX_QUERIES`
non-empty strings of at most :data:`MAX_QUERY_CHARS` characters. A transform that fails on one
question (a model call that failed, a reply that does not parse) falls back to the question and
says why in :attr:`Transformed.fallback`: counted (``query/fallback_rate``), never silent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from rag_bench.domain import Question

MAX_QUERIES = 16  # texts one question may be searched with
MAX_QUERY_CHARS = 4000  # characters of one text searched (a HyDE passage included)


@dataclass(frozen=True)
class Transformed:
    """One question's transform: ``queries`` the texts searched (fused by RRF when more than one);
    ``output`` what the transform wrote, shown as it was (the rewritten question, the HyDE
    passage, the sub-questions one a line; empty for a transform that writes nothing);
    ``fallback`` why the question itself was searched instead (None: the transform's output was
    used); ``calls`` the model calls the question needs (0 for a transform without a model, the
    same whether the reply came from the cache or not); ``seconds`` what producing it took (a
    cached reply's original time); ``tokens_in``/``tokens_out`` its model tokens; ``cached``
    whether the reply came from the generation cache."""

    queries: tuple[str, ...]
    output: str = ""
    fallback: str | None = None
    calls: int = 0
    seconds: float = 0.0
    tokens_in: int = 0
    tokens_out: int = 0
    cached: bool = False


class QueryTransform(Protocol):
    """Batch in, batch out, same order: one :class:`Transformed` (or list of strings) per question.
    ``identity`` names everything that changes the output (the rankings' shared-work key)."""

    identity: dict[str, Any]

    def transform(self, questions: Sequence[Question]) -> list[Any]:
        """What each question is searched with."""
        ...


def as_is(q: Question) -> Transformed:
    """The question searched as it is."""
    return Transformed((q.question,))


def fallback(q: Question, reason: str, *, output: str = "", calls: int = 0, seconds: float = 0.0,
             tokens_in: int = 0, tokens_out: int = 0, cached: bool = False) -> Transformed:
    """The question searched as it is because the transform failed on it (``reason``, counted)."""
    return Transformed((q.question,), output, reason, calls, seconds, tokens_in, tokens_out, cached)


def clip(text: str, limit: int = MAX_QUERY_CHARS) -> str:
    """``text`` stripped and cut to ``limit`` characters (at a space when one is near).

    >>> clip("  one two three ", 8)
    'one two'
    """
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[:limit]
    space = cut.rfind(" ")
    return cut[:space] if space > limit // 2 else cut


def conversation(q: Question, turns: int, chars: int = 1000) -> str:
    """The last ``turns`` turns of ``q``'s history, one ``role: content`` line each (each cut to
    ``chars``), oldest first; empty for a single-turn question."""
    if turns <= 0 or not q.history:
        return ""
    return "\n".join(f"{t.role}: {clip(t.content, chars)}" for t in q.history[-turns:])
