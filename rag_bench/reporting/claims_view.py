"""The judged claims of an answer as the views show them (issue 42): the drill-down and the
answers-side-by-side view of the report, and the label page.

Each claim of records.parquet's ``claims`` column (:mod:`rag_bench.evaluation.scorers.claims`) with
its verdict and *the window the verdict rests on*: the best window among its cited passages when
they support it (``cited``), else the passage of the context that supports it although it is not
cited (``uncited``), else the best window among its cited passages, which falls short (``short``);
none when it cites nothing and nothing supports it. A person then labels what the measure judged.

Texts are plain data, set as text by the pages' scripts; control and bidirectional characters are
made visible (:func:`rag_bench.untrusted.visible`) piece by piece, after the spans are cut, so the
character offsets of the records still apply.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from rag_bench.untrusted import visible

AROUND = 60  # characters shown either side of a marked window in an excerpt
MAX_MARK = 400  # a longer marked window is shown as its start, "…", its end


def plain(v: Any) -> Any:
    """JSON-ready: numpy scalars and arrays to Python, NaN to None (the drill-down's data too)."""
    if isinstance(v, np.ndarray):
        return [plain(x) for x in v.tolist()]
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    if isinstance(v, dict):
        return {str(k): plain(x) for k, x in v.items()}
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def records_claims(value: Any) -> list[dict[str, Any]]:
    """A ``claims`` cell of records.parquet as plain dicts; [] when there is none -- a question of
    today's cells as much as of old ones: there was nothing to judge (a refusal, a failed call, an
    unparseable or empty answer: null), or the cell has no ``claims`` column (the views pass
    ``rec.get("claims")``): its eval.scorers leave claims out, or generator=none. No fallback for
    old cells: a format-0 cell without the column reads as such a cell of today does, so the
    upgrade has nothing to add."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return []
    return [c for c in plain(value) if isinstance(c, dict)]


def evidence(claim: dict[str, Any]) -> tuple[str, int, int, int] | None:
    """(kind, passage number, start, end) of the window shown for ``claim`` (module docstring)."""
    own = claim.get("passage"), claim.get("span_start"), claim.get("span_end")
    ctx = claim.get("context_passage"), claim.get("context_span_start"), claim.get("context_span_end")
    if claim.get("supported") and None not in own:
        return ("cited", int(own[0]), int(own[1]), int(own[2]))  # type: ignore[arg-type]
    if claim.get("context_supported") and None not in ctx:
        return ("uncited", int(ctx[0]), int(ctx[1]), int(ctx[2]))  # type: ignore[arg-type]
    if None not in own:
        return ("short", int(own[0]), int(own[1]), int(own[2]))  # type: ignore[arg-type]
    return None


def excerpt(text: str, start: int, end: int) -> list[str]:
    """``[before, marked, after]``: the window ``text[start:end]`` (its middle elided past
    :data:`MAX_MARK` characters) with up to :data:`AROUND` characters either side."""
    marked = text[start:end]
    if len(marked) > MAX_MARK:
        marked = marked[:MAX_MARK * 2 // 3] + " … " + marked[-MAX_MARK // 3:]
    before = text[max(0, start - AROUND):start]
    after = text[end:end + AROUND]
    return [visible(("…" if start > AROUND else "") + before), visible(marked),
            visible(after + ("…" if end + AROUND < len(text) else ""))]


def shown(claims: Sequence[dict[str, Any]], context_texts: Sequence[str]) -> list[dict[str, Any]]:
    """Per claim: its text, citations, verdicts, coverage, missing words and the marked excerpt
    (``evidence``: ``{kind, passage, parts}``, None when there is no window to show)."""
    out = []
    for c in claims:
        ev = evidence(c)
        shown_ev = None
        if ev is not None and 1 <= ev[1] <= len(context_texts):
            kind, n, s, e = ev
            shown_ev = {"kind": kind, "passage": n, "parts": excerpt(str(context_texts[n - 1]), s, e)}
        out.append({"text": visible(str(c.get("text", ""))), "citations": list(c.get("citations") or []),
                    "supported": bool(c.get("supported")), "undecided": bool(c.get("undecided")),
                    "context_supported": bool(c.get("context_supported")),
                    "coverage": c.get("coverage"), "missing": [visible(str(w)) for w in c.get("missing") or []],
                    "evidence": shown_ev})
    return out


def segments(text: str, spans: Sequence[tuple[int, int, int, str]]) -> list[dict[str, Any]]:
    """``text`` cut at the borders of ``spans`` (start, end, claim number, kind): each piece with
    the claims whose window covers it and their kinds (the label page wraps a marked piece in
    ``<mark>``)."""
    cuts = sorted({0, len(text), *(min(max(s, 0), len(text)) for s, _, _, _ in spans),
                   *(min(max(e, 0), len(text)) for _, e, _, _ in spans)})
    out = []
    for a, b in zip(cuts, cuts[1:], strict=False):
        if a == b:
            continue
        on = [(n, kind) for s, e, n, kind in spans if s <= a and b <= e]
        out.append({"text": visible(text[a:b]), "claims": [n for n, _ in on], "kinds": sorted({k for _, k in on})})
    return out
