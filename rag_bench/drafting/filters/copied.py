"""The answer is not written in the question (a blank that still shows its answer asks nothing)."""

from __future__ import annotations

from collections.abc import Sequence

from rag_bench.drafting.filters.base import FilterInput
from rag_bench.drafting.records import Draft, Verdict
from rag_bench.text.normalize import contains


class CopiedFilter:
    """Drops a draft whose question contains an answer (each part of a two-part answer)."""

    name = "copied"

    def check(self, drafts: Sequence[Draft], ctx: FilterInput) -> list[Verdict | None]:
        """None for drafts without an answer (unanswerable, clarify)."""
        out: list[Verdict | None] = []
        for d in drafts:
            if not d.answer or d.kind == "clarify":
                out.append(None)
                continue
            parts = [p.strip() for p in d.answer.split(";") if p.strip()]
            shown = [p for p in parts if contains(d.question, p)]
            out.append(Verdict(self.name, not shown, f"the question contains its answer {shown[0]!r}" if shown
                               else "answer not in the question"))
        return out
