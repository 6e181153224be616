"""Every evidence quote is located exactly in its document's parse, at the characters it claims
(rag_bench.parsing.locate: the loader finds it the same way, so any chunker can be scored on it)."""

from __future__ import annotations

from collections.abc import Sequence

from rag_bench.drafting.filters.base import FilterInput
from rag_bench.drafting.records import Draft, Verdict
from rag_bench.parsing.locate import locate


class QuoteFilter:
    """Drops a draft whose quote is not the parse's text (a model that rewrote its quote)."""

    name = "quote"

    def check(self, drafts: Sequence[Draft], ctx: FilterInput) -> list[Verdict | None]:
        """Each draft's quotes located (None for a draft without evidence)."""
        out: list[Verdict | None] = []
        for d in drafts:
            if not d.evidence:
                out.append(None)
                continue
            bad = []
            for q in d.evidence:
                doc = ctx.index.documents.get(q.doc_id)
                found = locate(doc.text, q.text) if doc is not None and q.text.strip() else None
                if doc is None:
                    bad.append(f"no document {q.doc_id!r}")
                elif found is None or found[2] != "exact":
                    bad.append(f"{q.text[:50]!r} is not in {q.doc_id!r}'s parse"
                               + (f" (only {found[2]})" if found else ""))
            out.append(Verdict(self.name, not bad, "; ".join(bad) or "located exactly"))
        return out
