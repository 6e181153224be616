"""BEIR layout: corpus.jsonl, queries.jsonl, qrels/<split>.tsv (document-level relevance).

BEIR has no spans: a relevant document's evidence is the whole document text, so chunk relevance
reduces to "the chunk comes from a relevant document" (the overlap rule with a span that contains
the chunk). A document's text is its title, a blank line, then its body, as BEIR models see it.
"""

from __future__ import annotations

from pathlib import Path

from rag_bench.data.markdown import parse_sections
from rag_bench.data.problems import ProblemLog, read_jsonl
from rag_bench.records import Document, EvidenceSpan, Question


def is_beir(root: Path) -> bool:
    """A folder is BEIR when it has corpus.jsonl and no docs/ folder."""
    return (root / "corpus.jsonl").exists() and not (root / "docs").is_dir()


def load_beir(root: Path, split: str, log: ProblemLog) -> tuple[dict[str, Document], list[Question]]:
    """Load documents and the questions judged in ``qrels/<split>.tsv``."""
    documents: dict[str, Document] = {}
    corpus = root / "corpus.jsonl"
    for lineno, obj in read_jsonl(corpus, log):
        doc_id, body = obj.get("_id"), obj.get("text")
        if not isinstance(doc_id, (str, int)) or str(doc_id).strip() == "" or any(c.isspace() for c in str(doc_id)):
            log.add(corpus, lineno, "_id", f"missing or invalid id {doc_id!r}", "ids are non-empty, without spaces")
            continue
        if not isinstance(body, str) or not body.strip():
            log.add(corpus, lineno, "text", "missing or empty document text", "add the text or drop the line")
            continue
        doc_id = str(doc_id)  # type: ignore[assignment]  # int ids are valid BEIR
        if doc_id in documents:
            log.add(corpus, lineno, "_id", f"duplicate document id {doc_id!r}", "keep one line per document")
            continue
        title = obj.get("title") or ""
        text = f"{title}\n\n{body}" if title else body
        documents[doc_id] = Document(doc_id=doc_id, text=text, title=title or doc_id, path=str(corpus),
                                     sections=parse_sections(text))

    queries: dict[str, tuple[int, str]] = {}
    qpath = root / "queries.jsonl"
    if not qpath.exists():
        log.add(qpath, 0, "", "queries.jsonl is missing", "BEIR folders need corpus.jsonl, queries.jsonl, qrels/")
    else:
        for lineno, obj in read_jsonl(qpath, log):
            qid, qtext = obj.get("_id"), obj.get("text")
            if qid is None or not isinstance(qtext, str) or not qtext.strip():
                log.add(qpath, lineno, "_id/text", "query needs '_id' and non-empty 'text'", "fix the line")
                continue
            if str(qid) in queries:
                log.add(qpath, lineno, "_id", f"duplicate query id {qid!r}", "keep one line per query")
                continue
            queries[str(qid)] = (lineno, qtext)

    qrels_path = root / "qrels" / f"{split}.tsv"
    rel: dict[str, list[str]] = {}
    if not qrels_path.exists():
        have = sorted(p.stem for p in (root / "qrels").glob("*.tsv")) if (root / "qrels").is_dir() else []
        log.add(qrels_path, 0, "", f"qrels for split {split!r} missing",
                f"set dataset.split to one of {have}" if have else "add qrels/<split>.tsv")
    else:
        for lineno, line in enumerate(qrels_path.read_text(encoding="utf-8").splitlines(), start=1):
            parts = line.split("\t")
            if not line.strip() or (lineno == 1 and parts[0] == "query-id"):
                continue
            if len(parts) != 3:
                log.add(qrels_path, lineno, "", f"expected 3 tab-separated columns, got {len(parts)}",
                        "query-id<TAB>corpus-id<TAB>score")
                continue
            qid, did, score = parts
            try:
                level = int(float(score))
            except ValueError:
                log.add(qrels_path, lineno, "score", f"not a number: {score!r}", "use an integer grade")
                continue
            if qid not in queries:
                log.add(qrels_path, lineno, "query-id", f"unknown query {qid!r}", "add it to queries.jsonl")
            elif did not in documents:
                log.add(qrels_path, lineno, "corpus-id", f"unknown document {did!r}", "add it to corpus.jsonl")
            elif level > 0:
                rel.setdefault(qid, []).append(did)
            else:
                rel.setdefault(qid, [])

    questions = []
    for qid, (lineno, qtext) in queries.items():
        if qid not in rel:
            continue  # not judged in this split
        spans = tuple(EvidenceSpan(d, 0, len(documents[d].text)) for d in sorted(rel[qid]))
        questions.append(Question(qid=qid, question=qtext, answerable=bool(spans), evidence=spans, line=lineno))
    return documents, questions
