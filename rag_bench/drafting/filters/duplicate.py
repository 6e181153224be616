"""Near-duplicates: a question whose embedding (the packaged embedder by default) is at least
``duplicate_cosine`` similar to an earlier kept draft's is dropped, naming that draft."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rag_bench.drafting.filters.base import FilterInput
from rag_bench.drafting.records import Draft, Verdict


class DuplicateFilter:
    """Judges the drafts the other filters kept, in order: the first of a near-duplicate pair stays."""

    name = "duplicate"

    def check(self, drafts: Sequence[Draft], ctx: FilterInput) -> list[Verdict | None]:
        """A verdict per draft (compared with the earlier ones given: pass only those kept so far)."""
        if not drafts:
            return []
        vectors = np.asarray(ctx.embedder.embed_queries([d.question for d in drafts]), dtype=np.float64)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        vectors = vectors / np.where(norms == 0, 1.0, norms)
        kept: list[int] = []
        out: list[Verdict | None] = []
        for i, d in enumerate(drafts):
            sims = vectors[kept] @ vectors[i] if kept else np.zeros(0)
            j = int(np.argmax(sims)) if len(sims) else -1
            if j >= 0 and sims[j] >= ctx.thresholds.duplicate_cosine:
                out.append(Verdict(self.name, False, f"near-duplicate of {drafts[kept[j]].draft_id} "
                                   f"(cosine {sims[j]:.3f})"))
                continue
            kept.append(i)
            best = f" (closest cosine {sims[j]:.3f})" if j >= 0 else ""
            out.append(Verdict(self.name, True, "no near-duplicate" + best))
        return out
