"""The slot planner and the filters on tiny inputs (issue 54): deterministic given the seed, the quota
per document kept, each filter's verdict said."""

from __future__ import annotations

from rag_bench.domain import Document
from rag_bench.drafting.filters.base import FilterInput, Thresholds
from rag_bench.drafting.filters.copied import CopiedFilter
from rag_bench.drafting.filters.quote import QuoteFilter
from rag_bench.drafting.filters.wh_fit import WhFitFilter
from rag_bench.drafting.offline import TemplateDrafter
from rag_bench.drafting.records import Draft, Quote, Settings
from rag_bench.drafting.slots import counts, plan
from rag_bench.text.markdown import parse_sections
from tests.drafting.test_draft_cli import DOCS

SHARES = (("factoid", 0.5), ("unanswerable", 0.3), ("multi_hop", 0.2))


def _docs() -> list[Document]:
    return [Document(name[:-3], text, sections=parse_sections(text)) for name, text in DOCS.items()]


def test_the_plan_is_the_seeds_and_keeps_the_quota_per_document():
    docs = _docs()
    a, _ = plan(docs, Settings(8, SHARES, seed=3))
    assert [s.slot_id for s in a] == [s.slot_id for s in plan(docs, Settings(8, SHARES, seed=3))[0]]
    assert [s.slot_id for s in a] != [s.slot_id for s in plan(docs, Settings(8, SHARES, seed=4))[0]]
    capped, _ = plan(docs, Settings(8, SHARES, seed=3, per_document=2))
    firsts = [s.quotes[0].doc_id for s in capped]
    assert firsts and max(firsts.count(d) for d in set(firsts)) <= 2
    for s in a:  # every quote is its document's text at its characters
        for q in s.quotes:
            assert DOCS[q.doc_id + ".md"][q.start:q.end] == q.text
    assert {s.kind for s in a} >= {"factoid", "unanswerable"}
    multi = [s for s in a if s.kind == "multi_hop"]
    assert all(s.quotes[0].doc_id != s.quotes[1].doc_id for s in multi)


def test_a_one_document_corpus_gives_its_multi_hop_share_to_factoid_and_says_so():
    slots, notes = plan(_docs()[:1], Settings(4, (("factoid", 0.5), ("multi_hop", 0.5))))
    assert {s.kind for s in slots} == {"factoid"} and "one document" in notes["multi_hop"]
    assert counts(Settings(3, (("factoid", 1.0), ("clarify", 0.0)))) == {"factoid": 3, "clarify": 0}


def test_templates_blank_the_answer_and_the_filters_say_why():
    docs = _docs()
    slots, _ = plan(docs, Settings(6, (("factoid", 1.0),)))
    drafts = TemplateDrafter(window=6).draft(slots)
    assert all("___" in d.question or d.how == "definition" for d in drafts)
    ctx = FilterInput(index=None, reader=None, embedder=None, thresholds=Thresholds(), loader_fields=frozenset())  # type: ignore[arg-type]
    assert all(v is not None and v.ok for v in CopiedFilter().check(drafts, ctx))
    q = Quote("mill", "The Kettleby mill was built in 1842", 0, 0)
    bad = Draft("d1", "factoid", "When was the Kettleby mill built in 1842?", "1842", (q,), "t", "x")
    verdict = CopiedFilter().check([bad], ctx)[0]
    assert verdict is not None and not verdict.ok and "'1842'" in verdict.why
    who = Draft("d2", "factoid", "Who was the Lion-hearted?", "1191", (q,), "llm", "x")
    when = Draft("d3", "factoid", "When was the mill built?", "1842", (q,), "llm", "x")
    which = Draft("d4", "factoid", 'Which year completes this: "built in ___"?', "1842", (q,), "t", "x")
    got = WhFitFilter().check([who, when, which], ctx)
    assert got[0] is not None and not got[0].ok and "asks for a name" in got[0].why
    assert got[1] is not None and got[1].ok and got[2] is not None and got[2].ok


def test_the_quote_filter_wants_the_parse_text_exactly():
    class _Index:
        documents = {d.doc_id: d for d in _docs()}

    ctx = FilterInput(index=_Index(), reader=None, embedder=None, thresholds=Thresholds(), loader_fields=frozenset())  # type: ignore[arg-type]
    good = Quote("bridge", "The stone bridge over the Wend was opened in 1867 by Thomas Hale.", 0, 0)
    rewritten = Quote("bridge", "The stone bridge over the river Wend opened in 1867.", 0, 0)
    got = QuoteFilter().check([Draft("a", "factoid", "q?", "1867", (good,), "t", "x"),
                               Draft("b", "factoid", "q?", "1867", (rewritten,), "llm", "x")], ctx)
    assert got[0] is not None and got[0].ok
    assert got[1] is not None and not got[1].ok and "is not in 'bridge'" in got[1].why
