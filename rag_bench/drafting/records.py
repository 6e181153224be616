"""The records of drafting: a slot (what to draft, chosen from the parse), a draft (what a drafter
wrote for it) and a filter's verdict on a draft. All frozen; a draft is a JSON line of drafts.jsonl."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rag_bench.domain import Turn

TYPES = ("factoid", "multi_hop", "unanswerable", "clarify", "follow_up")


@dataclass(frozen=True)
class Quote:
    """A sentence of a document's parse: characters ``[start, end)`` of ``doc_id``'s text."""

    doc_id: str
    text: str
    start: int
    end: int
    section: str = ""


@dataclass(frozen=True)
class Slot:
    """What one draft is about, chosen by the planner from the parse, the same for every drafter.

    ``quotes``: the evidence sentences (two for ``multi_hop`` and ``clarify``; for ``unanswerable``
    the sentence the near miss starts from, which is no evidence). ``answers``: the span of each
    quote that answers (a blank of the template). ``kinds``: what each answer is (``year``,
    ``century``, ``number``, ``name``, ``term``). ``entity``: the name a near miss, a follow-up or a
    clarify question is about; ``attribute``: what a near miss asks of it (not in the corpus);
    ``swap``: for a near miss built by changing a number, the number written instead.
    """

    slot_id: str
    kind: str
    quotes: tuple[Quote, ...]
    answers: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()
    entity: str = ""
    attribute: str = ""
    swap: tuple[str, str] = ("", "")


@dataclass(frozen=True)
class Draft:
    """A drafted question for a slot. ``answer`` is empty for ``unanswerable``; ``evidence`` holds
    the quotes that support the answer (none for ``unanswerable``); ``history`` and ``standalone``
    for ``follow_up``; ``clarify_facts`` for ``clarify``; ``how`` says how it was written (template
    name, or the model)."""

    draft_id: str
    kind: str
    question: str
    answer: str
    evidence: tuple[Quote, ...]
    drafter: str
    how: str
    near: tuple[Quote, ...] = ()
    history: tuple[Turn, ...] = ()
    standalone: str | None = None
    clarify_facts: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The draft as drafts.jsonl holds it (without verdicts)."""
        out: dict[str, Any] = {"id": self.draft_id, "type": self.kind, "question": self.question,
                               "answer": self.answer, "evidence": [_quote(q) for q in self.evidence],
                               "drafter": self.drafter, "how": self.how}
        if self.near:
            out["near"] = [_quote(q) for q in self.near]
        if self.history:
            out["history"] = [{"role": t.role, "content": t.content} for t in self.history]
        if self.standalone is not None:
            out["standalone"] = self.standalone
        if self.clarify_facts:
            out["clarify_facts"] = list(self.clarify_facts)
        return out

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Draft:
        """A draft read back from drafts.jsonl (KeyError/TypeError on a line that is not one)."""
        return cls(draft_id=str(obj["id"]), kind=str(obj["type"]), question=str(obj["question"]),
                   answer=str(obj["answer"]), evidence=tuple(Quote(**q) for q in obj["evidence"]),
                   drafter=str(obj["drafter"]), how=str(obj["how"]),
                   near=tuple(Quote(**q) for q in obj.get("near", ())),
                   history=tuple(Turn(str(t["role"]), str(t["content"])) for t in obj.get("history", ())),
                   standalone=obj.get("standalone"), clarify_facts=tuple(obj.get("clarify_facts", ())))


def _quote(q: Quote) -> dict[str, Any]:
    return {"doc_id": q.doc_id, "text": q.text, "start": q.start, "end": q.end, "section": q.section}


@dataclass(frozen=True)
class Verdict:
    """One filter's verdict on one draft: kept (``ok``) or dropped, and why (always said)."""

    name: str
    ok: bool
    why: str = ""


@dataclass(frozen=True)
class Settings:
    """What to draft: ``n`` drafts (every one filtered: at most ``n`` are kept), ``shares`` of each
    type, the ``seed`` of every choice, at most ``per_document`` drafts whose first quote is in one
    document (None: no quota)."""

    n: int
    shares: tuple[tuple[str, float], ...]
    seed: int = 0
    per_document: int | None = None
