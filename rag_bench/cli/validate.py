"""``rag-bench validate``: check a dataset; every problem listed; exit 2 if any."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from rag_bench.cli.common import fail, say
from rag_bench.cli.table import Command
from rag_bench.errors import ConfigError, DataError, RagBenchError


def run(argv: list[str]) -> int:
    """``rag-bench validate`` with the arguments ``argv``; its exit code."""
    from rag_bench.data.files import describe_files
    from rag_bench.data.loader import load_dataset

    p = argparse.ArgumentParser(prog="rag-bench validate", description="Check a dataset folder (native or "
                                "BEIR layout) and list every problem with file:line, field and a fix.")
    p.add_argument("dataset", help="dataset folder")
    p.add_argument("--split", default="test", help="BEIR qrels split (default: test)")
    p.add_argument("overrides", nargs="*", metavar="parser=NAME",
                   help="the parser the sweep will read .pdf/.html/.docx documents with (default: auto): every quote "
                        "is looked for in its parse; one it lost, in the other parsers' texts (docs/parsing.md)")
    a = p.parse_args(argv)
    try:
        from rag_bench.cli.parse import _parser
        from rag_bench.data.quotes import lost_quotes

        chosen = _parser(a.overrides) if a.overrides else None
        ds = load_dataset(a.dataset, split=a.split, parser=chosen)
        lost = lost_quotes(ds, other_parsers(chosen))
        name = "auto" if chosen is None else str(chosen.name)
        typos = [q.problem(name) for q in lost if q.typo]
        if typos:
            raise DataError(typos, f"dataset {a.dataset} is invalid: {len(typos)} quote(s) in no parser's text")
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
    for q in lost:  # a parser's loss, not the dataset's: a sweep with this parser counts it as `parsing`
        say(f"note: {q.note(name)}")
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


def other_parsers(chosen: Any) -> Callable[[str], list[Any]]:
    """For a file suffix: every parser option of ``conf/parser/`` that reads it and is installed, but the one
    ``chosen`` (None: ``auto``) reads it with (built once each, on first use; a missing package leaves an
    option out)."""
    from rag_bench.cli.parse import _parser
    from rag_bench.parsing.auto import AutoParser
    from rag_bench.parsing.files import parser_for, parser_key
    from rag_bench.runner.config import CONF_DIR

    built: dict[str, Any] = {}
    reader = chosen if chosen is not None else AutoParser()

    def for_suffix(suffix: str) -> list[Any]:
        if not built:
            for option in sorted(p.stem for p in (CONF_DIR / "parser").glob("*.yaml")):
                try:
                    built[option] = None if option == "auto" else _parser([f"parser={option}"])
                except ConfigError:  # its package is not installed
                    built[option] = None
        try:
            own = parser_key(parser_for(reader, suffix))
        except Exception:  # noqa: BLE001 -- the chosen parser reads no such file: every option is another
            own = ""
        return [p for p in built.values() if p is not None and suffix in getattr(p, "suffixes", ())
                and parser_key(p) != own]

    return for_suffix


COMMAND = Command("validate", "DATASET [parser=NAME]", "check a dataset; every problem listed (a quote in no parser's "
                  "text of its document among them); exit 2 if any", run)
