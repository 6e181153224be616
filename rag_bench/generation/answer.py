"""Parse a generator's raw output into an :class:`Answer`, validating citations in code."""

from __future__ import annotations

import json
import re
from functools import lru_cache

from rag_bench.domain import Answer
from rag_bench.generation.prompt import REFUSAL

_CITE = re.compile(r"\[(\d+)\]")
_SURROGATE = re.compile("[\ud800-\udfff]")  # JSON's lone "\ud83d" escape: no character, not UTF-8


def is_refusal(text: str) -> bool:
    """The fixed refusal sentence (case and surrounding punctuation/space ignored), or nothing."""
    norm = re.sub(r"[^a-z ]", "", text.lower()).strip()
    return norm == re.sub(r"[^a-z ]", "", REFUSAL.lower()).strip()


def parse_answer(raw: str, n_passages: int) -> Answer:
    """Apply the answer contract to ``raw``.

    Output must be a JSON object with a string ``answer`` and an integer list ``sources``, and
    optionally a string ``clarify``: a non-blank one is a question asked back
    (:attr:`Answer.clarification`, kept as given), and such an answer is no refusal; absent,
    blank or the refusal sentence, the answer does not ask. The answer text is kept exactly as
    given (no whitespace stripped: an application's answer is hashed for labels.jsonl and shown
    as it was); blank or the refusal sentence is a refusal. Citations are the union of
    ``sources`` and ``[n]`` markers in the answer; numbers outside ``1..n_passages`` are dropped
    and counted in ``invalid_citations``. Anything else is recorded as a parse error with an
    empty answer — never repaired. Answers are frozen: one output
    met again (a cached generation in another cell) is parsed once.
    """
    return _parse_cached(raw, n_passages) if isinstance(raw, str) else _parse(raw, n_passages)


def _parse(raw: str, n_passages: int) -> Answer:
    try:
        obj = json.loads(raw)
    except (json.JSONDecodeError, TypeError) as exc:
        return Answer("", parse_error=f"not JSON: {exc}", raw=str(raw))
    if not isinstance(obj, dict) or not isinstance(obj.get("answer"), str):
        return Answer("", parse_error="JSON lacks a string 'answer'", raw=raw)
    if _SURROGATE.search(obj["answer"]):
        return Answer("", parse_error="'answer' is not text: it holds a lone UTF-16 surrogate escape (\\ud800-\\udfff)",
                      raw=raw)
    sources = obj.get("sources", [])
    if not isinstance(sources, list) or not all(isinstance(s, int) and not isinstance(s, bool) for s in sources):
        return Answer("", parse_error="'sources' is not a list of integers", raw=raw)
    clarify = obj.get("clarify")
    if clarify is not None and not isinstance(clarify, str):
        return Answer("", parse_error=f"'clarify' is not a string (got {type(clarify).__name__})", raw=raw)
    if clarify is not None and _SURROGATE.search(clarify):
        return Answer("", parse_error="'clarify' is not text: it holds a lone UTF-16 surrogate escape (\\ud800-\\udfff)",
                      raw=raw)
    text = obj["answer"]
    # The refusal sentence is no question back (a model that wrote it into both fields refused).
    asked = clarify if clarify is not None and clarify.strip() and not is_refusal(clarify) else None
    cited = list(dict.fromkeys([*sources, *(int(m) for m in _CITE.findall(text))]))
    valid = tuple(sorted(c for c in cited if 1 <= c <= n_passages))
    refused = asked is None and (is_refusal(text) or not text.strip())
    return Answer(text, valid if not refused else (), len(cited) - len(valid), refused, raw=raw, clarification=asked)


# Pure in (raw output, passage count): a cached answer parsed again by each cell that reuses it.
_parse_cached = lru_cache(maxsize=4096)(_parse)
