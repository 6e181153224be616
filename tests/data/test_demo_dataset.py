"""The demo dataset keeps the promises the spine issue made about it."""

from __future__ import annotations

from collections import Counter

from rag_bench.text.markdown import parse_blocks


def test_documents(demo_dataset):
    docs = demo_dataset.documents
    assert len(docs) >= 12
    assert sum(len(d.text) for d in docs.values()) >= 20_000
    tables = sum(b.kind == "table" for d in docs.values() for b in parse_blocks(d.text))
    assert tables >= 2
    assert all(any(len(s.heading_path) >= 2 for s in d.sections) for d in docs.values()), "## sections"
    assert any(len(s.heading_path) >= 3 for d in docs.values() for s in d.sections), "### sections"
    titles = Counter(d.title for d in docs.values())
    versioned = [t for t, n in titles.items() if n >= 2]
    assert any({docs[i].status for i in docs if docs[i].title == t} == {"current", "archived"} for t in versioned)
    assert sum(d.acl == ("staff",) for d in docs.values()) >= 2
    assert any("ignore all previous instructions" in d.text.lower() for d in docs.values())


def test_questions(demo_dataset):
    qs = demo_dataset.questions
    tags = Counter(t for q in qs for t in q.tags)
    answerable = [q for q in qs if q.answerable]
    assert len(qs) >= 60 and len(answerable) >= 45
    assert tags["paraphrase"] >= 8 and tags["exact_id"] >= 6
    assert sum(len(q.evidence) >= 2 for q in answerable) >= 6
    unanswerable = [q for q in qs if not q.answerable and "internal_only" not in q.tags]
    assert len(unanswerable) >= 12 and tags["off_topic"] >= 6 and tags["near_miss"] >= 6
    internal_only = [q for q in qs if "internal_only" in q.tags]
    assert len(internal_only) >= 4
    assert all(q.asker is not None and q.asker.groups == ("customers",) for q in internal_only)
    for q in answerable:
        assert q.facts and q.answers
        assert all(demo_dataset.documents[e.doc_id].readable_by(q.asker) for e in q.evidence)


def test_clarify_questions(demo_dataset):
    """Questions whose right outcome is a question back (issue 42), in the shape of the seeds' hotel
    example: the corpus holds the evidence, the answer depends on a fact the asker did not give."""
    from rag_bench.text.normalize import asks_for

    clarify = [q for q in demo_dataset.questions if q.outcome == "clarify"]
    assert 2 <= len(clarify) <= 4 and all("clarify" in q.tags for q in clarify)
    for q in clarify:
        assert q.answerable and q.evidence and q.clarify_facts
        assert all(demo_dataset.documents[e.doc_id].readable_by(q.asker) for e in q.evidence)
        # the question itself does not already give the facts it must ask for
        assert not any(asks_for(q.question, f) for f in q.clarify_facts), q.qid
