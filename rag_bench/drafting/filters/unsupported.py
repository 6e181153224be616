"""An unanswerable draft has no passage that supports it: the top k passages retrieved for it are
handed to the claim judge (rag_bench.metrics.support), with the question read as a claim (its
question words dropped: "What was the population of Rouen?" -> "population of Rouen"). A passage
that holds the claim's words, names and numbers may answer it: the draft is dropped."""

from __future__ import annotations

import re
from collections.abc import Sequence

from rag_bench.drafting.filters.base import FilterInput
from rag_bench.drafting.records import Draft, Verdict

# a question word, or the template's frame ("Which year completes this:")
_ASK = re.compile(r"^\s*(?:(?:which|what)\s+(?:year|century|number|name)\s+completes\s+this:|(?:what|which|who|whom|"
                  r"whose|when|where|why|how(?:\s+many|\s+much)?)\b)\s*", re.IGNORECASE)


def as_claim(question: str) -> str:
    """The question as the statement the claim judge reads: question word, blank and marks dropped.

    >>> as_claim('Which year completes this: "In ___ Rollo met Charles"?')
    'In Rollo met Charles'
    """
    text = _ASK.sub("", question).replace("___", " ")
    return " ".join(text.replace('"', " ").replace("?", " ").split())


class UnsupportedFilter:
    """Drops an unanswerable draft that some retrieved passage supports."""

    name = "unsupported"

    def check(self, drafts: Sequence[Draft], ctx: FilterInput) -> list[Verdict | None]:
        """None for drafts that are answerable."""
        from rag_bench.metrics.support import support_answer

        todo = [i for i, d in enumerate(drafts) if d.kind == "unanswerable" and d.question.strip()]
        tops = ctx.index.search([drafts[i].question for i in todo], ctx.thresholds.k)
        out: list[Verdict | None] = [None] * len(drafts)
        for i, top in zip(todo, tops):
            ok, verdicts = support_answer(as_claim(drafts[i].question), [c.body for c in top],
                                          min_coverage=ctx.thresholds.min_coverage)
            if ok:
                v = verdicts[0]
                out[i] = Verdict(self.name, False, f"passage {top[v.passage].chunk_id} supports it "
                                 f"({v.coverage:.0%} of its words)")
            else:
                best = max((v.coverage for v in verdicts), default=0.0)
                out[i] = Verdict(self.name, True, f"no passage of the top {ctx.thresholds.k} supports it "
                                 f"(best {best:.0%} of its words)")
        for i, d in enumerate(drafts):
            if d.kind == "unanswerable" and not d.question.strip():
                out[i] = Verdict(self.name, False, "no question to check")
        return out
