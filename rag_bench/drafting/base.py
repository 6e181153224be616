"""The drafter protocol: slots in, drafts out (same order); a drafter that calls a model may stop
part-way (:class:`DraftingFailed`) with the drafts it finished."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from rag_bench.drafting.records import Draft, Quote, Slot

WH = {"year": "Which year", "century": "Which century", "number": "What number", "name": "Which name",
      "term": "What"}


class Drafter(Protocol):
    """Writes a question for each slot. ``identity`` names everything that changes the drafts."""

    identity: dict[str, Any]

    def draft(self, slots: Sequence[Slot]) -> list[Draft]:
        """One draft per slot, in order; raises :class:`DraftingFailed` with those finished."""
        ...


class DraftingFailed(Exception):  # noqa: N818 (a stop with partial results, handled by the run)
    """A model call failed after its retries: ``done`` holds the drafts finished before it."""

    def __init__(self, message: str, done: list[Draft]) -> None:
        super().__init__(message)
        self.done = done


@dataclass(frozen=True)
class Cloze:
    """A sentence with its answer blanked: the words either side of the blank (at most ``window``)."""

    left: str
    right: str

    @property
    def text(self) -> str:
        """``… left ___ right …``."""
        return f"{self.left} ___ {self.right}".strip()


def cloze(sentence: str, answer: str, window: int = 10) -> Cloze | None:
    """The blanked sentence, or None when ``answer`` is not in it."""
    at = sentence.find(answer)
    if at < 0:
        return None
    left = sentence[:at].split()[-window:]
    right = sentence[at + len(answer):].rstrip(" .").split()[:window]
    return Cloze(" ".join(left), " ".join(right))


def draft_id(drafter: dict[str, Any], slot: Slot) -> str:
    """A draft's id: its slot's and its drafter's (another drafter or model drafts it anew)."""
    import hashlib
    import json

    return "d" + hashlib.sha256((slot.slot_id + json.dumps(drafter, sort_keys=True)).encode()).hexdigest()[:11]


def which(quote: Quote, entity: str) -> str:
    """What tells one sentence's thing from another's (a clarify draft's fact): another name in it,
    else its section."""
    from rag_bench.drafting.slots import names_in

    other = [n for n in names_in(quote.text) if n != entity and entity not in n]
    return other[0] if other else (quote.section or quote.doc_id)
