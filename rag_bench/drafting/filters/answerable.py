"""Answerability by a reader: handed the top k passages retrieved for the question, the reader
(the extractive stand-in generator by default, or any generator) gives an answer holding the
draft's answer. A question the reader cannot answer from the corpus is dropped."""

from __future__ import annotations

from collections.abc import Sequence

from rag_bench.domain import Passage
from rag_bench.drafting.filters.base import FilterInput
from rag_bench.drafting.records import Draft, Verdict
from rag_bench.text.normalize import contains


class AnswerableFilter:
    """Drops a factoid, multi-hop or follow-up draft whose answer the reader does not give."""

    name = "answerable"

    def check(self, drafts: Sequence[Draft], ctx: FilterInput) -> list[Verdict | None]:
        """None for unanswerable and clarify drafts (their answer is no one span)."""
        from rag_bench.generation.answer import parse_answer
        from rag_bench.generation.base import GenerationInput, generate_cached
        from rag_bench.generation.prompt import build_prompt

        todo = [i for i, d in enumerate(drafts) if d.answer and d.kind not in ("clarify", "unanswerable")
                and d.question.strip()]
        tops = ctx.index.search([drafts[i].standalone or drafts[i].question for i in todo], ctx.thresholds.k)
        items = []
        for i, top in zip(todo, tops):
            passages = tuple(Passage(n + 1, c.chunk_id, c.doc_id, c.start, c.end, c.text, c.heading_path)
                             for n, c in enumerate(top))
            q = drafts[i].standalone or drafts[i].question
            items.append(GenerationInput(q, passages, build_prompt(q, passages)))
        gens = generate_cached(ctx.reader, items) if items else []
        out: list[Verdict | None] = [None] * len(drafts)
        for i, item, g in zip(todo, items, gens):
            if g.error is not None:
                out[i] = Verdict(self.name, False, f"the reader failed: {g.error}")
                continue
            said = parse_answer(g.raw, len(item.passages)).text
            parts = [p.strip() for p in drafts[i].answer.split(";") if p.strip()]
            missed = [p for p in parts if not contains(said, p)]
            out[i] = Verdict(self.name, not missed, f"the reader's answer lacks {missed[0]!r}: {said[:80]!r}" if missed
                             else "the reader gave the answer")
        for i, d in enumerate(drafts):
            if out[i] is None and d.answer and d.kind not in ("clarify", "unanswerable"):
                out[i] = Verdict(self.name, False, "no question to answer")
        return out
