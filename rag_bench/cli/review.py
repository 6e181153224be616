"""``rag-bench review DATASET_DIR``: a static page to review a question set (each evidence quote
highlighted in the parse of its document; accept, edit, reject or retype), and ``--apply FILE``:
its decisions applied to questions.jsonl, the previous file and the decisions kept beside it."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import textwrap
from pathlib import Path
from typing import Any

from rag_bench.cli.common import exit2_on_error, fail, output_file, say, write_output
from rag_bench.cli.table import Command

KEPT = "review"  # the folder of the dataset where the previous questions and the decisions are kept


def _rows(root: Path) -> list[dict[str, Any]]:
    """questions.jsonl's objects in order (the loader has validated them)."""
    from rag_bench.data.problems import ProblemLog, read_jsonl

    log = ProblemLog(root)
    rows = [obj for _, obj in read_jsonl(root / "questions.jsonl", log)]
    log.raise_if_any(f"{root / 'questions.jsonl'} is invalid")
    return rows


def _native(root: Path) -> Any:
    from rag_bench.data.loader import load_dataset
    from rag_bench.errors import ConfigError

    dataset = load_dataset(root)
    if dataset.layout != "native":
        raise ConfigError(f"{root}: a {dataset.layout} dataset holds no quotes to review (its judgments are qrels) -- "
                          "fix: review a native dataset folder (docs/ + questions.jsonl with evidence quotes)")
    return dataset


def _decisions(path: Path, rows: list[dict[str, Any]]) -> list[Any]:
    from rag_bench.data.review import read_decisions

    if not path.is_file():
        from rag_bench.errors import ConfigError

        raise ConfigError(f"{path}: no such decisions file -- fix: pass the decisions.jsonl the review page downloaded")
    found, log = read_decisions(path, {str(r.get("id")): r for r in rows})
    log.raise_if_any(f"{path}: decisions that cannot be applied (nothing was written)")
    return found


def _page(a: argparse.Namespace, root: Path) -> int:
    from dataclasses import asdict

    from rag_bench.reporting import review_page

    out = output_file(a.out, "--out") if a.out else None  # checked before any work; a folder it names must exist
    dataset = _native(root)
    rows = _rows(root)
    existing = []
    if a.decisions:
        for d in _decisions(Path(a.decisions), rows):
            row = {k: v for k, v in asdict(d).items() if v is not None and k not in ("line", "qid")}
            existing.append({"id": d.qid, **row})
    shown = review_page.items(dataset, rows, a.context)
    if out is None:  # the default folder is made, as the label page's is, once the input has been read
        Path("reports").mkdir(exist_ok=True)
        out = output_file(f"reports/review-{root.resolve().name}.html", "--out")
    write_output(out, review_page.render(dataset.name, shown, existing), "--out")
    say(f"{len(shown)} questions to review: {out}\n  open it in a browser; keys a/r/1-5, then 'download "
        f"decisions.jsonl'\n  apply them with: rag-bench review {root} --apply decisions.jsonl", wrap=True)
    return 0


def _apply(a: argparse.Namespace, root: Path) -> int:
    from rag_bench.data.native import load_questions, read_documents
    from rag_bench.data.problems import ProblemLog
    from rag_bench.data.review import apply
    from rag_bench.errors import DataError, Problem

    _native(root)
    rows = _rows(root)
    path = Path(a.apply)
    if path.is_file():  # applied once already: its questions changed, so every decision would read as stale
        done = [p for p in sorted((root / KEPT).glob("decisions-*.jsonl")) if p.read_bytes() == path.read_bytes()]
        if done:
            return fail(f"{path}: these decisions were applied already (kept as {done[0]}) -- fix: nothing to do; to "
                        f"review again, write the page anew (rag-bench review {root})")
    decisions = _decisions(path, rows)
    applied = apply(rows, decisions, keep_undecided=not a.drop_undecided)
    if not applied.rows:
        return fail(f"{path}: no question is left (every one rejected or undecided with --drop-undecided) -- fix: "
                    "accept at least one question; questions.jsonl is unchanged")
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in applied.rows)
    staged = root / f".questions.reviewed.tmp-{os.getpid()}"  # hidden: no dataset file, gone whatever happens
    try:
        staged.write_text(text, encoding="utf-8")
        log = ProblemLog(root)
        documents, state = read_documents(root, log)
        load_questions(staged, documents, log, state)
    finally:
        staged.unlink(missing_ok=True)
    if log.problems:  # the reviewed set would not load: say which decision made which question invalid
        line_of = {d.qid: d.line for d in decisions}
        ids = [str(r.get("id")) for r in applied.rows]
        problems = [Problem(str(path), line_of.get(ids[p.line - 1], 0) if 0 < p.line <= len(ids) else 0, p.field,
                            f"question {ids[p.line - 1]!r} as reviewed: {p.message}" if 0 < p.line <= len(ids)
                            else p.message, p.hint) for p in log.problems]
        raise DataError(problems, "the reviewed questions would not validate (questions.jsonl is unchanged)")
    kept = root / KEPT
    kept.mkdir(exist_ok=True)
    before = (root / "questions.jsonl").read_bytes()
    digest = hashlib.sha256(before).hexdigest()[:12]
    old, kept_decisions = kept / f"questions-before-{digest}.jsonl", kept / f"decisions-{digest}.jsonl"
    if not old.exists():
        old.write_bytes(before)
    shutil.copyfile(path, kept_decisions)
    write_output(root / "questions.jsonl", text, "questions.jsonl")
    c = applied.counts
    say(f"{root / 'questions.jsonl'}: {len(rows)} -> {len(applied.rows)} questions\n  {c['accept']} accepted, "
        f"{c['edit']} edited, {c['retype']} retyped, {c['reject']} rejected, {c['undecided']} undecided ("
        f"{'left out' if a.drop_undecided else 'kept as they were'})\n  kept: {old}\n  kept: {kept_decisions}",
        wrap=True)
    return 0


def run(argv: list[str]) -> int:
    """``rag-bench review`` with the arguments ``argv``; its exit code."""
    from rag_bench.reporting.review_page import CONTEXT

    about = ("Write a static page (opens from disk) to review a question set -- drafted or people's: each question "
             "with its evidence quote highlighted in the parse of its document; accept, edit (question, answer), "
             "reject or retype it by key; 'download decisions.jsonl' saves the decisions. With --apply: write the "
             "reviewed questions.jsonl (validated first; the previous file and the decisions are kept in "
             f"DATASET_DIR/{KEPT}/).")
    types = ("types: factoid, multi_hop, unanswerable, clarify, follow_up (a question's `type` field or `type:<t>` "
             "tag, else read from its fields)")
    p = argparse.ArgumentParser(
        prog="rag-bench review", description=textwrap.fill(about, 100), formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=textwrap.fill(types, 100) + "\n\nexamples:\n"
        "  rag-bench review drafted/                                 # writes reports/review-drafted.html\n"
        "  rag-bench review drafted/ --decisions decisions.jsonl     # the page again, with the decisions so far\n"
        "  rag-bench review drafted/ --apply decisions.jsonl [--drop-undecided]\n(docs/agreement.md)")
    p.add_argument("dataset", metavar="DATASET_DIR", help="a native dataset folder (docs/ + questions.jsonl)")
    p.add_argument("--out", metavar="FILE", help="page to write (default reports/review-<dataset folder>.html)")
    p.add_argument("--decisions", metavar="FILE", help="a decisions.jsonl saved before: the page starts with it")
    p.add_argument("--context", type=int, metavar="CHARS", default=CONTEXT, help=f"characters of the parse shown either side of a "
                   f"quote (default {CONTEXT})")
    p.add_argument("--apply", metavar="DECISIONS", help="apply a decisions.jsonl to the dataset's questions.jsonl")
    p.add_argument("--drop-undecided", action="store_true", help="with --apply: leave out the questions nobody "
                   "decided on (default: keep them as they are)")
    a = p.parse_args(argv)
    if a.context < 0:
        return fail(f"--context must be 0 or more characters, got {a.context} -- fix: e.g. --context {CONTEXT}")
    root = Path(a.dataset)
    if not root.is_dir():  # the loader's message would say dataset.path=DIR: review takes the folder itself
        from rag_bench.errors import Problem

        return fail(str(Problem(str(root), 0, "DATASET_DIR", "no such folder" if not root.exists() else "is a file, "
                                "not a folder", "pass a dataset folder (docs/ + questions.jsonl), e.g. rag-bench "
                                "review drafted/")))
    if a.apply and (a.out or a.decisions):
        return fail("--apply writes the reviewed questions.jsonl, not a page -- fix: drop --out/--decisions, or "
                    "drop --apply to write the page")
    return exit2_on_error(lambda: _apply(a, root) if a.apply else _page(a, root))


COMMAND = Command("review", "DATASET_DIR [--decisions FILE] [--out FILE] | --apply FILE",
                  "a static page to review a question set (quotes highlighted in the parse; accept, edit, reject, "
                  "retype); --apply writes the reviewed questions.jsonl and keeps the decisions", run)
