"""The report's "answers side by side" view: for every question, the answers of the top N cells
(and any cells picked) in one row, each with its cell's label, its citations checked against the
relevance grades and whether it was right, and its claims, each with its verdict by the passages it
cites and the passage window that verdict rests on marked (:mod:`rag_bench.reporting.claims_view`);
a filter to the questions where the cells disagree.

The page reads the per-cell drill-down scripts (:mod:`rag_bench.reporting.drill`) it already
ships, loading only the cells shown, so a sweep of hundreds of cells costs nothing until a cell is
picked. The view's state is in the URL (``#side=3&pick=<id>,<id>&differ=1&sq=<qid>``), so a link
opens it as it was; every answer is set as text, never as HTML.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence

DEFAULT_N = 3
MAX_N = 8


def section(cells: Sequence[tuple[str, str]]) -> str:
    """The view's controls and empty table; ``cells`` are ``(cell_id, name)`` best first."""
    n_max = min(MAX_N, len(cells))
    counts = "".join(f"<option value='{i}'{' selected' if i == min(DEFAULT_N, n_max) else ''}>{i}</option>"
                     for i in range(1, n_max + 1))
    picks = "".join(f"<option value='{html.escape(cid)}'>{html.escape(name)}</option>" for cid, name in cells)
    return ("<p>For each question, the answer of each cell shown: the top cells by the primary measure and any "
            "cell you add. ✓ right, ✗ wrong (an unanswerable question is right when refused); citations are "
            "marked ✓ when the cited passage is relevant; each claim of an answer is ✓ when the passages it cites "
            "support it (offline judge), with the passage window its verdict rests on marked (green: a cited "
            "passage supports it, yellow: only an uncited one does, red: the cited passage falls short). "
            "<i>Only disagreements</i> keeps the questions some "
            "shown cells got right and others wrong. Click a question to keep it alone; click a label to open "
            "that cell's drill-down.</p>"
            f"<p>top <select id='rb-side-n' data-default='{min(DEFAULT_N, n_max)}'>{counts}</select> cells, add "
            f"<select id='rb-side-add'><option value=''>a cell…</option>{picks}</select> "
            "<label><input type='checkbox' id='rb-side-differ'> only disagreements</label> "
            "<a href='#' id='rb-side-reset'>reset</a> <span id='rb-side-count' class='note'></span></p>"
            "<div class='rb-side-wrap'><table id='rb-side'><thead></thead><tbody></tbody></table></div>"
            f"<script>var RB_RANKED = {json.dumps([cid for cid, _ in cells])};</script>")
