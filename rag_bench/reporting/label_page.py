"""``rag-bench label CELL``: a static labelling page (one HTML file, opens from disk, no server).

Per sampled question (in the random order of :func:`rag_bench.calibration.sampling.draw`, so the
answers labelled first are a uniform sample of the cell's) it shows the question, the passages the
generator was given (the cited ones marked), the answer with each citation checked (does it name a
passage that was given?), the answer's claims as the offline judge saw them (each with its verdict
by the passages it cites, and the window of the passage its verdict rests on marked with
``<mark>`` in the passages: green when a cited passage supports it, yellow when only an uncited one
does, red when the cited passage falls short), and the reference answers. The labeller types their name (label keys
wait for it; a name is never taken from the labels file, so nobody replaces another labeller's
verdicts), then presses keys to judge ``correct`` and then ``faithfulness`` (``y``/``1`` yes,
``n``/``0`` no, ``←``/``→`` move, ``u`` undo the current item; with ``--scale G`` the digit keys
``0``..``G`` give a grade instead, written with ``"scale": G``); a progress line counts labelled
answers; "download labels.jsonl" saves every label, old and new, in the format of
:mod:`rag_bench.calibration.labels` (answers named by the SHA-256 of their text, the draw recorded
as ``sample``). Given the labels file it saved before (``--labels``), the page starts with those
labels and, once the name is typed, at that labeller's first answer not yet labelled.

Every text of the cell (answers are untrusted: a generator's output, a dataset's passages) goes
into the page as JSON inside ``<script type="application/json">`` with ``<``, ``>`` and ``&``
escaped, and the script sets it as text (``textContent``), never as HTML; control and
bidirectional characters are shown as visible ``\\uXXXX`` markers (:mod:`rag_bench.untrusted`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from rag_bench.calibration import sampling
from rag_bench.calibration.labels import MEASURES, Label, Sample, answer_digest
from rag_bench.cells import Cell
from rag_bench.errors import ConfigError
from rag_bench.reporting import claims_view
from rag_bench.untrusted import visible

_JS = Path(__file__).with_name("label.js")
CSS = """body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1000px;color:#222;padding:0 1em}
h1{font-size:1.3em}.sub{color:#555;font-size:13px}kbd{border:1px solid #bbb;border-radius:3px;padding:0 3px;background:#f6f6f6}
.q{font-size:1.15em;font-weight:600;margin:.6em 0}
.ans{border-left:4px solid #4c72b0;padding:.3em .7em;background:#f5f8ff;white-space:pre-wrap}
.pass{border-left:4px solid #ccc;padding:.2em .6em;margin:.3em 0;white-space:pre-wrap;font-size:13px}
.q,.ans,.pass,.ref{unicode-bidi:plaintext}
.pass.cited{border-color:#2ca02c;background:#f3fbf4}.ok{color:#2ca02c}.bad{color:#d62728}
.meas{display:inline-block;margin:.4em 1em .4em 0;padding:.3em .6em;border:1px solid #ccc;border-radius:4px}
mark.cited{background:#c7f0cf}mark.uncited{background:#fff2a8}mark.short{background:#ffd6d6}
.claim{margin:.2em 0;unicode-bidi:plaintext}.claim sup{color:#555}
.meas.active{border:2px solid #4c72b0}.ref{color:#333}.muted{color:#777}#lb-progress{margin:0 1em}
"""


def _list(v: Any) -> list[Any]:
    return [] if v is None or (isinstance(v, float) and pd.isna(v)) else list(v)


def references(cell: Cell) -> dict[str, list[str]]:
    """Question id -> reference answers, from the cell's dataset (empty when it cannot be read)."""
    from rag_bench.data.loader import load_dataset
    from rag_bench.errors import RagBenchError

    ds = cell.config.get("dataset") if isinstance(cell.config, dict) else None
    if not isinstance(ds, dict) or not ds.get("path"):
        return {}
    try:
        data = load_dataset(ds["path"], split=str(ds.get("split") or "test"))
    except (RagBenchError, OSError):
        return {}
    return {q.qid: list(q.answers) for q in data.questions}


def sample(records: pd.DataFrame, n: int, seed: int, stratify: str | None = None) -> list[int]:
    """Row positions of the first ``n`` answers of the cell's draw (:func:`rag_bench.calibration.sampling.draw`),
    in the order the page shows them: uniform (any start of it is a uniform sample), or stratified
    by a numeric column (``stratify`` >= 0.5, below 0.5, undefined in turn; not uniform: PPI means
    from it are indicative only). ConfigError when the cell has no answer to label."""
    order = sampling.draw(records, seed, stratify)
    if not order:
        raise ConfigError("the cell has no answers to label (no generator, or every generation failed) -- fix: "
                          "label a cell that generated answers (generator=extractive or an LLM)")
    return order[:n]


def items(cell: Cell, rows: Sequence[int], refs: dict[str, list[str]]) -> list[dict[str, Any]]:
    """What the page shows per question (plain data, set as text by the script)."""
    r = cell.records
    out = []
    for i in rows:
        rec = r.iloc[i]
        ctx_ids, ctx = _list(rec.get("context_ids")), _list(rec.get("context_texts"))
        cites = [str(c) for c in _list(rec.get("citations"))]
        answer = str(rec.get("answer", ""))
        checked = []
        for c in cites:
            k = int(c) if c.isdigit() else 0
            checked.append({"marker": visible(c), "ok": 1 <= k <= len(ctx),
                            "passage": visible(str(ctx_ids[k - 1])) if 1 <= k <= len(ctx_ids) else None})
        judged = claims_view.records_claims(rec.get("claims"))
        # each passage cut where a claim's window starts or ends: the script marks those pieces
        marks: dict[int, list[tuple[int, int, int, str]]] = {}
        for j, claim in enumerate(judged):
            ev = claims_view.evidence(claim)
            if ev is not None:
                marks.setdefault(ev[1], []).append((ev[2], ev[3], j + 1, ev[0]))
        # Shown with control and bidi characters made visible (an U+202E would make the answer read
        # reversed, so the person would judge another text than the one stored); the digest is the
        # stored text's.
        out.append({"qid": str(rec["qid"]), "question": visible(str(rec.get("question", ""))),
                    "answerable": bool(rec.get("answerable", True)), "answer": visible(answer),
                    "answer_sha256": answer_digest(answer), "refused": bool(rec.get("refused", False)),
                    "citations": checked, "references": [visible(x) for x in refs.get(str(rec["qid"]), [])],
                    "history": [[str(t["role"]), visible(str(t["content"]))] for t in _list(rec.get("history"))],
                    "claims": claims_view.shown(judged, [str(t) for t in ctx]),
                    "context": [{"id": visible(str(a)), "text": visible(str(t)),
                                 "segments": claims_view.segments(str(t), marks.get(n, []))}
                                for n, (a, t) in enumerate(zip(ctx_ids, ctx), start=1)]})
    return out


def _label_json(lb: Label) -> dict[str, Any]:
    d: dict[str, Any] = {"qid": lb.qid, "measure": lb.measure, "value": lb.value, "labeller": lb.labeller}
    if lb.answer_sha256:
        d["answer_sha256"] = lb.answer_sha256
    if lb.cell:
        d["cell"] = lb.cell
    if lb.scale != 1:
        d["scale"] = lb.scale
    if lb.note:
        d["note"] = lb.note
    if lb.sample:
        d["sample"] = lb.sample.as_json()
    return d


def safe_json(obj: Any) -> str:
    """JSON for a ``<script type="application/json">`` block: nothing in it can close the element."""
    return json.dumps(obj, ensure_ascii=False).replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


MAX_SCALE = 9  # grades are typed as one digit key


def _keys_help(scale: int) -> str:
    if scale == 1:
        return "<kbd>y</kbd>/<kbd>1</kbd> yes, <kbd>n</kbd>/<kbd>0</kbd> no"
    return (f"<kbd>0</kbd>&hellip;<kbd>{scale}</kbd> the grade (0 wrong &hellip; {scale} fully right; "
            f"<kbd>y</kbd> = {scale}, <kbd>n</kbd> = 0)")


def render(cell_id: str, cell_name: str, shown: list[dict[str, Any]], existing: Sequence[Label],
           scale: int = 1, sample: Sample | None = None) -> str:
    """The whole page; ``scale`` > 1 labels grades ``0..scale`` (digit keys) instead of yes/no;
    ``sample`` (how ``shown`` was drawn) is written on every new label."""
    import html

    if not 1 <= scale <= MAX_SCALE:
        raise ValueError(f"scale {scale}: must be 1 (yes/no) to {MAX_SCALE} (grades 0..{MAX_SCALE})")
    data = {"cell": cell_id, "name": cell_name, "measures": list(MEASURES), "items": shown,
            "labels": [_label_json(lb) for lb in existing], "scale": scale,
            "sample": sample.as_json() if sample else None}
    title = html.escape(visible(f"Label answers: {cell_name} ({cell_id})"))
    return (f"<!doctype html>\n<html lang=en><head><meta charset=utf-8><title>{title}</title>\n"
            f"<style>{CSS}</style></head>\n<body>\n<h1>{title}</h1>\n"
            f"<p class=sub>Keys: {_keys_help(scale)} (first <b>correct</b>: "
            "does the answer answer the question right? a refusal of an unanswerable question is correct; then "
            "<b>faithfulness</b>: is everything it says supported by the passages it was given? a refusal is "
            "faithful), <kbd>&larr;</kbd>/<kbd>&rarr;</kbd> previous/next, <kbd>u</kbd> clear this answer's labels."
            "</p>\n<p>Labeller: <input id=lb-labeller value=\"\" placeholder=\"your name\" size=12> <span id=lb-progress></span> "
            "<button id=lb-download>download labels.jsonl</button></p>\n<div id=lb-item></div>\n"
            f"<script type=\"application/json\" id=lb-data>{safe_json(data)}</script>\n"
            f"<script>\n{_JS.read_text(encoding='utf-8')}</script>\n</body></html>\n")


def write_page(path: Path, page: str) -> None:
    """Write atomically (a temporary file renamed), so an interrupted run leaves no half page."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(page, encoding="utf-8")
    tmp.replace(path)
