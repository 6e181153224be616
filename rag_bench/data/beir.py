"""BEIR layout: corpus.jsonl, queries.jsonl, qrels/<split>.tsv (document-level relevance).

BEIR has no spans: a relevant document's evidence is the whole document text with the qrels
grade, so chunk relevance reduces to "the chunk comes from a relevant document", at that
document's grade (the overlap rule with a span that contains the chunk). A document's text is its
title, a blank line, then its body, as BEIR models see it. A query judged with grade 0 only is
kept as a question with no relevant evidence: excluded from ranking measures and counted, never
treated as unanswerable.
"""

from __future__ import annotations

import re
from pathlib import Path

from rag_bench.data.problems import (
    ProblemLog,
    check_id,
    check_text,
    did_you_mean,
    id_index,
    read_jsonl,
    read_text,
)
from rag_bench.domain import Document, EvidenceSpan, Question
from rag_bench.text.markdown import parse_sections

MAX_GRADE = 1000


def _grade(text: str) -> int | None:
    """An integer grade (``2``, ``-1``; ``1.0`` as written by some tools), else None.

    >>> [_grade(s) for s in ("2", " 1.0", "1.5", "inf", "nan", "1_0", "10000")]
    [2, 1, None, None, None, None, None]
    """
    t = text.strip()
    if not re.fullmatch(r"[+-]?\d+(\.0*)?", t):
        return None
    value = int(t.split(".")[0])
    return value if -MAX_GRADE <= value <= MAX_GRADE else None


def is_beir(root: Path) -> bool:
    """A folder is BEIR when it has corpus.jsonl and no docs/ folder."""
    return (root / "corpus.jsonl").exists() and not (root / "docs").is_dir()


def _read_corpus(corpus: Path, log: ProblemLog) -> dict[str, Document]:
    """corpus.jsonl's documents by id: the title, a blank line, then the body."""
    documents: dict[str, Document] = {}
    for lineno, obj in read_jsonl(corpus, log):
        doc_id, body = check_id(obj.get("_id"), corpus, lineno, "_id", log, "document id"), obj.get("text")
        if doc_id is None:
            continue
        if not isinstance(body, str) or not body.strip():
            log.add(corpus, lineno, "text", "missing or empty document text", "add the text or drop the line")
            continue
        if obj.get("title") is not None and not isinstance(obj.get("title"), str):
            log.add(corpus, lineno, "title", "must be a string", "quote the title")
            continue
        if doc_id in documents:
            log.add(corpus, lineno, "_id", f"duplicate document id {doc_id!r}", "keep one line per document")
            continue
        title = obj.get("title") or ""
        text = f"{title}\n\n{body}" if title else body
        documents[doc_id] = Document(doc_id=doc_id, text=text, title=title or doc_id, path=str(corpus),
                                     sections=parse_sections(text))
    return documents


def _read_queries(qpath: Path, log: ProblemLog) -> dict[str, tuple[int, str]]:
    """queries.jsonl's queries by id: the line and the text."""
    queries: dict[str, tuple[int, str]] = {}
    if not qpath.exists():
        log.add(qpath, 0, "", "queries.jsonl is missing", "BEIR folders need corpus.jsonl, queries.jsonl, qrels/")
        return queries
    for lineno, obj in read_jsonl(qpath, log):
        qid, qtext = check_id(obj.get("_id"), qpath, lineno, "_id", log, "query id"), obj.get("text")
        if qid is None:
            continue
        if not isinstance(qtext, str) or not qtext.strip():
            log.add(qpath, lineno, "text", "query needs a non-empty 'text'", "fix the line")
            continue
        if not check_text(qtext, qpath, lineno, "text", log):
            continue
        if qid in queries:
            log.add(qpath, lineno, "_id", f"duplicate query id {qid!r} (first at line {queries[qid][0]})",
                    "keep one line per query")
            continue
        queries[qid] = (lineno, qtext)
    return queries


def _qrels_line(qrels_path: Path, lineno: int, line: str, log: ProblemLog) -> tuple[str, str, int] | None:
    """One qrels line as (query id, document id, grade); None for the header, a blank line or a
    malformed one (logged)."""
    parts = line.split("\t")
    if not line.strip() or (lineno == 1 and parts[0] == "query-id"):
        return None
    if len(parts) != 3:
        log.add(qrels_path, lineno, "", f"expected 3 tab-separated columns, got {len(parts)}",
                "query-id<TAB>corpus-id<TAB>score")
        return None
    qid, did, score = parts
    level = _grade(score)
    if level is None:
        log.add(qrels_path, lineno, "score", f"not an integer grade: {score[:40]!r}",
                f"use an integer between {-MAX_GRADE} and {MAX_GRADE} (0 = judged not relevant)")
        return None
    return qid, did, level


def _read_qrels(root: Path, split: str, queries: dict[str, tuple[int, str]], documents: dict[str, Document],
                log: ProblemLog) -> dict[str, dict[str, int]]:
    """``qrels/<split>.tsv``: each judged query's relevant documents and their grades (a query judged
    with grade 0 only has none)."""
    qrels_path = root / "qrels" / f"{split}.tsv"
    rel: dict[str, dict[str, int]] = {}
    if not qrels_path.exists():
        have = sorted(p.stem for p in (root / "qrels").glob("*.tsv")) if (root / "qrels").is_dir() else []
        log.add(qrels_path, 0, "", f"qrels for split {split!r} missing",
                f"set dataset.split to one of {have}" if have else "add qrels/<split>.tsv")
        return rel
    qindex, dindex = id_index(queries), id_index(documents)
    for lineno, line in enumerate((read_text(qrels_path, log) or "").splitlines(), start=1):
        judged = _qrels_line(qrels_path, lineno, line, log)
        if judged is None:
            continue
        qid, did, level = judged
        if qid not in queries:
            log.add(qrels_path, lineno, "query-id", f"unknown query {qid!r}" + did_you_mean(qid, queries, qindex),
                    "add it to queries.jsonl")
        elif did not in documents:
            log.add(qrels_path, lineno, "corpus-id", f"unknown document {did!r}"
                    + did_you_mean(did, documents, dindex), "add it to corpus.jsonl")
        elif level > 0:
            rel.setdefault(qid, {})[did] = level
        else:
            rel.setdefault(qid, {})
    return rel


def load_beir(root: Path, split: str, log: ProblemLog) -> tuple[dict[str, Document], list[Question]]:
    """Load documents and the questions judged in ``qrels/<split>.tsv``."""
    documents = _read_corpus(root / "corpus.jsonl", log)
    queries = _read_queries(root / "queries.jsonl", log)
    rel = _read_qrels(root, split, queries, documents, log)
    questions = []
    for qid, (lineno, qtext) in queries.items():
        if qid not in rel:
            continue  # not judged in this split
        spans = tuple(EvidenceSpan(d, 0, len(documents[d].text), grade=g) for d, g in sorted(rel[qid].items()))
        # Judged with grade 0 only: still a question to retrieve for, with no relevant document; it is
        # left out of ranking measures and counted (counts.excluded_no_relevant), never "unanswerable".
        questions.append(Question(qid=qid, question=qtext, answerable=True, evidence=spans, line=lineno))
    return documents, questions
