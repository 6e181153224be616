"""Round trip (ARES-style): the passage a draft was written from ranks in the top k of a retriever
over the whole corpus (the project's chunker and BM25), for every quote of it. A question no
retriever can lead back to its passage is either ambiguous or about words the passage lacks."""

from __future__ import annotations

from collections.abc import Sequence

from rag_bench.drafting.filters.base import FilterInput
from rag_bench.drafting.records import Draft, Verdict


class RoundTripFilter:
    """Drops a draft whose source passage is not in the top ``k`` for its question (a follow-up is
    searched by its standalone form: the history is not the retriever's to read)."""

    name = "round_trip"

    def check(self, drafts: Sequence[Draft], ctx: FilterInput) -> list[Verdict | None]:
        """None for drafts without evidence."""
        k = ctx.thresholds.k
        todo = [i for i, d in enumerate(drafts) if d.evidence and d.question.strip()]
        found = ctx.index.search([drafts[i].standalone or drafts[i].question for i in todo], k)
        out: list[Verdict | None] = [None] * len(drafts)
        for i, top in zip(todo, found):
            missing = [q for q in drafts[i].evidence if not any(ctx.index.holds(c, q) for c in top)]
            ranks = [next((r + 1 for r, c in enumerate(top) if ctx.index.holds(c, q)), None) for q in drafts[i].evidence]
            out[i] = Verdict(self.name, not missing,
                             f"source passage of {missing[0].doc_id!r} not in the top {k}" if missing
                             else f"source passage at rank {', '.join(map(str, ranks))} of {k}")
        for i, d in enumerate(drafts):
            if d.evidence and not d.question.strip():
                out[i] = Verdict(self.name, False, "no question to search with")
        return out
