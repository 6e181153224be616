"""``rag-bench validate``: check a dataset; every problem listed; exit 2 if any."""

from __future__ import annotations

import argparse
from typing import Any

from rag_bench.cli.common import fail, say
from rag_bench.cli.table import Command
from rag_bench.errors import RagBenchError


def run(argv: list[str]) -> int:
    """``rag-bench validate`` with the arguments ``argv``; its exit code."""
    from rag_bench.data.files import describe_files
    from rag_bench.data.loader import load_dataset

    p = argparse.ArgumentParser(prog="rag-bench validate", description="Check a dataset folder (native or "
                                "BEIR layout) and list every problem with file:line, field and a fix.")
    p.add_argument("dataset", help="dataset folder")
    p.add_argument("--split", default="test", help="BEIR qrels split (default: test)")
    a = p.parse_args(argv)
    try:
        ds = load_dataset(a.dataset, split=a.split)
    except RagBenchError as exc:
        return fail(exc)
    qs = ds.questions
    n_ans = sum(q.answerable for q in qs)
    unjudged = sum(q.answerable and not q.evidence for q in qs)
    grades = sorted({s.grade for q in qs for s in q.evidence})
    say(f"ok: {ds.name} ({ds.layout}): {len(ds.documents)} documents, "
          f"{sum(len(d.text) for d in ds.documents.values())} characters, {len(qs)} questions "
          f"({n_ans} answerable, {len(qs) - n_ans} unanswerable"
          + (f", {unjudged} with no relevant judgment: excluded from ranking measures" if unjudged else "") + "), "
          + (f"grades {grades}, " if grades != [1] and grades else "") +
          f"{sum(len(q.evidence) for q in qs)} evidence spans; dataset files {', '.join(describe_files(ds.files))} "
          f"(other files in the folder are not part of it); fingerprint {ds.fingerprint}")
    for line in common_facts(ds):
        say(f"warning: {line}")
    return 0


MANY_DOCUMENTS = 5  # a fact in at least this many documents (and a fifth of them) is warned about
SHOWN = 10


def common_facts(ds: Any) -> list[str]:
    """A warning per question fact that occurs in many documents (at least MANY_DOCUMENTS and a
    fifth of them): an answer that contains it may have it from anywhere, so "correct" by that
    fact says little (issue 55: the fact ``50`` was in ``priority="50"``)."""
    from rag_bench.text.normalize import documents_with

    facts = list(dict.fromkeys(f for q in ds.questions for f in q.facts))
    if not facts or len(ds.documents) < MANY_DOCUMENTS:
        return []
    texts = [d.text for d in ds.documents.values()]
    counts = dict(zip(facts, documents_with(facts, texts)))
    common = {f: n for f, n in counts.items() if n >= MANY_DOCUMENTS and n >= 0.2 * len(texts)}
    out = []
    for q in ds.questions:
        for f in q.facts:
            if f in common:
                out.append(f"question {q.qid}: its fact {f!r} occurs in {common[f]} of {len(texts)} documents, so an "
                           "answer that contains it may have it from anywhere -- fix: write the fact with the words "
                           "that make it this answer's (a number with its unit or noun, a word with its phrase)")
    if len(out) > SHOWN:
        out = out[:SHOWN] + [f"... and {len(out) - SHOWN} more facts that occur in many documents"]
    return out


COMMAND = Command("validate", "DATASET", "check a dataset; every problem listed; exit 2 if any", run)
