"""What the dataset loader can read: a draft whose fields (a follow-up's ``history``) this version
of the loader does not read would make the kept set invalid, so it is dropped and said so."""

from __future__ import annotations

from collections.abc import Sequence

from rag_bench.drafting.filters.base import FilterInput
from rag_bench.drafting.records import Draft, Verdict


class FieldsFilter:
    """Drops a follow-up draft when questions.jsonl cannot carry its history."""

    name = "fields"

    def check(self, drafts: Sequence[Draft], ctx: FilterInput) -> list[Verdict | None]:
        """None for drafts without history."""
        out: list[Verdict | None] = []
        for d in drafts:
            if not d.history:
                out.append(None)
            elif "history" in ctx.loader_fields:
                out.append(Verdict(self.name, True, "the loader reads history"))
            else:
                out.append(Verdict(self.name, False, "this rag_bench's questions.jsonl loader does not read "
                                   "`history` yet: a follow-up cannot be written"))
        return out
