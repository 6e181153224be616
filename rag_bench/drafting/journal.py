"""drafts.jsonl as the journal of a drafting session, and the kept drafts written as a dataset folder.

While drafting, each finished draft is appended as one line (flushed to disk), so a run stopped by
a failing model resumes without drafting again what it finished; a torn last line is ignored. At
the end, drafts.jsonl is written again whole with every filter's verdict, then the dataset files
(docs/, questions.jsonl, dataset.yaml), each whole or not at all (rag_bench.cells.atomic_write)."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

import yaml

from rag_bench.cells import atomic_write
from rag_bench.drafting.corpus import Corpus
from rag_bench.drafting.records import Draft, Verdict

JOURNAL = "drafts.jsonl"
DATASET_FILES = ("questions.jsonl", "dataset.yaml")


def read_journal(out: Path) -> dict[str, Draft]:
    """The drafts an earlier run of this folder finished, by id (lines that are not one are skipped:
    a line torn by a crash, or a draft of an older format)."""
    path = out / JOURNAL
    got: dict[str, Draft] = {}
    if not path.is_file():
        return got
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            d = Draft.from_json(json.loads(line))
        except (ValueError, KeyError, TypeError):
            continue
        got[d.draft_id] = d
    return got


def append(fh: IO[str], drafts: Sequence[Draft]) -> None:
    """Journal ``drafts``: one line each, on disk before the next model call."""
    for d in drafts:
        fh.write(json.dumps(d.to_json(), ensure_ascii=False) + "\n")
    fh.flush()
    os.fsync(fh.fileno())


def write_verdicts(out: Path, drafts: Sequence[Draft], verdicts: Sequence[Sequence[Verdict]]) -> None:
    """drafts.jsonl whole: every draft with ``kept``, each applicable filter's verdict and, when
    dropped, the reasons."""
    lines = []
    for d, vs in zip(drafts, verdicts):
        row = d.to_json()
        row["kept"] = all(v.ok for v in vs)
        row["filters"] = {v.name: {"ok": v.ok, "why": v.why} for v in vs}
        if not row["kept"]:
            row["dropped_by"] = [v.name for v in vs if not v.ok]
        lines.append(json.dumps(row, ensure_ascii=False))
    atomic_write(out / JOURNAL, "".join(line + "\n" for line in lines))


def question_line(d: Draft, fields: frozenset[str]) -> dict[str, Any]:
    """The questions.jsonl line of a kept draft (docs/contract.md §3)."""
    row: dict[str, Any] = {"id": d.draft_id, "question": d.question, "answerable": d.kind != "unanswerable",
                           "evidence": [{"doc_id": q.doc_id, "quote": q.text} for q in d.evidence]}
    if d.answer and d.kind != "clarify":
        row["answers"] = [d.answer]
        parts = [p.strip() for p in d.answer.split(";") if p.strip()]
        if len(parts) > 1:
            row["facts"] = parts
    if d.kind == "clarify":
        row["expects"] = "clarify"
        row["clarify_facts"] = list(d.clarify_facts)
    if d.history and "history" in fields:
        row["history"] = [{"role": t.role, "content": t.content} for t in d.history]
    if d.standalone and "standalone" in fields:
        row["standalone"] = d.standalone
    row["tags"] = ["drafted", f"drafted:{d.kind}"]
    return row


def clear_dataset(out: Path) -> None:
    """Remove the dataset files of an earlier run: a run that stops leaves none, never a stale one."""
    for name in DATASET_FILES:
        (out / name).unlink(missing_ok=True)


def write_dataset(out: Path, corpus: Corpus, kept: Sequence[Draft], manifest: dict[str, Any],
                  fields: frozenset[str]) -> None:
    """``out`` as a dataset folder: the corpus's document files copied into docs/ (the sweep parses
    them as the drafter read them), docs.jsonl when the corpus has one, questions.jsonl, dataset.yaml."""
    tmp = out / ".docs-tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    for doc in corpus.documents.values():
        src = Path(doc.path)
        target = tmp / src.relative_to(corpus.docs_dir)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, target)
    old = out / "docs"
    if old.exists():
        shutil.rmtree(old)
    os.replace(tmp, old)
    if corpus.meta is not None:
        keep = set(corpus.documents)
        rows = [line for line in corpus.meta.read_text(encoding="utf-8").splitlines()
                if line.strip() and json.loads(line).get("doc_id") in keep]
        atomic_write(out / "docs.jsonl", "".join(r + "\n" for r in rows))
    atomic_write(out / "questions.jsonl",
                 "".join(json.dumps(question_line(d, fields), ensure_ascii=False) + "\n" for d in kept))
    atomic_write(out / "dataset.yaml", yaml.safe_dump(manifest, sort_keys=False, allow_unicode=True))
