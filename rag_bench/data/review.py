"""A person's review of a question set (``rag-bench review``): each question accepted, edited
(its question or reference answer), rejected or retyped, and those decisions applied to
questions.jsonl.

A question's **type** is one of :data:`TYPES`: its ``type`` field when it has one, else a tag
``type:<t>`` (or a tag that is a type's name), else what its fields say (:func:`question_type`).
A retyped question gets the tag ``type:<t>`` (its ``type`` field when it has one), and the fields
the type implies: ``unanswerable`` makes it unanswerable (no evidence, no answers); ``clarify``
sets ``"expects": "clarify"``; any other type drops ``expects`` and ``clarify_facts`` a clarify
question had, and makes an unanswerable question answerable -- the rewritten set is validated by
the loader before anything is written, so a retype that needs more (evidence, clarify facts) is
refused with the loader's message.

The decisions file (``decisions.jsonl``, one JSON object a line): ``id``, ``decision``
(:data:`DECISIONS`), ``reviewer``, ``row_sha256`` (:func:`row_digest` of the question's line as it
was reviewed: a decision about a line edited since is refused), and ``question``/``answer`` (an
edit) or ``type`` (a retype, or an edit that also retypes). The last decision about a question wins.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag_bench.data.problems import ProblemLog, read_jsonl

TYPES = ("factoid", "multi_hop", "unanswerable", "clarify", "follow_up")
DECISIONS = ("accept", "edit", "reject", "retype")
TAG = "type:"
_FIELDS = {"id", "decision", "reviewer", "row_sha256", "question", "answer", "type", "at"}


def row_digest(row: Mapping[str, Any]) -> str:
    """SHA-256 of a question's JSON object (keys sorted): what a decision was made about.

    >>> row_digest({"id": "q1", "question": "Why?"}) == row_digest({"question": "Why?", "id": "q1"})
    True
    """
    return hashlib.sha256(json.dumps(row, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()


def question_type(row: Mapping[str, Any]) -> tuple[str, bool]:
    """``(type, given)``: the question's type, and whether the question said it (a ``type`` field or
    tag) rather than its fields (history: follow_up; expects clarify: clarify; unanswerable;
    evidence in two or more documents: multi_hop; else factoid).

    >>> question_type({"tags": ["type:multi_hop"]}), question_type({"answerable": False})
    (('multi_hop', True), ('unanswerable', False))
    >>> question_type({"answerable": True, "evidence": [{"doc_id": "a"}, {"doc_id": "b"}]})
    ('multi_hop', False)
    """
    if row.get("type") in TYPES:
        return str(row["type"]), True
    tags = [str(t) for t in row.get("tags") or () if isinstance(t, str)]
    for t in tags:
        if t.startswith(TAG) and t[len(TAG):] in TYPES:
            return t[len(TAG):], True
    for t in tags:
        if t in TYPES:
            return t, True
    if row.get("history"):
        return "follow_up", False
    if row.get("expects") == "clarify":
        return "clarify", False
    if row.get("answerable") is False or row.get("expects") == "refuse":
        return "unanswerable", False
    docs = {e.get("doc_id") for e in row.get("evidence") or () if isinstance(e, Mapping)}
    return ("multi_hop" if len(docs) > 1 else "factoid"), False


@dataclass(frozen=True)
class Decision:
    """One line of a decisions file."""

    qid: str
    decision: str
    reviewer: str
    row_sha256: str
    line: int
    question: str | None = None
    answer: str | None = None
    type: str | None = None


def read_decisions(path: Path, rows: Mapping[str, Mapping[str, Any]]) -> tuple[list[Decision], ProblemLog]:
    """The decisions of ``path`` about the questions ``rows`` (id -> its JSON object), and every
    problem found (a bad field, an unknown id, a decision about a line edited since) in the log."""
    log = ProblemLog(path.parent)
    out: list[Decision] = []
    for lineno, obj in read_jsonl(path, log):
        n = len(log.problems)
        for key in sorted(obj.keys() - _FIELDS):
            log.add(path, lineno, key, f"unknown field {key!r}", f"allowed fields: {', '.join(sorted(_FIELDS))}")
        qid, kind = obj.get("id"), obj.get("decision")
        if not isinstance(qid, str) or qid not in rows:
            log.add(path, lineno, "id", f"{qid!r} is no question of this dataset",
                    "apply the decisions to the dataset they were made on")
        if kind not in DECISIONS:
            log.add(path, lineno, "decision", f"must be one of {', '.join(DECISIONS)}, got {kind!r}",
                    'e.g. "decision": "accept"')
        for key in ("question", "answer", "reviewer"):
            if key in obj and not isinstance(obj[key], str):
                log.add(path, lineno, key, f"must be text, got {type(obj[key]).__name__}", f'e.g. "{key}": "..."')
        if kind == "edit" and not str(obj.get("question") or "").strip() and "answer" not in obj:
            log.add(path, lineno, "question", "an edit without a question or an answer",
                    'give the edited "question" (or "answer"), or "decision": "accept"')
        if "question" in obj and isinstance(obj["question"], str) and not obj["question"].strip():
            log.add(path, lineno, "question", "is empty", "write the question, or reject it")
        if kind == "retype" and "type" not in obj:
            log.add(path, lineno, "type", "a retype without a type", f"one of {', '.join(TYPES)}")
        if "type" in obj and obj["type"] not in TYPES:
            log.add(path, lineno, "type", f"must be one of {', '.join(TYPES)}, got {obj['type']!r}",
                    'e.g. "type": "factoid"')
        if isinstance(qid, str) and qid in rows and obj.get("row_sha256") != row_digest(rows[qid]):
            log.add(path, lineno, "row_sha256", f"question {qid!r} changed since it was reviewed (or the line "
                    "carries no row_sha256)", "review it again: write the page anew and decide on the question as "
                    "it is now")
        if len(log.problems) == n:
            out.append(Decision(str(qid), str(kind), str(obj.get("reviewer") or ""), str(obj["row_sha256"]), lineno,
                                obj.get("question"), obj.get("answer"), obj.get("type")))
    return out, log


def retyped(row: Mapping[str, Any], new: str) -> dict[str, Any]:
    """``row`` as a question of type ``new`` (the module's rules).

    >>> retyped({"id": "q", "answerable": True, "evidence": [{"doc_id": "a"}], "answers": ["x"], "tags": ["faq"]},
    ...         "unanswerable")
    {'id': 'q', 'answerable': False, 'evidence': [], 'answers': [], 'tags': ['faq', 'type:unanswerable']}
    """
    out = dict(row)
    if "type" in out:
        out["type"] = new
    else:
        tags = [t for t in out.get("tags") or () if not (isinstance(t, str) and (t.startswith(TAG) or t in TYPES))]
        out["tags"] = [*tags, f"{TAG}{new}"]
    if new == "unanswerable":
        out.update(answerable=False, evidence=[], answers=[])
        for key in ("expects", "clarify_facts"):
            out.pop(key, None)
        return out
    if out.get("answerable") is False:
        out["answerable"] = True
        if out.get("expects") == "refuse":
            out.pop("expects")
    if new == "clarify":
        out["expects"] = "clarify"
    elif out.get("expects") == "clarify":
        out.pop("expects")
        out.pop("clarify_facts", None)
    return out


@dataclass(frozen=True)
class Applied:
    """The reviewed rows and how many questions each decision touched (``undecided``: none)."""

    rows: tuple[dict[str, Any], ...]
    counts: Mapping[str, int]


def apply(rows: Sequence[Mapping[str, Any]], decisions: Sequence[Decision], *, keep_undecided: bool = True) -> Applied:
    """``rows`` (questions.jsonl's objects, in order) with ``decisions`` applied: a rejected question
    left out, an edited one's question (and first reference answer) replaced, a retyped one
    :func:`retyped`; the undecided kept (or left out)."""
    last = {d.qid: d for d in decisions}
    counts = {k: 0 for k in (*DECISIONS, "undecided")}
    out: list[dict[str, Any]] = []
    for row in rows:
        d = last.get(str(row.get("id")))
        if d is None:
            counts["undecided"] += 1
            if keep_undecided:
                out.append(dict(row))
            continue
        counts[d.decision] += 1
        if d.decision == "reject":
            continue
        new = dict(row)
        if d.decision == "edit":
            if d.question is not None:
                new["question"] = d.question.strip()
            if d.answer is not None and d.answer.strip():
                answer = d.answer.strip()  # replaces the first reference answer; the others stay
                new["answers"] = [answer, *(a for a in list(new.get("answers") or ())[1:] if a != answer)]
        if d.type is not None and d.decision in ("edit", "retype") and d.type != question_type(row)[0]:
            new = retyped(new, d.type)
        out.append(new)
    return Applied(tuple(out), counts)
