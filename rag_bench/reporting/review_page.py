"""``rag-bench review DATASET_DIR``: a static page (one HTML file, opens from disk, no server) to
review a question set -- drafted or written by people -- one question at a time.

Per question (in questions.jsonl's order) it shows the question, its conversation before it
(``history``), its reference answers, its type (:func:`rag_bench.data.review.question_type`: said by
the question, or read from its fields) and each evidence quote **highlighted in the parse of its
document** (the text the loader gives, :class:`rag_bench.domain.Document`: what chunkers and
scorers see), with up to ``context`` characters of the parse either side and the section it lies
in; a quote the parse lost is said to be lost. The reviewer types their name, then accepts (``a``),
rejects (``r``) or retypes (``1``-``5`` pick the type, ``a`` saves it) each question, or edits its
question and reference answer in place (``a`` saves the edit); ``←``/``→`` move. "download
decisions.jsonl" saves every decision, the ones the page started with (``--decisions``) included,
in the format :mod:`rag_bench.data.review` reads; ``rag-bench review DATASET_DIR --apply FILE``
applies them.

Texts go into the page as in the label page (:mod:`rag_bench.reporting.label_page`): JSON inside
``<script type="application/json">``, set as text, control and bidirectional characters made visible.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rag_bench.data.review import TYPES, question_type, row_digest
from rag_bench.domain import Dataset
from rag_bench.reporting.label_page import CSS, safe_json
from rag_bench.untrusted import visible

_JS = Path(__file__).with_name("review.js")
CONTEXT = 400  # characters of the parse shown either side of a quote
_CSS = CSS + """mark.quote{background:#ffe28a;padding:0 1px}.parse{border-left:4px solid #ccc;padding:.3em .7em;
white-space:pre-wrap;font-size:13px;unicode-bidi:plaintext}.where{color:#555;font-size:12px;margin-top:.6em}
textarea,input.rv{font:inherit;width:100%;box-sizing:border-box}.decided{font-weight:600}
.turn{color:#444;font-size:13px;margin:.1em 0;unicode-bidi:plaintext}
"""


def _excerpt(text: str, start: int, end: int, context: int) -> dict[str, Any]:
    a, b = max(0, start - context), min(len(text), end + context)
    return {"before": visible(text[a:start]), "quote": visible(text[start:end]), "after": visible(text[end:b]),
            "cut_before": a > 0, "cut_after": b < len(text)}


def items(dataset: Dataset, rows: Sequence[Mapping[str, Any]], context: int = CONTEXT) -> list[dict[str, Any]]:
    """What the page shows per question (plain data, set as text by the script): ``rows`` are
    questions.jsonl's objects in order, ``dataset`` the same set loaded (its parse and spans)."""
    by_id = {q.qid: q for q in dataset.questions}
    out = []
    for row in rows:
        qid = str(row.get("id"))
        q = by_id.get(qid)
        kind, given = question_type(row)
        evidence = []
        for span in q.evidence if q is not None else ():
            doc = dataset.documents.get(span.doc_id)
            if doc is None:
                continue
            evidence.append({"doc_id": visible(span.doc_id), "title": visible(doc.title),
                             "section": visible(" > ".join(span.heading_path)),
                             **_excerpt(doc.text, span.start, span.end, context)})
        lost = [visible(x.doc_id) for x in (q.lost if q is not None else ())]
        history = [{"role": visible(str(t.get("role", ""))), "content": visible(str(t.get("content", "")))}
                   for t in row.get("history") or () if isinstance(t, Mapping)]
        out.append({"qid": visible(qid), "id": qid, "question": visible(str(row.get("question", ""))),
                    "answers": [visible(str(x)) for x in row.get("answers") or ()],
                    "answer": str((row.get("answers") or [""])[0]), "raw_question": str(row.get("question", "")),
                    "type": kind, "type_given": given, "answerable": row.get("answerable") is not False,
                    "expects": visible(str(row.get("expects") or "")), "tags": [visible(str(t)) for t in
                                                                                 row.get("tags") or ()],
                    "history": history, "evidence": evidence, "lost": lost, "row_sha256": row_digest(row)})
    return out


def render(name: str, shown: list[dict[str, Any]], existing: Sequence[Mapping[str, Any]]) -> str:
    """The whole page for the dataset ``name``; ``existing``: decisions made before (the page starts with them)."""
    data = {"dataset": name, "types": list(TYPES), "items": shown, "decisions": list(existing)}
    title = html.escape(visible(f"Review questions: {name}"))
    keys = " ".join(f"<kbd>{i}</kbd> {t}" for i, t in enumerate(TYPES, start=1))
    return (f"<!doctype html>\n<html lang=en><head><meta charset=utf-8><title>{title}</title>\n"
            f"<style>{_CSS}</style></head>\n<body>\n<h1>{title}</h1>\n"
            "<p class=sub>Keys: <kbd>a</kbd> accept (saves an edit or a new type), <kbd>r</kbd> reject, "
            f"{keys} (pick the type, then <kbd>a</kbd>), <kbd>&larr;</kbd>/<kbd>&rarr;</kbd> previous/next. Edit "
            "the question or the answer in its box, then <kbd>a</kbd>. Is the question clear, is it answered by the "
            "highlighted quote (and only by it), is the reference answer right and is the type right?</p>\n"
            "<p>Reviewer: <input id=rv-reviewer value=\"\" placeholder=\"your name\" size=12> <span id=rv-progress>"
            "</span> <button id=rv-download>download decisions.jsonl</button></p>\n<div id=rv-item></div>\n"
            f"<script type=\"application/json\" id=rv-data>{safe_json(data)}</script>\n"
            f"<script>\n{_JS.read_text(encoding='utf-8')}</script>\n</body></html>\n")
