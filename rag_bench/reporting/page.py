"""The report's HTML building blocks: tables that sort and filter in the page, and the
drill-down viewer. Self-contained (no CDN, no library): a few dozen lines of plain JavaScript
that set every piece of data as text (``textContent``), never as HTML, so a passage or a question
containing markup is shown, not run.

State lives in the URL's fragment, so a link opens a view: ``#sort=<column>:asc`` sorts the
leaderboard, ``#drill=<cell_id>&label=<label>&tag=<tag>&q=<qid>`` opens a cell's questions
filtered by failure label and tag, and one question; ``#effect=<measure>`` shows the main effects
on that measure; ``#side=<n>&pick=<id>,<id>&differ=1&sq=<qid>`` sets the answers-side-by-side
view (:mod:`rag_bench.reporting.sidebyside`); ``#only=<section>`` shows one section alone. A cell id
that names no cell is ignored (``#drill=toString`` opens the first cell): the script keys every map
by such strings without a prototype. The page sets ``data-*`` attributes on
``<body>`` (``data-images-ok``, ``data-sorted``, ``data-drill-cell``, ``data-drill-q``,
``data-effect``, ``data-side-cells``, ``data-side-rows``) that a
headless browser test reads.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rag_bench.untrusted import visible

CSS = """body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1200px;color:#222;padding:0 1em}
h1{margin-bottom:0}
.verdict{font-size:1.15em;margin:.6em 0 .2em;padding:.4em .6em;background:#eef5ff;border-left:4px solid #1f77b4}
.sub{color:#555;margin-top:.2em}img{max-width:100%;border:1px solid #ddd;margin:.5em 0}
table{border-collapse:collapse;font-size:13px;margin:.5em 0}td,th{border:1px solid #ccc;padding:3px 7px;text-align:right}
th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}.note{color:#666;font-style:italic}
table.rb-sort th{cursor:pointer;user-select:none}table.rb-sort th:after{content:" \\2195";color:#aaa}
th.asc:after{content:" \\2191"!important;color:#222!important}th.desc:after{content:" \\2193"!important;color:#222!important}
td.l,th.l{text-align:left}.ci{color:#777;font-size:11px}.best{background:#e6f4ea;font-weight:600}
input.rb-filter{width:24em;padding:3px;margin:.3em 0}nav a{margin-right:1em}
#rb-qs tr{cursor:pointer}#rb-qs tr:hover{background:#f5f9ff}#rb-qs tr.open{background:#dbe9ff}
.pass{border-left:4px solid #ccc;padding:.2em .6em;margin:.3em 0;white-space:pre-wrap;font-size:13px}
.pass.rel{border-color:#2ca02c;background:#f3fbf4}.pass.ctx{outline:1px dashed #4c72b0}
.tag{display:inline-block;background:#eee;border-radius:3px;padding:0 4px;margin-right:3px;font-size:12px}
body.only-drill #rb-main{display:none}#rb-view{display:flex;gap:1em;align-items:flex-start}
#rb-list{flex:0 0 42%;max-height:85vh;overflow:auto}#rb-detail{flex:1;max-height:85vh;overflow:auto}
.ok{color:#2ca02c}.bad{color:#d62728}#rb-detail h4{margin:.8em 0 .2em}
.rb-claim{margin:.2em 0}.rb-excerpt{font-size:12px;color:#333;border-left:3px solid #ddd;padding-left:.4em;white-space:pre-wrap}
mark.cited{background:#c7f0cf}mark.uncited{background:#fff2a8}mark.short{background:#ffd6d6}
mark.loc-exact{background:#c7f0cf}mark.loc-normalised{background:#dfe9ff}mark.loc-fuzzy{background:#fff2a8}mark.loc-locator{background:#eee}.pass.bad{border-color:#d62728}
.rb-side-wrap{overflow-x:auto}#rb-side td{vertical-align:top;text-align:left;min-width:14em;max-width:28em}
#rb-side td.q{min-width:16em}#rb-side tr.differ td.q{border-left:4px solid #fd8d3c}
.rb-answer{white-space:pre-wrap;margin:.2em 0}.tw{overflow-x:auto}.ci{white-space:nowrap}
.tw td:first-child,.tw td.l a{white-space:nowrap}body.only-section h1,body.only-section #rb-drill{display:none}
td.l,.rb-answer,.pass,#rb-detail p,#rb-detail h3,#rb-side td,.rb-claim-text,.rb-excerpt{unicode-bidi:plaintext}"""


def table(rows: Sequence[dict[str, Any]], *, table_id: str = "", sortable: bool = False, left: int = 1) -> str:
    """An HTML table from rows of ``{column: cell}``; a cell is text, a number, or a
    ``(shown, sort_value, href)`` triple. Text is escaped; ``left`` columns are left-aligned."""
    if not rows:
        return "<p class='note'>nothing to show</p>"
    cols = list(dict.fromkeys(c for r in rows for c in r))
    attrs = (f" id='{html.escape(table_id)}'" if table_id else "") + (" class='rb-sort'" if sortable else "")
    head = "".join(f"<th class='l'>{html.escape(c)}</th>" if i < left else f"<th>{html.escape(c)}</th>"
                   for i, c in enumerate(cols))
    body = []
    for r in rows:
        tds = []
        for i, c in enumerate(cols):
            v = r.get(c, "")
            shown, key, href = v if isinstance(v, tuple) else (v, v, None)
            text = "" if shown is None else (f"{shown:.3f}" if isinstance(shown, float) else str(shown))
            if "\x00" in text:  # value + CI: "0.806\x00[0.73, 0.87]"
                a, b = text.split("\x00", 1)
                content = f"{html.escape(visible(a))} <span class='ci'>{html.escape(b)}</span>"
            else:
                content = html.escape(visible(text))  # a question or name: its controls shown, not obeyed
            if href:
                content = f"<a href='{html.escape(href)}'>{content}</a>"
            sort = "" if key is None else f" data-v='{html.escape(visible(str(key)))}'"
            cls = " class='l'" if i < left else ""
            tds.append(f"<td{cls}{sort}>{content}</td>")
        body.append("<tr>" + "".join(tds) + "</tr>")
    return (f"<div class='tw'><table{attrs}><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
            "</div>")


def with_ci(value: float | None, ci: Sequence[float] | None) -> tuple[str, float | None, None]:
    """A table cell showing ``value [lo, hi]``, sorted by the value."""
    if value is None:
        return ("", None, None)
    tail = f"[{ci[0]:.2f}, {ci[1]:.2f}]" if ci and len(ci) == 2 and None not in ci else ""
    return (f"{value:.3f}\x00{tail}" if tail else f"{value:.3f}", value, None)


def drill_section(cells: Sequence[tuple[str, str]], scripts: dict[str, str], labels: Sequence[str],
                  tags: Sequence[str]) -> str:
    """The drill-down viewer: choose a cell, filter by label and tag, open a question."""
    opts = "".join(f"<option value='{html.escape(cid)}'>{html.escape(name)}</option>" for cid, name in cells)
    lab = "".join(f"<option>{html.escape(x)}</option>" for x in labels)
    tg = "".join(f"<option>{html.escape(x)}</option>" for x in tags)
    return (f"<div id='rb-drill'><h2 id='drill'>Per-question drill-down</h2><p>What a cell retrieved and answered for each question, "
            "and the label it got. Passages in green are relevant (grade &gt; 0); a dashed frame marks the "
            "passages handed to the generator. For evidence in a PDF, HTML or Word file, the cell's parse around it: "
            "the located span marked, its page and how the quote was located. Failure counts and flipped "
            "questions above link here.</p>"
            f"<p>cell <select id='rb-cell'>{opts}</select> label <select id='rb-label'><option value=''>any"
            f"</option>{lab}</select> tag <select id='rb-tag'><option value=''>any</option>{tg}</select> "
            "<span id='rb-count' class='note'></span></p>"
            "<div id='rb-view'><div id='rb-list'><table id='rb-qs'><thead><tr><th class='l'>qid</th>"
            "<th class='l'>question</th><th class='l'>label</th><th class='l'>measures</th></tr></thead><tbody>"
            "</tbody></table></div><div id='rb-detail'><p class='note'>Click a question.</p></div></div></div>"
            f"<script>var RB_SCRIPTS = {json.dumps(scripts)};</script>")


# The page's script, shipped as package data beside this module.
JS = "<script>\n" + (Path(__file__).with_name("report.js")).read_text(encoding="utf-8") + "</script>"

