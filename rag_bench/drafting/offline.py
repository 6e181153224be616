"""The drafter that needs no model (the offline default): every question is a template filled from
its slot's sentence -- honest templates, not paraphrases.

- ``factoid``: ``What is X?`` for a definition (``X is a ...``), else the sentence cut to
  ``window`` words either side of the answer, blanked: ``Which year completes: "… ___ …"?``;
- ``multi_hop``: two such blanks, one per document, in one question; the answer is both;
- ``unanswerable``: the blank with the sentence's other year changed (the corpus gives no answer
  for that year), or ``What was the population of <name>?``-style questions about an attribute
  (slots.ATTRIBUTES) the corpus does not hold;
- ``clarify``: ``Which year is given for <name>?`` where two sections give two;
- ``follow_up``: the history is a question about a name and the first sentence as the answer; the
  question is the second sentence's blank with the name as ``they``.

Questions that reuse the sentence's words are easy for lexical retrieval: a set drafted here
measures retrieval on near-verbatim questions (docs/drafting.md, limits).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rag_bench.domain import Turn
from rag_bench.drafting.base import WH, cloze, draft_id, which
from rag_bench.drafting.records import Draft, Slot
from rag_bench.drafting.slots import ATTRIBUTES


class TemplateDrafter:
    """Parameters
    ----------
    window:
        Words of the sentence kept either side of the blank (fewer: harder to find by its words).
    """

    def __init__(self, window: int = 10) -> None:
        if isinstance(window, bool) or not isinstance(window, int) or window < 2:
            from rag_bench.errors import ConfigError

            raise ConfigError(f"drafter.window must be an integer >= 2, got {window!r} -- fix: drafter.window=10")
        self.window = window
        self.identity: dict[str, Any] = {"drafter": "templates", "version": 1, "window": window}

    def draft(self, slots: Sequence[Slot]) -> list[Draft]:
        """A template draft per slot (a slot whose sentence cannot be blanked gets an empty question,
        which the length filter drops with its reason)."""
        return [self._one(s) for s in slots]

    def _blank(self, sentence: str, answer: str, kind: str) -> str:
        c = cloze(sentence, answer, self.window)
        if c is None:
            return ""
        if kind == "term" and not c.left.strip():
            return ""
        return f'{WH[kind]} completes this: "{c.text}"?'

    def _one(self, slot: Slot) -> Draft:
        did = draft_id(self.identity, slot)
        q0 = slot.quotes[0]

        def made(question: str, answer: str, how: str, **kw: Any) -> Draft:
            return Draft(did, slot.kind, question, answer, kw.pop("evidence", slot.quotes), "templates", how, **kw)

        if slot.kind == "factoid":
            term = _defined(q0.text, slot.answers[0]) if slot.kinds[0] == "term" else ""
            if term:
                return made(f"What {'are' if term.endswith('s') else 'is'} {term}?", slot.answers[0], "definition")
            return made(self._blank(q0.text, slot.answers[0], slot.kinds[0]), slot.answers[0], f"cloze:{slot.kinds[0]}")
        if slot.kind == "multi_hop":
            a = cloze(q0.text, slot.answers[0], self.window)
            b = cloze(slot.quotes[1].text, slot.answers[1], self.window)
            if a is None or b is None:
                return made("", "", "two-blanks")
            question = (f'{WH[slot.kinds[0]]} completes "{a.text}", and {WH[slot.kinds[1]].lower()} completes '
                        f'"{b.text}"?')
            return made(question, f"{slot.answers[0]}; {slot.answers[1]}", "two-blanks")
        if slot.kind == "unanswerable":
            if slot.attribute:
                template = dict(ATTRIBUTES)[slot.attribute]
                return made(template.format(e=slot.entity), "", f"absent-attribute:{slot.attribute}", evidence=(),
                            near=slot.quotes)
            old, new = slot.swap
            changed = q0.text.replace(old, new)
            return made(self._blank(changed, slot.answers[0], slot.kinds[0]), "", f"changed-number:{old}->{new}",
                        evidence=(), near=slot.quotes)
        if slot.kind == "clarify":
            return made(f"Which year is given for {slot.entity}?", f"{slot.answers[0]} or {slot.answers[1]}",
                        "ambiguous-year", clarify_facts=tuple(which(q, slot.entity) for q in slot.quotes))
        # follow_up: the first quote is asked about, the second is the conversation so far
        asked, before = slot.quotes
        standalone = self._blank(asked.text, slot.answers[0], slot.kinds[0])
        question = _pronoun(standalone, slot.entity)
        if question == standalone:
            question = ""  # the name is not in the window: no follow-up to write
        history = (Turn("user", f"What does the text say about {slot.entity}?"), Turn("assistant", before.text))
        return made(question, slot.answers[0], "pronoun", evidence=(asked,), history=history, standalone=standalone)


def _defined(sentence: str, answer: str) -> str:
    """The term a definition sentence defines (its words before ``is/are/was/were``)."""
    from rag_bench.drafting.slots import DEFINITION

    m = DEFINITION.search(sentence)
    return m.group("term") if m and m.group("answer").strip() == answer else ""


def _pronoun(text: str, name: str) -> str:
    """``text`` with ``name`` (and ``name's``) as ``they``/``their``."""
    import re

    text = re.sub(rf"\b{re.escape(name)}'s\b", "their", text)
    return re.sub(rf"\b{re.escape(name)}\b(?![-\w])", "they", text)
