"""One drafting session: plan the slots, draft those the journal does not hold, filter every draft, and
write drafts.jsonl (every candidate with each filter's verdict) and the kept drafts as a dataset."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from rag_bench.drafting import journal
from rag_bench.drafting.base import DraftingFailed
from rag_bench.drafting.corpus import Corpus, Index
from rag_bench.drafting.filters.answerable import AnswerableFilter
from rag_bench.drafting.filters.base import Filter, FilterInput
from rag_bench.drafting.filters.copied import CopiedFilter
from rag_bench.drafting.filters.duplicate import DuplicateFilter
from rag_bench.drafting.filters.fields import FieldsFilter
from rag_bench.drafting.filters.length import LengthFilter
from rag_bench.drafting.filters.quote import QuoteFilter
from rag_bench.drafting.filters.round_trip import RoundTripFilter
from rag_bench.drafting.filters.unsupported import UnsupportedFilter
from rag_bench.drafting.filters.wh_fit import WhFitFilter
from rag_bench.drafting.records import Draft, Settings, Slot, Verdict
from rag_bench.drafting.slots import ATTRIBUTES, plan
from rag_bench.errors import EndpointError

log = logging.getLogger(__name__)
# In the order they are judged; the duplicate filter last, over the drafts the others kept.
FILTERS: tuple[Filter, ...] = (QuoteFilter(), LengthFilter(), CopiedFilter(), WhFitFilter(), RoundTripFilter(),
                               AnswerableFilter(), UnsupportedFilter(), FieldsFilter())
DUPLICATE = DuplicateFilter()


@dataclass(frozen=True)
class Outcome:
    """What a run did: the drafts (in slot order) with their verdicts, how many were drafted now and
    how many came from the journal."""

    drafts: tuple[Draft, ...]
    verdicts: tuple[tuple[Verdict, ...], ...]
    drafted_now: int
    resumed: int

    @property
    def kept(self) -> list[Draft]:
        """The drafts every filter kept."""
        return [d for d, vs in zip(self.drafts, self.verdicts) if all(v.ok for v in vs)]

    def dropped_by(self) -> Counter[str]:
        """How many drafts each filter dropped (a draft dropped by two counts for both)."""
        return Counter(v.name for vs in self.verdicts for v in vs if not v.ok)


def slots_for(corpus: Corpus, settings: Settings, index: Index) -> tuple[list[Slot], dict[str, str]]:
    """The planned slots, with each absent-attribute near miss checked by retrieval: an attribute a
    retrieved passage mentions is replaced by another the top k do not (or the slot is left out)."""
    slots, notes = plan(list(corpus.documents.values()), settings)
    words = [a for a, _ in ATTRIBUTES]
    out = []
    for s in slots:
        if s.kind == "unanswerable" and s.attribute:
            templates = dict(ATTRIBUTES)
            order = words[words.index(s.attribute):] + words[:words.index(s.attribute)]
            tops = index.search([templates[a].format(e=s.entity) for a in order], 10)
            free = next((a for a, top in zip(order, tops) if not any(a in c.body.lower() for c in top)), None)
            if free is None:
                continue
            s = replace(s, attribute=free)
        out.append(s)
    return out, notes


def judge(drafts: Sequence[Draft], ctx: FilterInput) -> list[tuple[Verdict, ...]]:
    """Every filter's verdicts on every draft (the duplicate filter over those the others kept)."""
    per: list[list[Verdict]] = [[] for _ in drafts]
    for f in FILTERS:
        for i, v in enumerate(f.check(drafts, ctx)):
            if v is not None:
                per[i].append(v)
    alive = [i for i, vs in enumerate(per) if all(v.ok for v in vs)]
    if ctx.embedder is None:  # ``~embedder``: the near-duplicate filter is off (dataset.yaml says so)
        return [tuple(vs) for vs in per]
    for i, v in zip(alive, DUPLICATE.check([drafts[i] for i in alive], ctx)):
        if v is not None:
            per[i].append(v)
    return [tuple(vs) for vs in per]


def draft_and_filter(out: Path, slots: Sequence[Slot], drafter: Any, ctx: FilterInput) -> Outcome:
    """Draft what the journal in ``out`` lacks (journaling each batch), then filter everything. A
    failing model leaves the journal with what it finished and raises a :class:`DataError` that says
    how to resume; no dataset file is written then."""
    from rag_bench.drafting.base import draft_id

    journal.clear_dataset(out)
    have = journal.read_journal(out)
    ids = [draft_id(drafter.identity, s) for s in slots]
    todo = [s for s, i in zip(slots, ids) if i not in have]
    resumed = len(slots) - len(todo)
    if resumed:
        log.info("resuming: %d of %d drafts are in %s, %d to draft", resumed, len(slots), out / journal.JOURNAL,
                 len(todo))
    done: list[Draft] = []
    with open(out / journal.JOURNAL, "a", encoding="utf-8") as fh:
        batch = getattr(drafter, "batch", 64)
        try:
            for at in range(0, len(todo), batch):
                got = drafter.draft(todo[at:at + batch])
                journal.append(fh, got)
                done += got
        except DraftingFailed as exc:
            journal.append(fh, exc.done)
            kept = resumed + len(done) + len(exc.done)
            raise EndpointError(f"{exc} -- {kept} of {len(slots)} drafts are journaled in {out / journal.JOURNAL}; "
                            "no dataset was written -- fix: run the same command again when the model answers: it "
                            "resumes with the drafts not yet written") from None
    have.update({d.draft_id: d for d in done})
    drafts = [have[i] for i in ids]
    return Outcome(tuple(drafts), tuple(judge(drafts, ctx)), len(done), resumed)
