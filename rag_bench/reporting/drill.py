"""The report's per-question drill-down data: what each cell retrieved and answered, and why it
was labelled as it was; the answer's claims with their verdicts and the passage window each
verdict rests on (:mod:`rag_bench.reporting.claims_view`).

Written as small JavaScript files beside the page (``drill/<cell_id>.js``, loaded when a cell is
opened) so the report opens from disk with no server: browsers refuse ``fetch`` of local files
but load local scripts. Passage texts and questions are stored once (``drill/passages.js``,
``drill/questions.js``) and referenced by number, so a sweep of many chunkers over the same
corpus does not repeat them per cell. Every text (questions, answers, passages, references) is stored with its control and
bidirectional characters made visible (:func:`rag_bench.untrusted.visible`): an U+202E in an
answer would make it read reversed. Texts come from the run each cell stored
(``question-runs.jsonl``: the documents as the cell's parser read them -- a chunk's offsets index
that text -- its questions and the parse report), never from the dataset parsed again (reports never
recompute); a cell that stored no run has the context texts kept in records.parquet stand in and
the rest shows ids only. For evidence in a parsed document (.pdf,
.html, .docx) each cell's rows also carry the parsed text around it: the located span, its page
from the parse's page map and how the quote was located (exact, normalised, fuzzy), and the quotes
this parse did not find.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rag_bench.cells import Cell
from rag_bench.errors import RagBenchError
from rag_bench.evaluation import measures, run_io
from rag_bench.evaluation.scorers import query as query_scorer
from rag_bench.parsing.base import page_at
from rag_bench.reporting import claims_view
from rag_bench.untrusted import visible

log = logging.getLogger(__name__)
MAX_PASSAGE_CHARS = 4000
MAX_ANSWER_CHARS = 4000
MAX_RANKED = 20  # ranked passages kept per question (at least pipeline.k); the first relevant rank is always shown
PARSE_WINDOW = 240  # characters of the parse shown either side of a located evidence span
NOT_LOCATED = {"none": "not found in this parse", "failed": "the document could not be parsed"}


_plain = claims_view.plain  # JSON-ready values (one definition, beside the claims it also serves)


class Passages:
    """Distinct passage texts, numbered in order of first use."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self._index: dict[tuple[str, ...], int] = {}

    def add(self, key: tuple[str, ...], text: str) -> int:
        if key not in self._index:
            self._index[key] = len(self.texts)
            self.texts.append(visible(text[:MAX_PASSAGE_CHARS]))
        return self._index[key]


class Corpus:
    """The dataset each cell ran on, as the cell saw it: read from the run the cell stored
    (:data:`~rag_bench.evaluation.run_io.FILE`: its documents as its parser read them, its
    questions and the parse report), never parsed again; one object per dataset version."""

    def __init__(self) -> None:
        self._loaded: dict[str, Any] = {}

    def get(self, cell: Cell) -> Any:
        """The cell's dataset, None when the cell stored no readable run (the records' texts stand in)."""
        key = str(cell.path)
        if key not in self._loaded:
            self._loaded[key] = None
            try:
                self._loaded[key] = run_io.read_dataset(cell.path / run_io.FILE)
            except (OSError, ValueError, UnicodeDecodeError) as exc:
                log.warning("report: cell %s stored no readable run (%s); the drill-down shows the texts its records "
                            "keep", cell.path.name, str(exc)[:200])
        return self._loaded[key]


def parsed_evidence(dataset: Any, question: Any) -> list[dict[str, Any]]:
    """The question's evidence in parsed documents, each ``{doc, method, page, pages, text: [before,
    span, after]}`` (the parse around the located span), and each quote this parse did not locate
    ``{doc, method: none|failed, why}``; ``[]`` when the dataset holds no parsed document."""
    report = getattr(dataset, "parse", None)
    if report is None or question is None:
        return []
    entries = [(doc, m) for qid, doc, m in report.evidence if qid == question.qid]
    methods: dict[str, list[str]] = {}
    for doc, m in entries:
        if m not in NOT_LOCATED:
            methods.setdefault(doc, []).append(m)
    out: list[dict[str, Any]] = []
    for span in question.evidence:
        if span.doc_id not in report.pages or span.doc_id not in dataset.documents:
            continue  # a .md/.txt document: read as it is, nothing parsed
        text = dataset.documents[span.doc_id].text
        starts = report.pages.get(span.doc_id) or ()
        queue = methods.get(span.doc_id) or []
        method = queue.pop(0) if queue else "locator"  # start/end or section locator: no quote to locate
        lo, hi = max(0, span.start - PARSE_WINDOW), min(len(text), span.end + PARSE_WINDOW)
        out.append({"doc": span.doc_id, "method": method,
                    "page": page_at(starts, span.start), "pages": len(starts),
                    "text": [visible(("\u2026" if lo else "") + text[lo:span.start]), visible(text[span.start:span.end]),
                             visible(text[span.end:hi] + ("\u2026" if hi < len(text) else ""))]})
    failures = dict(report.failures)
    for doc, m in entries:
        if m in NOT_LOCATED:
            why = NOT_LOCATED[m] + (f" ({failures[doc]})" if doc in failures else "")
            out.append({"doc": doc, "method": m, "why": visible(why)})
    return out


def questions(cells: Sequence[Cell], corpus: Corpus) -> dict[str, Any]:
    """``{qid: {question, answerable, tags, answers, facts, evidence: [{doc, text}]}}`` from the
    first cell's dataset (every cell of a report is over the same questions)."""
    out: dict[str, Any] = {}
    for cell in cells:
        dataset = corpus.get(cell)
        if dataset is None:
            continue
        for q in dataset.questions:
            if q.qid in out:
                continue
            evidence = []
            for e in q.evidence:
                doc = dataset.documents.get(e.doc_id)
                text = doc.text[e.start:e.end] if doc is not None and e.end is not None else ""
                evidence.append({"doc": e.doc_id, "text": visible(text[:MAX_PASSAGE_CHARS]),
                                 "grade": getattr(e, "grade", 1)})
            out[q.qid] = {"question": visible(q.question), "answerable": q.answerable, "tags": list(q.tags),
                          "answers": [visible(a) for a in q.answers], "facts": [visible(f) for f in q.facts],
                          "evidence": evidence, "history": [[t.role, visible(t.content)] for t in q.history]}
        break
    if not out and cells:  # no dataset: the records still hold the questions
        r = cells[0].records
        for row in r.itertuples(index=False):
            out[row.qid] = {"question": visible(str(row.question)), "answerable": bool(row.answerable),
                            "tags": _plain(row.tags), "answers": [], "facts": [], "evidence": [],
                            "history": [[str(t["role"]), visible(str(t["content"]))]
                                        for t in _plain(getattr(row, "history", None)) or []]}
    return out


def cell_rows(cell: Cell, passages: Passages, corpus: Corpus) -> list[dict[str, Any]]:
    """One entry per question of ``cell``: label, ranked passages ``[passage, chunk, score, grade]``,
    the context's chunk ids, the answer with each citation checked against the grades, judge
    scores and the question's measures."""
    r = cell.records
    dataset = corpus.get(cell)
    k = int((cell.config.get("pipeline") or {}).get("k") or 5)
    shown = [m for m in (measures.HIT.at(k), measures.PRIMARY, measures.CORRECT, measures.TOKEN_F1)
             if m.column in r.columns]
    judge_cols = [c for c in r.columns if c.startswith(measures.JUDGE_PREFIX)]
    by_qid = {q.qid: q for q in dataset.questions} if dataset is not None else {}
    parser = str(getattr(getattr(dataset, "parse", None), "parser", "") or "")
    query_name = str((cell.config.get("query") or {}).get("name") or "none")
    rows = []
    for rec in r.to_dict(orient="records"):
        ids, scores, grades = _listed(rec, "chunk_ids"), _listed(rec, "scores"), _grades(rec)
        context_ids, context_texts = _listed(rec, "context_ids"), _listed(rec, "context_texts")
        answer = rec.get("answer")
        rows.append({
            "qid": rec["qid"], "label": rec.get("failure"),
            "ranked": _ranked(rec, dataset, passages, k, dict(zip(context_ids, context_texts))),
            "context": context_ids,
            "context_extra": [passages.add(("chunk", c, t[:64]), t) for c, t in zip(context_ids, context_texts)
                              if c not in ids],
            "answer": None if answer is None else visible(str(answer)[:MAX_ANSWER_CHARS]),
            "refused": _plain(rec.get("refused")),
            "citations": _citations(rec, context_ids, {cid: g for cid, _s, g in zip(ids, scores, grades)}),
            "error": _error(rec),
            "judge": {c[len(measures.JUDGE_PREFIX):]: _plain(rec[c]) for c in judge_cols},
            # each claim with its verdict and the marked window it rests on (claims_view)
            "claims": claims_view.shown(claims_view.records_claims(rec.get("claims")), context_texts),
            "measures": {m.name: _plain(rec.get(m.column)) for m in shown},
            "first_relevant": _plain(rec.get("first_relevant_rank")), "retrieved": len(ids),
            # the parse around each evidence span of a parsed document (page, how the quote was located)
            "parsed": parsed_evidence(dataset, by_qid.get(str(rec["qid"]))), "parser": parser,
            # what the query transform made of the question: the texts searched, what it wrote, its fallback
            "query": _query(rec, query_name),
        })
    return rows


def _error(rec: dict[str, Any]) -> str | None:
    """The row's generation error, else its answer's parse error (None: neither)."""
    error = rec.get("generation_error") or rec.get("parse_error")
    return visible(str(error)) if error else None


def _listed(rec: dict[str, Any], column: str) -> list[Any]:
    """A list column of a records row as a plain list (``[]`` when absent)."""
    return list(_plain(rec.get(column)) or [])


def _grades(rec: dict[str, Any]) -> list[Any]:
    """The ranked chunks' grades; a row without ``grades`` has its ``relevant`` flags as 0/1."""
    if rec.get("grades") is not None:
        return list(_plain(rec.get("grades")))
    return [int(bool(x)) for x in (_plain(rec.get("relevant")) or [])]


def _ranked(rec: dict[str, Any], dataset: Any, passages: Passages, k: int,
            by_id: dict[Any, str]) -> list[list[Any]]:
    """The row's ranked passages ``[passage, chunk, score, grade]``, at most ``max(MAX_RANKED, k)``; a
    chunk's text from the stored run's document when its span is known, else the records' context text."""
    ids, scores, grades, spans = _listed(rec, "chunk_ids"), _listed(rec, "scores"), _grades(rec), _listed(
        rec, "chunk_spans")
    ranked = []
    for i, cid in enumerate(ids[:max(MAX_RANKED, k)]):
        span = spans[i] if i < len(spans) and isinstance(spans[i], dict) else None
        text = _span_text(dataset, span) or by_id.get(cid, "")
        key = (span["doc_id"], str(span["start"]), str(span["end"])) if span else ("chunk", cid, text[:64])
        score = scores[i] if i < len(scores) else None
        ranked.append([passages.add(key, text) if text else None, cid,
                       None if score is None else float(f"{score:.6g}"), grades[i] if i < len(grades) else None])
    return ranked


def _span_text(dataset: Any, span: dict[str, Any] | None) -> str:
    """The text of a chunk's span in the stored run's document ("" when either is unknown)."""
    if span is not None and dataset is not None and span.get("doc_id") in dataset.documents:
        return str(dataset.documents[span["doc_id"]].text[int(span["start"]):int(span["end"])])
    return ""


def _citations(rec: dict[str, Any], context_ids: list[Any], grade_of: dict[Any, Any]) -> list[dict[str, Any]]:
    """Each citation ``[n]`` of the answer: the context chunk it names and whether that chunk is relevant."""
    citations = []
    for n in _listed(rec, "citations"):
        cid = context_ids[n - 1] if isinstance(n, int) and 1 <= n <= len(context_ids) else None
        citations.append({"n": n, "chunk": cid, "relevant": bool(grade_of.get(cid)) if cid else None})
    return citations


def _query(rec: dict[str, Any], name: str) -> dict[str, Any] | None:
    """The query transform's part of a drill-down row (None: the question was searched as it is)."""
    texts = _plain(rec.get(query_scorer.QUERIES))
    if texts is None:
        return None
    reason = rec.get(query_scorer.FALLBACK)
    firsts = list(_plain(rec.get(query_scorer.TEXT_FIRST)) or [])
    tops = list(_plain(rec.get(query_scorer.TEXT_TOP)) or [])
    return {"name": name, "texts": [visible(str(t)) for t in texts],
            # what each text retrieved on its own: its first relevant rank and its top k chunk ids
            "first_relevant": [None if f is None else int(f) for f in firsts],
            "top": [str(x).split() for x in tops],
            "output": visible(str(rec.get(query_scorer.OUTPUT) or "")[:MAX_ANSWER_CHARS]),
            "fallback": visible(str(reason)) if isinstance(reason, str) else None}


def write(folder: Path, cells: Sequence[Cell], names: Sequence[str]) -> dict[str, str]:
    """Write ``drill/``: questions, passages and one script per cell; returns ``{cell_id: script}``."""
    out = folder / "drill"
    out.mkdir(parents=True, exist_ok=True)
    corpus, passages = Corpus(), Passages()
    scripts = {}
    for cell, name in zip(cells, names):
        try:
            rows = cell_rows(cell, passages, corpus)
        except RagBenchError as exc:  # an unreadable records.parquet: the rest of the report stands
            log.warning("report: no drill-down for %s: %s", cell.path, exc)
            continue
        script = f"drill/{cell.cell_id}.js"
        payload = {"id": cell.cell_id, "name": visible(name), "rows": rows}
        (folder / script).write_text(f"RB.cell({json.dumps(payload, ensure_ascii=False, default=str)});\n",
                                     encoding="utf-8")
        scripts[cell.cell_id] = script
    bank = json.dumps(_plain(questions(cells, corpus)), ensure_ascii=False, default=str)
    # Parsed as JSON, not read as an object literal, where a question id ``__proto__`` would set the
    # object's prototype instead of naming a question.
    (out / "questions.js").write_text(f"RB.questions(JSON.parse({json.dumps(bank, ensure_ascii=False)}));\n",
                                      encoding="utf-8")
    (out / "passages.js").write_text(f"RB.passages({json.dumps(passages.texts, ensure_ascii=False)});\n",
                                     encoding="utf-8")
    return scripts
