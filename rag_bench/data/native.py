"""Native dataset layout: docs/*.md|*.txt (and .pdf|.html|.htm|.docx through a parser:
rag_bench.parsing), optional docs.jsonl metadata, questions.jsonl."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from rag_bench.data.beir import MAX_GRADE
from rag_bench.data.evidence import resolve_locator
from rag_bench.data.files import DOCUMENT_SUFFIXES, document_kind
from rag_bench.data.problems import (
    ProblemLog,
    check_id,
    check_text,
    did_you_mean,
    id_index,
    read_jsonl,
    read_text,
)
from rag_bench.domain import Asker, Document, EvidenceSpan, LostEvidence, ParseReport, Question, Turn
from rag_bench.text.markdown import parse_sections
from rag_bench.text.normalize import content_words, squeeze

_DOC_FIELDS = {"doc_id", "title", "version", "effective_at", "status", "tenant", "acl", "source_uri", "canaries",
               "hidden"}
_Q_FIELDS = {"id", "question", "answerable", "expects", "clarify_facts", "evidence", "facts", "answers", "asker",
             "tags", "history", "standalone"}
EXPECTS = ("answer", "refuse", "clarify")  # a question's right outcome (docs/contract.md §3)
_LOC_FIELDS = {"doc_id", "quote", "section", "start", "end", "grade"}
ROLES = ("user", "assistant")  # a history turn's speakers (docs/contract.md §3)
# A question's history is bounded (docs/contract.md §3): a conversation longer than this is a data
# error (a whole chat log pasted into one question), not a turn to evaluate. Public multi-turn data
# (MTRAG-UN) stays under 20 turns and 10,000 characters.
MAX_HISTORY_TURNS = 64
MAX_HISTORY_CHARS = 100_000


@dataclasses.dataclass
class ParseState:
    """What parsing a dataset's .pdf/.html/.docx files produced, collected while it loads: the
    parser's report so far, the ids of parsed documents and of failed ones, each quote's locating
    method (rag_bench.parsing.locate), the ids of questions that lost a quote, whether each
    ``table``-tagged question's rows stayed intact and whether each locator's ``section`` is a
    heading of the parse (docs/metrics.md, ``parse/table_rows_intact`` and ``parse/headings_found``)."""

    report: ParseReport
    parsed: set[str] = dataclasses.field(default_factory=set)
    failed: dict[str, str] = dataclasses.field(default_factory=dict)
    evidence: list[tuple[str, str, str]] = dataclasses.field(default_factory=list)
    lost: list[str] = dataclasses.field(default_factory=list)
    table_rows: list[tuple[str, bool]] = dataclasses.field(default_factory=list)
    headings: dict[tuple[str, str], bool] = dataclasses.field(default_factory=dict)

    def final(self) -> ParseReport:
        """The report with the evidence located, the questions that lost a quote, the table rows
        and the headings."""
        return dataclasses.replace(self.report, evidence=tuple(self.evidence), lost=tuple(self.lost),
                                   table_rows=tuple(self.table_rows), headings=tuple(sorted(self.headings.items())))



def _parse(paths: dict[str, Path], parser: Any) -> tuple[dict[str, tuple[Path, str]], ParseState]:
    """Parse the document files (``doc_id -> path``) with ``parser`` (None: auto)."""
    from rag_bench.parsing.auto import AutoParser
    from rag_bench.parsing.files import cache_store, parse_files

    chosen = parser if parser is not None else AutoParser()
    ids = list(paths)
    outcomes = parse_files([paths[i] for i in ids], chosen, cache_store())
    texts: dict[str, tuple[Path, str]] = {}
    failures: list[tuple[str, str]] = []
    warnings: list[tuple[str, str]] = []
    pages: dict[str, tuple[int, ...]] = {}
    for doc_id, o in zip(ids, outcomes):
        if o.parsed is None:
            failures.append((doc_id, o.reason))
            continue
        texts[doc_id] = (paths[doc_id], o.parsed.text)
        pages[doc_id] = o.parsed.pages
        warnings += [(doc_id, w) for w in o.parsed.warnings]
    report = ParseReport(parser=str(chosen.name), documents=len(ids), parsed=sum(not o.cached for o in outcomes),
                         cache_hits=sum(o.cached for o in outcomes), failures=tuple(failures),
                         seconds=float(sum(o.seconds for o in outcomes)), pages=pages, warnings=tuple(warnings))
    return texts, ParseState(report, parsed=set(texts), failed=dict(failures))


def read_documents(root: Path, log: ProblemLog, parser: Any = None,
                   docs_dir: Path | None = None) -> tuple[dict[str, Document], ParseState | None]:
    """Read docs/ (.md and .txt as they are; .pdf, .html, .htm and .docx through ``parser``, None:
    ``auto``) and merge docs.jsonl metadata; problems go to ``log``. The parse state is None when
    the dataset holds no file to parse. ``docs_dir``: another folder of documents than ``root/docs``
    (``rag-bench draft`` reads a plain folder of documents this way)."""
    docs_dir = root / "docs" if docs_dir is None else docs_dir
    if not docs_dir.is_dir():
        log.add(root, 0, "docs/", "folder docs/ is missing", "put one .md or .txt file per document in docs/")
        return {}, None
    texts: dict[str, tuple[Path, str]] = {}
    to_parse: dict[str, Path] = {}
    on_disk: set[str] = set()  # ids of files that exist, even if unreadable (no double report)
    for path in sorted(p for p in docs_dir.rglob("*") if p.is_file()):
        kind = document_kind(PurePosixPath(path.relative_to(docs_dir).as_posix()))
        if not kind:
            continue
        doc_id = path.relative_to(docs_dir).with_suffix("").as_posix()
        if check_id(doc_id, path, 0, "doc_id", log, "document id (file name)") is None:
            on_disk.add(doc_id)
            continue
        if doc_id in texts or doc_id in to_parse:
            other = (texts[doc_id][0] if doc_id in texts else to_parse[doc_id]).name
            log.add(path, 0, "doc_id", f"duplicate document id {doc_id!r} (also {other})",
                    "keep one file per document id (docs/<id>.md, .txt, .pdf, .html or .docx)")
            continue
        on_disk.add(doc_id)
        if kind == "parsed":
            to_parse[doc_id] = path
            continue
        text = read_text(path, log)
        if text is None:
            continue
        if not text.strip():
            log.add(path, 0, "", "document is empty", "write the document or delete the file")
            continue
        texts[doc_id] = (path, text)
    state = None
    if to_parse:
        parsed, state = _parse(to_parse, parser)
        texts.update(parsed)
        texts = dict(sorted(texts.items(), key=lambda kv: str(kv[1][0])))
    if not texts and not log.problems:
        if state is not None and state.failed:
            failed = "; ".join(f"{d}: {r}" for d, r in sorted(state.failed.items())[:5])
            log.add(docs_dir, 0, "", f"no document could be read ({failed})",
                    "add documents with a text layer, or choose another parser (parser=...)")
        else:
            log.add(docs_dir, 0, "", "no documents (.md or .txt) found", "add at least one document")

    meta: dict[str, dict[str, Any]] = {}
    meta_path = root / "docs.jsonl"
    if meta_path.exists():
        for lineno, obj in read_jsonl(meta_path, log):
            m = _check_doc_meta(meta_path, lineno, obj, log)
            if m is None:
                continue
            doc_id = m["doc_id"]
            if doc_id in meta:
                log.add(meta_path, lineno, "doc_id", f"duplicate entry for document {doc_id!r} "
                        f"(first at line {meta[doc_id]['_line']})", "keep one line per document")
            elif doc_id not in on_disk:
                log.add(meta_path, lineno, "doc_id", f"unknown document {doc_id!r}: no docs/{doc_id}.md"
                        + did_you_mean(doc_id, on_disk), "fix the id or add the document")
            else:
                meta[doc_id] = {**m, "_line": lineno}

    documents = {}
    for doc_id, (path, text) in texts.items():
        m = meta.get(doc_id, {})
        documents[doc_id] = Document(
            doc_id=doc_id, text=text, title=m.get("title") or _title(text, doc_id),
            version=m.get("version"), effective_at=m.get("effective_at"),
            status=m.get("status", "current"), tenant=m.get("tenant"), acl=tuple(m.get("acl", ())),
            source_uri=m.get("source_uri"), path=str(path), sections=parse_sections(text),
            canaries=tuple(m.get("canaries", ())), hidden=tuple(m.get("hidden", ())))
        _check_markers(documents[doc_id], path, meta_path, m.get("_line", 0), log)
    return documents, state


def _title(text: str, doc_id: str) -> str:
    for line in text.splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return doc_id


def _check_doc_meta(path: Path, lineno: int, obj: dict[str, Any], log: ProblemLog) -> dict[str, Any] | None:
    ok = True
    for key in obj.keys() - _DOC_FIELDS:
        log.add(path, lineno, key, f"unknown field {key!r}", f"allowed fields: {', '.join(sorted(_DOC_FIELDS))}")
        ok = False
    if check_id(obj.get("doc_id"), path, lineno, "doc_id", log, "document id") is None:
        return None
    for key in ("title", "version", "effective_at", "tenant", "source_uri"):
        if key in obj and obj[key] is not None and not isinstance(obj[key], str):
            log.add(path, lineno, key, f"must be a string, got {type(obj[key]).__name__}", "quote the value")
            ok = False
    if obj.get("status", "current") not in ("current", "archived"):
        log.add(path, lineno, "status", f"must be 'current' or 'archived', got {obj['status']!r}",
                "mark superseded versions 'archived'")
        ok = False
    acl = obj.get("acl", [])
    if not isinstance(acl, list) or not all(isinstance(g, str) for g in acl):
        log.add(path, lineno, "acl", "must be a list of group names", 'e.g. "acl": ["staff"]')
        ok = False
    elif any(not g.strip() for g in acl):
        log.add(path, lineno, "acl", "empty group name in the ACL", 'name every group, e.g. "acl": ["staff"]; '
                "an empty ACL ([]) lets every member of the tenant read")
        ok = False
    for key in ("canaries", "hidden"):
        ok = _check_marker_list(path, lineno, key, obj.get(key, []), log) and ok
    if isinstance(obj.get("tenant"), str) and not obj["tenant"].strip():
        log.add(path, lineno, "tenant", "empty tenant name", 'name the tenant or leave the key out (no tenant)')
        ok = False
    return obj if ok else None


MIN_CANARY = 6  # a canary shorter than this could occur in an ordinary answer


def _check_marker_list(path: Path, lineno: int, key: str, val: Any, log: ProblemLog) -> bool:
    """docs.jsonl ``canaries`` (the strings planted instructions ask for) and ``hidden`` (text a
    person does not see): lists of non-blank strings, canaries at least MIN_CANARY characters long."""
    example = ('"canaries": ["CANARY-7Q2X"] (a string the planted instruction asks the answer to contain)'
               if key == "canaries" else '"hidden": ["text planted in white, tiny or hidden markup"]')
    if not isinstance(val, list) or not all(isinstance(v, str) for v in val):
        log.add(path, lineno, key, "must be a list of strings", f"e.g. {example}")
        return False
    ok = True
    for i, v in enumerate(val):
        if len(" ".join(v.split())) < (MIN_CANARY if key == "canaries" else 1):
            log.add(path, lineno, f"{key}[{i}]", f"{v!r} is too short to look for"
                    + (f" (a canary needs at least {MIN_CANARY} characters)" if key == "canaries" else ""),
                    f"use a distinctive string no answer would contain by chance, e.g. {example}")
            ok = False
    return ok


def _check_markers(doc: Document, path: Path, meta_path: Path, lineno: int, log: ProblemLog) -> None:
    """A canary or hidden string of a .md/.txt document must be in its text (a typo would measure
    nothing); a parsed document's are looked for in the parse (not finding them is the measure)."""
    if path.suffix.lower() not in DOCUMENT_SUFFIXES:
        return
    text = " ".join(doc.text.split()).casefold()
    squeezed = squeeze(doc.text)  # a canary is found across line breaks (the injection scorer's rule)
    for key, values in (("canaries", doc.canaries), ("hidden", doc.hidden)):
        for i, v in enumerate(values):
            if (squeeze(v) not in squeezed) if key == "canaries" else (" ".join(v.split()).casefold() not in text):
                log.add(meta_path, lineno, f"{key}[{i}]", f"{v!r} does not occur in {path.name}",
                        f"copy the string exactly as {path.name} writes it (case and spacing are ignored)")


def load_questions(path: Path, documents: dict[str, Document], log: ProblemLog,
                   state: ParseState | None = None) -> list[Question]:
    """Read and validate questions.jsonl, resolving every evidence locator."""
    if not path.exists():
        log.add(path, 0, "", "questions.jsonl is missing", "add the golden questions, one JSON object per line")
        return []
    questions: list[Question] = []
    seen: dict[str, int] = {}
    known = id_index(documents)
    for lineno, obj in read_jsonl(path, log):
        raw_id = obj.get("id")
        # Duplicates are checked on the raw id (numbers as their text, so 7 and "7" meet), and a bad
        # first line still claims its id.
        key = str(raw_id) if isinstance(raw_id, (str, int)) and not isinstance(raw_id, bool) else None
        if key is not None and key in seen:
            log.add(path, lineno, "id", f"duplicate question id {raw_id!r} (first at line {seen[key]})",
                    "give every question a unique id")
            continue
        if key is not None:
            seen[key] = lineno
        q = _check_question(path, lineno, obj, documents, log, known, state)
        if q is not None:
            questions.append(q)
    if not questions and not log.problems:
        log.add(path, 0, "", "no questions", "add at least one question")
    return questions


def _str_list(path: Path, lineno: int, obj: dict[str, Any], key: str, log: ProblemLog) -> tuple[str, ...] | None:
    val = obj.get(key, [])
    if not isinstance(val, list) or not all(isinstance(v, str) for v in val):
        log.add(path, lineno, key, "must be a list of strings", f'e.g. "{key}": ["..."]')
        return None
    return tuple(val)


def _check_answerable(path: Path, lineno: int, obj: dict[str, Any], expects: str | None, log: ProblemLog) -> Any:
    """The question's ``answerable`` (as given: not a bool is a problem logged here), checked against
    its ``expects``."""
    # Without "answerable", a valid "expects" says it: refuse is unanswerable, answer and clarify
    # are answerable (a clarify question's evidence is in the corpus; a fact from the asker is missing).
    answerable = obj.get("answerable", None if expects is None else expects != "refuse")
    if not isinstance(answerable, bool):
        log.add(path, lineno, "answerable", f"must be true or false, got {answerable!r}",
                'add "answerable": true (or false for questions the corpus cannot answer)')
    elif expects == "refuse" and answerable:
        log.add(path, lineno, "expects", '"expects": "refuse" on an answerable question',
                'a refusal is right only when the corpus cannot answer: set "answerable": false (and "evidence": '
                '[]), or "expects": "answer"')
    elif expects in ("answer", "clarify") and not answerable:
        log.add(path, lineno, "expects", f'"expects": "{expects}" on an unanswerable question',
                '"answerable": false means the right outcome is the refusal: use "expects": "refuse", or set '
                '"answerable": true with the evidence' + (" the clarified answer rests on" if expects == "clarify"
                                                           else ""))
    return answerable


def _facts_and_answers(path: Path, lineno: int, obj: dict[str, Any],
                       log: ProblemLog) -> tuple[tuple[str, ...] | None, tuple[str, ...] | None]:
    """The question's ``facts`` and ``answers``, each string's text checked."""
    facts = _str_list(path, lineno, obj, "facts", log)
    answers = _str_list(path, lineno, obj, "answers", log)
    for key, values in (("facts", facts), ("answers", answers)):
        for i, v in enumerate(values or ()):
            check_text(v, path, lineno, f"{key}[{i}]", log)
    return facts, answers


def _evidence_list(path: Path, lineno: int, obj: dict[str, Any], answerable: Any, log: ProblemLog) -> list[Any]:
    """The question's ``evidence`` locators ([] when not a list), checked against ``answerable``."""
    raw_ev = obj.get("evidence", [])
    if not isinstance(raw_ev, list):
        log.add(path, lineno, "evidence", "must be a list of locators", 'e.g. [{"doc_id": "..", "quote": ".."}]')
        raw_ev = []
    if answerable is True and not raw_ev:
        log.add(path, lineno, "evidence", "answerable question without evidence",
                "add at least one locator, or set answerable to false")
    if answerable is False and raw_ev:
        log.add(path, lineno, "evidence", "unanswerable question has evidence",
                "remove the evidence or set answerable to true")
    return raw_ev


def _locator_grade(path: Path, lineno: int, field: str, loc: Any, log: ProblemLog) -> int | None:
    """The locator's relevance grade (None: not an object, or a bad grade; the problem is logged)."""
    if not isinstance(loc, dict):
        log.add(path, lineno, field, "must be an object", 'e.g. {"doc_id": "..", "quote": ".."}')
        return None
    for key in sorted(loc.keys() - _LOC_FIELDS):
        log.add(path, lineno, f"{field}.{key}", f"unknown field {key!r}",
                f"allowed: {', '.join(sorted(_LOC_FIELDS))}")
    grade = loc.get("grade", 1)
    if isinstance(grade, bool) or not isinstance(grade, int) or not 1 <= grade <= MAX_GRADE:
        log.add(path, lineno, f"{field}.grade", f"grade must be an integer in [1, {MAX_GRADE}], got {grade!r}",
                "omit it (grade 1) or give the relevance level, e.g. 2 for highly relevant")
        return None
    return grade


@dataclasses.dataclass
class _Located:
    """What a question's locators found: the spans, the quotes this parse lost (kept as gold:
    Question.lost) and, for a table question's quotes of parsed documents, each row intact in the parse."""

    spans: list[EvidenceSpan] = dataclasses.field(default_factory=list)
    lost: list[LostEvidence] = dataclasses.field(default_factory=list)
    rows: list[bool] = dataclasses.field(default_factory=list)


def _check_locator(path: Path, lineno: int, i: int, loc: Any, qid: Any, asker: Asker | None,
                   documents: dict[str, Document], known: dict[str, list[str]] | None, state: ParseState | None,
                   found: _Located, log: ProblemLog) -> None:
    """Locate ``evidence[i]`` into ``found`` (a span, a lost quote, a table row), or log why not."""
    field = f"evidence[{i}]"
    grade = _locator_grade(path, lineno, field, loc, log)
    if grade is None:
        return
    doc_id = loc.get("doc_id")
    if state is not None and isinstance(doc_id, str) and doc_id in state.failed:
        found.rows.append(_parsed_quote(state, str(qid), doc_id, None, loc)[1])  # the document has no parse
        found.lost.append(LostEvidence(doc_id, grade, "failed"))
        return
    if not isinstance(doc_id, str) or doc_id not in documents:
        some = ", ".join(sorted(documents)[:10])
        log.add(path, lineno, f"{field}.doc_id", f"unknown document {doc_id!r}"
                + did_you_mean(doc_id, documents, known), f"use an id of a file in docs/ (e.g. {some})")
        return
    doc = documents[doc_id]
    quote = loc.get("quote")
    span: EvidenceSpan | None
    if state is not None and doc_id in state.parsed and isinstance(quote, str) and quote.strip():
        span, intact = _parsed_quote(state, str(qid), doc_id, doc, loc)
        found.rows.append(intact)
        if span is None:
            found.lost.append(LostEvidence(doc_id, grade, "none"))
            return
        sub, message, hint = "", "", ""
    else:
        span, sub, message, hint = resolve_locator(doc, loc)
    if span is None:
        log.add(path, lineno, f"{field}.{sub}" if sub else field, message, hint)
        return
    if doc.archived:
        log.add(path, lineno, f"{field}.doc_id", f"evidence in archived document {doc_id!r}",
                "point at the current version; archived versions are excluded from retrieval")
    if not doc.readable_by(asker):
        log.add(path, lineno, f"{field}.doc_id", f"the asker may not read document {doc_id!r} "
                f"(acl {list(doc.acl)}, tenant {doc.tenant!r})",
                "such a question is unanswerable for this asker: set answerable false, evidence []")
    found.spans.append(dataclasses.replace(span, grade=grade))


def _check_question(path: Path, lineno: int, obj: dict[str, Any], documents: dict[str, Document],
                    log: ProblemLog, known: dict[str, list[str]] | None = None,
                    state: ParseState | None = None) -> Question | None:
    n_before = len(log.problems)
    for key in sorted(obj.keys() - _Q_FIELDS):
        log.add(path, lineno, key, f"unknown field {key!r}", f"allowed fields: {', '.join(sorted(_Q_FIELDS))}")
    qid = check_id(obj.get("id"), path, lineno, "id", log, "question id")
    text = obj.get("question")
    if not isinstance(text, str) or not text.strip():
        log.add(path, lineno, "question", "missing or empty", 'add "question": "..."')
    else:
        check_text(text, path, lineno, "question", log)
    expects, clarify_facts = _check_expects(path, lineno, obj, log)
    answerable = _check_answerable(path, lineno, obj, expects, log)
    facts, answers = _facts_and_answers(path, lineno, obj, log)
    tags = _str_list(path, lineno, obj, "tags", log)
    asker = _check_asker(path, lineno, obj.get("asker"), log)
    history = _check_history(path, lineno, obj.get("history", []), log)
    standalone = _check_standalone(path, lineno, obj, log)
    found = _Located()
    for i, loc in enumerate(_evidence_list(path, lineno, obj, answerable, log)):
        _check_locator(path, lineno, i, loc, qid, asker, documents, known, state, found, log)
    if len(log.problems) > n_before:
        return None
    if state is not None and found.rows and "table" in (tags or ()):
        state.table_rows.append((str(qid), all(found.rows)))
    if state is not None and found.lost:
        state.lost.append(str(qid))  # evaluated with what was located; the rest counts as lost (parsing)
    return Question(qid=str(qid), question=str(text), answerable=bool(answerable), evidence=tuple(found.spans),
                    facts=facts or (), answers=answers or (), asker=asker, tags=tags or (), line=lineno,
                    expects=expects, clarify_facts=clarify_facts, lost=tuple(found.lost), history=history,
                    standalone=standalone)


def _locate_parsed(doc: Document, quote: str, section: Any = None) -> tuple[EvidenceSpan | None, str] | None:
    """A quote in a parsed document (exact, normalised, bounded fuzzy) and the method that found it:
    inside the locator's section when the parse kept exactly one heading of that name and the quote
    is there, else anywhere in the document (a parser that lost the headings still finds it).
    ``(None, OVER_BOUND)`` when the fuzzy search's work bound ran out before it was found."""
    from rag_bench.data.evidence import find_sections
    from rag_bench.parsing.locate import OVER_BOUND, locate
    from rag_bench.text.markdown import heading_path_at

    found = None
    if isinstance(section, str) and section.strip():
        secs = find_sections(doc, section) or [  # the parse's heading with its number ("2.4 Library Notes")
            s for s in doc.sections if s.heading_path and heading_name(s.heading_path[-1]) ==
            heading_name(section.split(">")[-1])]
        if len(secs) == 1:
            lo, hi = doc.section_span(secs[0])
            inner = locate(doc.text[lo:hi], quote)
            if inner is not None and inner[2] != OVER_BOUND:
                found = (inner[0] + lo, inner[1] + lo, inner[2])
    found = found or locate(doc.text, quote)
    if found is None:
        return None
    start, end, method = found
    if method == OVER_BOUND:
        return None, method
    return EvidenceSpan(doc.doc_id, start, end, heading_path_at(doc.sections, start)), method


def _parsed_quote(state: ParseState, qid: str, doc_id: str, doc: Document | None,
                  loc: dict[str, Any]) -> tuple[EvidenceSpan | None, bool]:
    """A locator of a parsed document (``doc``; None: it failed to parse) located in the parse and
    recorded in ``state``: its method, and whether its ``section`` is a heading of the parse. The
    span (None: lost) and whether, as a table row, it is intact (:func:`row_intact`)."""
    section = loc.get("section")
    found = None if doc is None else _locate_parsed(doc, str(loc.get("quote")), section)
    state.evidence.append((qid, doc_id, "failed" if doc is None else "none" if found is None else found[1]))
    if isinstance(section, str) and section.strip():
        state.headings[(doc_id, section)] = doc is not None and heading_found(doc, section)
    if doc is None or found is None:
        return None, False
    span, method = found
    if span is None:  # not located within the fuzzy work bound: lost, and said so (parse scorer)
        return None, False
    return span, row_intact(doc.text, span, method)


def row_intact(text: str, span: EvidenceSpan, method: str) -> bool:
    """Whether a table row's quote (its cells in reading order) sits in one block of the parse: found
    exactly or normalised (each cell still a word of its own: a fuzzy match of glued cells is not
    intact) and within one line -- a Markdown table row, or a line of text (docs/metrics.md)."""
    return method in ("exact", "normalised") and "\n" not in text[span.start:span.end].strip()


# A heading's number as documents write it, before its name: "2", "2.4", "2.4.1.", "3)", "A.1", "a)", "IV."
# (read on the normalised, case-folded heading; a year, "2024 results", is part of the name).
_HEADING_NUMBER = re.compile(r"^(?!\d{4}\s)(?:\d+(?:\.\d+)*[.)]?|[a-z](?:\.\d+)+\.?|[a-z][.)]|[ivxlc]+[.)])\s+(?=\S)")


def heading_name(heading: str) -> str:
    """A heading as a locator's ``section`` names it: normalised (rag_bench.parsing.locate.normalise:
    emphasis, case and spacing aside) and without its number ("2.4 Library Notes" is "library notes").

    >>> heading_name("**2.4 Library Notes**"), heading_name("IV. Returns"), heading_name("2024 results")
    ('library notes', 'returns', '2024 results')
    >>> heading_name("A guide to returns"), heading_name("3) Refunds")
    ('a guide to returns', 'refunds')
    """
    from rag_bench.parsing.locate import normalise

    name = normalise(heading)[0].strip()
    rest = _HEADING_NUMBER.sub("", name, count=1)
    return rest if re.search(r"[^\W\d_]", rest) else name  # "2.4" alone stays its own name


def heading_found(doc: Document, section: str) -> bool:
    """Whether a locator's ``section`` name (its last ``>`` part) is a heading of the parse: compared by
    :func:`heading_name` (normalised, a heading's number aside: parsers keep "2.4 Library Notes")."""
    want = heading_name(section.split(">")[-1])
    return bool(want) and any(s.heading_path and heading_name(s.heading_path[-1]) == want for s in doc.sections)


def _check_expects(path: Path, lineno: int, obj: dict[str, Any], log: ProblemLog) -> tuple[str | None, tuple[str, ...]]:
    """The question's ``expects`` (None: not given, or reported) and ``clarify_facts`` (the facts a
    clarifying question must ask for: only with ``"expects": "clarify"``; optional there -- without it
    any question back that asserts nothing unsupported is right, docs/metrics.md)."""
    expects = obj.get("expects")
    if "expects" in obj and expects not in EXPECTS:
        log.add(path, lineno, "expects", f"must be one of {', '.join(EXPECTS)}, got {expects!r}",
                'e.g. "expects": "clarify" for a question whose answer depends on a fact the asker did not give; '
                "leave it out for the default (answer if answerable, refuse if not)")
        expects = None
    if "clarify_facts" not in obj:
        return expects, ()  # clarify without facts: any question back that asserts nothing unsupported
    raw = obj["clarify_facts"]
    if not isinstance(raw, list) or not raw or not all(isinstance(v, str) for v in raw):
        log.add(path, lineno, "clarify_facts", "must be a non-empty list of strings",
                'e.g. "clarify_facts": ["overnight stay", "airline confirmed"]')
        return expects, ()
    if expects != "clarify":
        log.add(path, lineno, "clarify_facts", f'"clarify_facts" on a question that expects {expects or "the default"}'
                " (not clarify)", 'add "expects": "clarify", or remove "clarify_facts"')
    for i, fact in enumerate(raw):
        if not check_text(fact, path, lineno, f"clarify_facts[{i}]", log):
            continue
        if not content_words(fact):
            log.add(path, lineno, f"clarify_facts[{i}]", f"{fact!r} has no content word to look for",
                    "name the fact with its content words, e.g. \"overnight stay\" (stopwords such as 'is' or 'the' "
                    "are not matched)")
    return expects, tuple(raw)


def json_kind(value: Any) -> str:
    """What a JSON value is, as a message names it (the reader's dict and list types aside).

    >>> json_kind({}), json_kind("x"), json_kind(True), json_kind(3), json_kind(None)
    ('an object', 'a string', 'true/false', 'a number', 'null')
    """
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "true/false"
    return "null" if value is None else "a number"


_TURN_EXAMPLE = '[{"role": "user", "content": "Do you ship abroad?"}, {"role": "assistant", "content": "Yes, ..."}]'


def _check_history(path: Path, lineno: int, raw: Any, log: ProblemLog) -> tuple[Turn, ...]:
    """A question's ``history``: the conversation before it, oldest first, a list of ``{"role":
    "user"|"assistant", "content": str}``. Roles alternate and the last turn is the assistant's
    (the question is the next user turn); every content is non-blank text; at most
    :data:`MAX_HISTORY_TURNS` turns and :data:`MAX_HISTORY_CHARS` characters of content. Problems
    go to ``log`` (the result is then not used)."""
    if not isinstance(raw, list):
        log.add(path, lineno, "history", f"must be a list of turns, got {json_kind(raw)}",
                f"write the earlier turns oldest first, e.g. \"history\": {_TURN_EXAMPLE}, or leave the key out")
        return ()
    if len(raw) > MAX_HISTORY_TURNS:
        log.add(path, lineno, "history", f"{len(raw)} turns, more than {MAX_HISTORY_TURNS}",
                f"keep the last {MAX_HISTORY_TURNS} turns (the ones the question follows)")
        return ()
    turns: list[Turn] = []
    ok = True
    for i, item in enumerate(raw):
        field = f"history[{i}]"
        if not isinstance(item, dict):
            log.add(path, lineno, field, f"must be an object, got {json_kind(item)}",
                    'e.g. {"role": "user", "content": "Do you ship abroad?"}')
            ok = False
            continue
        for key in sorted(item.keys() - {"role", "content"}):
            log.add(path, lineno, f"{field}.{key}", f"unknown field {key!r}", "allowed: role, content")
            ok = False
        role, content = item.get("role"), item.get("content")
        if role not in ROLES:
            log.add(path, lineno, f"{field}.role", f"must be one of {', '.join(ROLES)}, got {role!r}",
                    'write "user" for what the asker said and "assistant" for the replies')
            ok = False
        if not isinstance(content, str) or not content.strip():
            got = "empty" if isinstance(content, str) else f"got {json_kind(content)}"
            log.add(path, lineno, f"{field}.content", f"must be non-empty text, {got}",
                    "write what was said in the turn, or remove the turn")
            ok = False
        elif not check_text(content, path, lineno, f"{field}.content", log):
            ok = False
        if role in ROLES and isinstance(content, str):
            turns.append(Turn(str(role), content))
    if not ok:
        return ()
    for i, (before, turn) in enumerate(zip(turns, turns[1:]), 1):
        if before.role == turn.role:
            log.add(path, lineno, f"history[{i}].role", f"two {turn.role} turns in a row (history[{i - 1}] and "
                    f"history[{i}])", "roles alternate: join the two turns into one, or add the turn between them")
            return ()
    if turns and turns[-1].role != "assistant":
        log.add(path, lineno, f"history[{len(turns) - 1}].role", "the history ends with a user turn",
                "the question is the next user turn: end the history with the assistant's reply, or make that last "
                "user turn the question")
        return ()
    chars = sum(len(t.content) for t in turns)
    if chars > MAX_HISTORY_CHARS:
        log.add(path, lineno, "history", f"{chars} characters of content, more than {MAX_HISTORY_CHARS}",
                "keep the turns the question follows and shorten long replies")
        return ()
    return tuple(turns)


def _check_standalone(path: Path, lineno: int, obj: dict[str, Any], log: ProblemLog) -> str | None:
    """A question's ``standalone`` form (optional): non-blank text, what the question means without
    its history (written by people)."""
    if "standalone" not in obj or obj["standalone"] is None:
        return None
    raw = obj["standalone"]
    if not isinstance(raw, str) or not raw.strip():
        log.add(path, lineno, "standalone", "must be non-empty text" + ("" if isinstance(raw, str) else
                                                                       f", got {json_kind(raw)}"),
                'write the question as it reads without the history, e.g. "standalone": "Does Acme ship to Canada?", '
                "or leave the key out")
        return None
    return raw if check_text(raw, path, lineno, "standalone", log) else None


def _check_asker(path: Path, lineno: int, raw: Any, log: ProblemLog) -> Asker | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        log.add(path, lineno, "asker", "must be an object", '{"tenant": "acme", "groups": ["customers"]}')
        return None
    for key in sorted(raw.keys() - {"tenant", "groups"}):
        log.add(path, lineno, f"asker.{key}", f"unknown field {key!r}", "allowed: tenant, groups")
    tenant = raw.get("tenant")
    if tenant is not None and not isinstance(tenant, str):
        log.add(path, lineno, "asker.tenant", "must be a string", '"tenant": "acme"')
    elif isinstance(tenant, str) and not tenant.strip():
        log.add(path, lineno, "asker.tenant", f"empty tenant name {tenant!r}",
                'name the tenant ("tenant": "acme") or leave the key out for an asker of every tenant')
    groups = raw.get("groups", [])
    if not isinstance(groups, list) or not all(isinstance(g, str) for g in groups):
        log.add(path, lineno, "asker.groups", "must be a list of group names", '"groups": ["customers"]')
        groups = []
    for i, g in enumerate(groups):
        if not g.strip():
            log.add(path, lineno, f"asker.groups[{i}]", f"empty group name {g!r}",
                    'remove it; an asker in no group is "groups": []')
    return Asker(tenant if isinstance(tenant, str) else None, tuple(groups))


MAX_MANIFEST_BYTES = 64 << 10
_MANIFEST_STRINGS = ("name", "description", "license", "source")


def read_manifest(root: Path, log: ProblemLog) -> dict[str, Any]:
    """dataset.yaml (optional): name, description, license, source (strings); other keys are kept.

    YAML aliases are refused: a few lines of nested aliases (a "billion laughs") expand to
    gigabytes once the values are printed or logged as MLflow tags.
    """
    path = root / "dataset.yaml"
    if not path.exists():
        return {}
    if path.stat().st_size > MAX_MANIFEST_BYTES:
        log.add(path, 0, "", f"dataset.yaml is larger than {MAX_MANIFEST_BYTES >> 10} KiB",
                "keep name, description, license and source short; put documentation in a README")
        return {}
    text = read_text(path, log)
    if text is None:
        return {}
    try:
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            if isinstance(event, yaml.AliasEvent):
                line = event.start_mark.line + 1 if event.start_mark else 0
                log.add(path, line, "", "YAML aliases (*name) are not allowed in dataset.yaml",
                        "write the values out in full")
                return {}
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        log.add(path, mark.line + 1 if mark else 0, "", f"invalid YAML: {exc}", "fix the YAML syntax")
        return {}
    if not isinstance(data, dict):
        log.add(path, 1, "", "must be a mapping (name: ..., license: ...)", "write key: value lines")
        return {}
    for key in _MANIFEST_STRINGS:
        if key in data and data[key] is not None and not isinstance(data[key], str):
            log.add(path, 0, key, f"must be a string, got {type(data[key]).__name__}", f"write {key}: some text")
    name = data.get("name")
    if isinstance(name, str) and (len(name) > 200 or "\n" in name):
        log.add(path, 0, "name", "name must be one line of at most 200 characters", "shorten it")
    return data
