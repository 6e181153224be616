"""The question word fits the answer: ``when``/``what year`` asks for a date (a digit or a century),
``how many``/``how much`` for a quantity, ``who`` for a name (a capitalised word, not a number). A
model that wrote "Who was the Lion-hearted?" for the answer ``1191`` asked for something else."""

from __future__ import annotations

import re
from collections.abc import Sequence

from rag_bench.drafting.filters.base import FilterInput
from rag_bench.drafting.records import Draft, Verdict

_NUMBER_WORDS = {"one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
                 "hundred", "thousand", "million", "dozen", "several", "many", "few"}


def wants(question: str) -> str:
    """What the question word asks for: ``date``, ``quantity``, ``name`` or ``""`` (any).

    >>> wants("When was the bridge opened?"), wants("How many men?"), wants("Who led them?"), wants("Why?")
    ('date', 'quantity', 'name', '')
    """
    q = question.strip().lower()
    if re.match(r"(when|what year|which year|in what year|in which year)\b", q):
        return "date"
    if re.match(r"how (many|much)\b", q):
        return "quantity"
    if re.match(r"(who|whom|whose)\b", q):
        return "name"
    return ""


def fits(asked: str, answer: str) -> bool:
    """Whether ``answer`` is the kind ``asked`` (:func:`wants`) asks for."""
    words = answer.split()
    if asked in ("date", "quantity"):
        return any(ch.isdigit() for ch in answer) or "century" in answer.lower() or \
            any(w.lower().strip(",.") in _NUMBER_WORDS for w in words)
    if asked == "name":
        return not re.fullmatch(r"[\d\s,.%-]+", answer) and any(w[:1].isupper() for w in words)
    return True


class WhFitFilter:
    """Drops a draft whose question word asks for another kind of answer than its answer."""

    name = "wh_fit"

    def check(self, drafts: Sequence[Draft], ctx: FilterInput) -> list[Verdict | None]:
        """None where the question word does not say (which, what, templates) or there is no one answer."""
        out: list[Verdict | None] = []
        for d in drafts:
            asked = wants(d.question)
            if not asked or not d.answer or d.kind in ("clarify", "multi_hop"):
                out.append(None)
                continue
            ok = fits(asked, d.answer)
            out.append(Verdict(self.name, ok, f"the question asks for a {asked}" + ("" if ok else
                               f", the answer {d.answer!r} is none")))
        return out
