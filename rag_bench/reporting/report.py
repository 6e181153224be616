"""``rag-bench report``: one static folder per experiment that opens from disk without a server.

Reads only the stored cells (never recomputes a pipeline) and writes ``reports/<experiment>/``:
``index.html``, PNG charts and ``drill/`` (the per-question data, :mod:`rag_bench.reporting.drill`).
Built for big sweeps: per-cell charts show the ``top`` cells; the table lists every cell, sorts
and filters in the page; the main-effects view says which axis moves the measure and which does
not; every cell is named by the parameters that vary (:mod:`rag_bench.naming`). Logged as
artifacts of the sweep's parent MLflow run when the cells were tracked.
"""

from __future__ import annotations

import html
import logging
import math
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pandas as pd

from rag_bench import naming
from rag_bench.calibration.report_section import TITLE as TRUST_TITLE
from rag_bench.calibration.report_section import section as trust_section
from rag_bench.cells import Cell, experiment_cells, one_dataset
from rag_bench.decision import effects
from rag_bench.decision.decide import baseline as choose_baseline
from rag_bench.decision.decide import primary_measure as decided_primary
from rag_bench.decision.decide import rank, tie_note, tied
from rag_bench.decision.params import check_comparable
from rag_bench.decision.verdict import Verdict
from rag_bench.decision.verdict import verdict as decided
from rag_bench.errors import DataError, Problem
from rag_bench.evaluation import measures
from rag_bench.evaluation.scorers import injection as inj
from rag_bench.evaluation.scorers import latency as latency_scorer
from rag_bench.evaluation.scorers import parsing as prs
from rag_bench.reporting import charts, drill, page, search_view, sidebyside, views
from rag_bench.reporting.compare import compare_cells
from rag_bench.reporting.leaderboard import tag_rows

log = logging.getLogger(__name__)


def _ci(c: Cell, key: str) -> list[float] | None:
    v = c.metrics.get("ci", {}).get(key)
    return v if isinstance(v, list) and len(v) == 2 and all(isinstance(x, (int, float)) for x in v) else None


def _section(title: str, body: str, anchor: str = "") -> str:
    ident = f" id='{html.escape(anchor)}'" if anchor else ""
    return f"<section data-sec='{html.escape(anchor)}'><h2{ident}>{html.escape(title)}</h2>{body}</section>"


def _img(path: Path | None, caption: str, missing: str = "") -> str:
    if path is None:
        return f"<p class='note'>{html.escape(missing)}</p>" if missing else ""
    return f"<img src='{html.escape(path.name)}' alt='{html.escape(caption)}'>"


def _drill(cell: Cell, **filters: str) -> str:
    # Tags and labels come from the dataset: encoded, so '&', '#' or '=' in one cannot break the link.
    return "#" + "&".join([f"drill={cell.cell_id}", *(f"{k}={quote(v, safe='')}" for k, v in filters.items() if v)])


def primary_measure(cells: list[Cell]) -> str:
    """The measure that ranks the report: the experiment's primary measure
    (:func:`rag_bench.decision.decide.primary_measure`: ``experiment.primary``; auto = end-to-end
    ``generation/correct`` when a cell generated an answer, else nDCG@10)."""
    return decided_primary(cells)


def render_report(experiment_dir: str | Path, *, out_root: str | Path = "reports", metric: str | None = None,
                  baseline: str | Path | None = None, log_to_mlflow: bool = True, top: int = charts.TOP,
                  pair: tuple[str, str] | None = None, fingerprint: str | None = None,
                  labels_file: str | Path | None = None) -> Path:
    """Write the report and return the path of its index.html.

    ``metric``: the measure that ranks the cells (default :func:`primary_measure`); ``top``: cells
    drawn in per-cell charts; ``pair``: the two axes of the interaction heatmap
    (default: the two that move ``metric`` most); ``fingerprint``: the dataset version reported
    when the folder holds cells of several (default: the version of the cell finished last, with a
    warning on the console and in the page; :func:`rag_bench.cells.one_dataset`)."""
    exp = Path(experiment_dir)
    cells, notice = one_dataset(experiment_cells(exp), fingerprint)
    if notice:
        log.warning(notice)
    metric = _checked_metric(exp, cells, metric, top)
    names_list = naming.labels([c.config for c in cells], [c.cell_id for c in cells])
    names = dict(zip((c.cell_id for c in cells), names_list))
    # The ranking measure and the table's main ones must mean the same thing in every cell (before
    # anything is written).
    check_comparable(cells, [metric, *(m.key for m in measures.MAIN)], names=names,
                     fix="report cells scored with the same settings (one experiment folder each)")
    out = Path(out_root) / exp.name
    out.mkdir(parents=True, exist_ok=True)
    axes = naming.axes([c.config for c in cells])
    ranked = rank(cells, metric, names)  # the one rule: leaderboard, MLflow, compare and notebook agree
    base = choose_baseline(cells, baseline)  # always one (decide.baseline_of), the verdict says how it was chosen
    found = decided(cells, key=metric, baseline=baseline, names=names)  # what every view states
    if pair is not None and not set(pair) <= set(axes):
        raise DataError(Problem(str(exp), 0, "pair", f"--pair {','.join(pair)}: not axes of this sweep",
                                f"choose two of {', '.join(axes) or '(nothing varies)'}"))
    report = _Report(exp, cells, names, metric, ranked, base, found, out, top)
    sections, nav = _sections(report, axes, pair, labels_file)
    scripts = drill.write(out, ranked, [names[c.cell_id] for c in ranked])
    labels = sorted({str(x) for c in cells for x in c.records["failure"].dropna()}) if cells else []
    tags = sorted({str(t) for c in cells[:1] for ts in c.records["tags"] for t in ts})
    viewer = page.drill_section([(c.cell_id, names[c.cell_id]) for c in ranked], scripts, labels, tags)
    nav.append(("drill", "Drill-down"))
    links = "<nav>" + "".join(f"<a href='#{a}'>{html.escape(t)}</a>" for a, t in nav) + "</nav>"
    head = f"<div class='rb-head' data-sec='head'>{_head(report, axes, notice)}{links}</div>"
    doc = (f"<!doctype html><html><head><meta charset='utf-8'><title>rag_bench report: {html.escape(exp.name)}"
           f"</title><style>{page.CSS}</style></head><body><h1>rag_bench report: {html.escape(exp.name)}</h1>"
           + "<div id='rb-main'>" + head + "\n".join(sections) + "</div>" + viewer
           + page.JS  # defines RB, which the data scripts below call
           + "<script src='drill/questions.js'></script><script src='drill/passages.js'></script></body></html>")
    index = out / "index.html"
    index.write_text(doc, encoding="utf-8")
    if log_to_mlflow:
        _log(cells, out)
    return index


def _checked_metric(exp: Path, cells: list[Cell], metric: str | None, top: int) -> str:
    """The measure that ranks the report (``metric``, else the primary one); DataError when there is no
    cell, no cell has it, it has no better direction, or ``top`` is below 1."""
    if not cells:
        raise DataError(Problem(str(exp), 0, "", "no finished cells (folders with DONE)",
                                "run a sweep first: rag-bench run -m ..."))
    metric = metric or primary_measure(cells)
    if all(c.metric(metric) is None for c in cells):
        raise DataError(Problem(str(exp), 0, "metric", f"no cell has {metric}", "pass --metric section/name"))
    if top < 1:
        raise DataError(Problem(str(exp), 0, "top", f"--top must be >= 1, got {top}", "pass --top 20"))
    try:  # the report ranks cells best first: the metric must say which way is better
        measures.higher_is_better(metric)
    except ValueError as exc:
        raise DataError(Problem(str(exp), 0, "metric", str(exc), f"rank by a measure, e.g. --metric "
                                f"{measures.PRIMARY.key}")) from exc
    return metric


@dataclass(frozen=True)
class _Report:
    """What every section of one report draws from: the experiment folder, its cells and their names,
    the ranking measure and the cells ranked by it, the baseline and the verdict, where it is written
    and how many cells per-cell charts show."""

    exp: Path
    cells: list[Cell]
    names: dict[str, str]
    metric: str
    ranked: list[Cell]
    base: Cell | None
    found: Verdict
    out: Path
    top: int


def _sections(r: _Report, axes: list[str], pair: tuple[str, str] | None,
              labels_file: str | Path | None) -> tuple[list[str], list[tuple[str, str]]]:
    """The report's sections in order, and the navigation bar's ``(anchor, title)`` for each (charts
    written into the report's folder as they are drawn)."""
    cells, names, metric, ranked, out, top = r.cells, r.names, r.metric, r.ranked, r.out, r.top
    best = ranked[0]
    sections: list[str] = []
    nav: list[tuple[str, str]] = []

    def add(title: str, body: str, anchor: str) -> None:
        sections.append(_section(title, body, anchor))
        nav.append((anchor, title))

    if r.base is not None and r.base is not best:
        add("Best cell vs baseline", _versus(r.base, best, names, r.found), "versus")
    add("Leaderboard", _leaderboard(cells, ranked, names, metric, out, top, r.found), "leaderboard")
    add("Which choice matters", _effects(cells, axes, views.views(cells, metric), pair, out), "effects")
    add("Quality vs cost", _pareto(cells, names, metric, out), "pareto")
    add("Per question tag", _tags(cells, names, ranked, metric), "tags")
    add("Failure attribution", _failures(cells, ranked, names, metric, out, top), "failures")
    add("Retrieval depth and ANN", _depth(cells, out), "depth")
    add("Abstention", _abstention(best, names, out), "abstention")
    add("Retrieval hit vs answer correct", _conditional(ranked[:top], names), "conditional")
    add("Answer measures: lenient and SQuAD-exact", _answers(ranked[:top], names), "answers")
    trust = trust_section(cells, names, ranked[:10], labels_file)  # people's labels: --labels, else beside the dataset
    if trust is not None:
        add(TRUST_TITLE, trust, "trust")
    add("Answers side by side", sidebyside.section([(c.cell_id, names[c.cell_id]) for c in ranked]), "side")
    documents = _documents(ranked, names)
    if documents:
        add("Documents: parsing and hostile text", documents, "documents")
    halving = search_view.section(r.exp, cells)
    if halving:
        add("Search: the cells halving dropped", halving, "search")
    add("Security, judge and errors", _security(cells, names), "security")
    add("Cost and latency", _costs(ranked, names), "costs")
    return sections, nav


def _head(r: _Report, axes: list[str], notice: str) -> str:
    """The page's head: the verdict, what was compared and how, the best cell's refusals, and the
    notice of a folder holding several dataset versions."""
    best = r.ranked[0]
    q = len(best.records)
    answerable = int(best.records["answerable"].sum())
    n = best.metrics.get("n", {}).get(r.metric)
    return (_verdict_block(r.found, r.base, best, r.names)
            + f"<p class='sub'>{len(r.cells)} cells from {html.escape(r.exp.name)}; {q} questions ({answerable} "
            f"answerable, {q - answerable} unanswerable); ranked by {html.escape(r.metric)}"
            f"{f' over the n={n} questions it is defined for' if n is not None else ''}; every aggregate with its "
            "95% bootstrap CI over questions. "
            f"Swept: {html.escape(', '.join(axes) or 'nothing (one configuration)')}.</p>"
            + _refusals(best, r.names)
            + (f"<p class='note'>{html.escape(notice.removeprefix('warning: '))}</p>" if notice else ""))


def _verdict_block(found: Verdict, base: Cell | None, best: Cell, names: dict[str, str]) -> str:
    """The report's first lines: the verdict (the line every view states), why that measure ranks,
    how "not significantly worse" was decided, and the findings that bear on it."""
    reason, *rest = found.lines()
    method = [line for line in rest if line.startswith("(")]
    warnings = [line.removeprefix("finding: ") for line in rest if line.startswith("finding: ")]
    link = " <a href='#versus'>best vs baseline</a>" if base is not None and base is not best else ""
    return (f"<p class='verdict' data-verdict='{html.escape(found.text())}'><b>{html.escape(found.text())}.</b>"
            f"{link}</p><p class='sub'>{html.escape(reason)} {' '.join(html.escape(m) for m in method)}</p>"
            + "".join(f"<p class='bad'>{html.escape(w)}</p>" for w in warnings))


def _refusals(best: Cell, names: dict[str, str]) -> str:
    """The best cell's abstention in one sentence: unanswerable questions refused, answerable ones
    refused (nothing when it generated no answers)."""
    rec = best.records
    if "refused" not in rec or not rec["refused"].notna().any():
        return ""
    refused = rec["refused"].fillna(False).astype(bool)
    unans, ans = ~rec["answerable"].astype(bool), rec["answerable"].astype(bool)
    parts = []
    if unans.any():
        parts.append(f"refuses {int((refused & unans).sum())} of the {int(unans.sum())} unanswerable questions "
                     f"(correct refusals)")
    if ans.any():
        parts.append(f"refuses {int((refused & ans).sum())} of the {int(ans.sum())} answerable ones (false refusals)")
    return f"<p class='sub'>Abstention: the best cell {html.escape(names[best.cell_id])} {'; '.join(parts)}.</p>"


def _leaderboard(cells: list[Cell], ranked: list[Cell], names: dict[str, str], metric: str, out: Path, top: int,
                 found: Verdict) -> str:
    chart = charts.leaderboard(cells, metric, out / "leaderboard.png", labels=[names[c.cell_id] for c in cells],
                               top=top)
    ranking = measures.measure(metric)
    # The measure that ranks the cells first, then each stage's main measure.
    main = [m for m in measures.MAIN if any(c.metric(m.key) is not None for c in cells) and m != ranking]
    if ranking is not None:
        main.insert(0, ranking)
    rows = []
    for c in ranked:
        row: dict[str, Any] = {"cell": (names[c.cell_id], names[c.cell_id], _drill(c)),
                               "≈best": "*" if c.cell_id in found.close else "", "id": c.cell_id,
                               "k": (c.config.get("pipeline") or {}).get("k")}
        for m in main:
            row[m.display] = page.with_ci(c.metric(m.key), _ci(c, m.key))
        lat = views.LATENCY.of(c)
        row["p50 ms"] = ("" if lat is None else f"{lat:.2f}", lat, None)
        row["n"] = c.metrics.get("n", {}).get(metric)
        rows.append(row)
    tie = tie_note(len(tied(ranked, metric)), metric, ranked[0].metric(metric))
    return (_img(chart, "leaderboard") + (f"<p class='note'>{html.escape(tie)}.</p>" if tie else "") +
            f"<p>All {len(cells)} cells; click a column to sort, type to filter (every word must match), click a "
            "cell to open its questions. 95% bootstrap CIs in grey. ≈best *: not significantly worse than the best "
            f"({html.escape(found.method or 'not tested')}).</p>"
            "<input class='rb-filter' data-table='rb-leaderboard' placeholder='filter, e.g. hybrid k=5'>" +
            page.table(rows, table_id="rb-leaderboard", sortable=True, left=2))


def _effect_frame(cells: list[Cell], axes: list[str], view: views.View) -> pd.DataFrame:
    return pd.DataFrame([{**{a: naming.value(c.config, a) for a in axes}, view.key: view.of(c)} for c in cells])


def _effects(cells: list[Cell], axes: list[str], shown: list[views.View], pair: tuple[str, ...] | None,
             out: Path) -> str:
    """Main effects on each view's measure, one block per measure and a selector between them
    (``#effect=<key>`` in the URL); each measure is shown against the axes that can change it.
    Every interval is over questions: one bootstrap draw of the question ids is applied to every
    cell (:mod:`rag_bench.decision.effects`)."""
    if not axes:
        return "<p class='note'>Nothing varies between these cells: no axis to compare.</p>"
    correct = measures.CORRECT.key
    qids = views.question_ids(cells)
    draws = effects.draws(len(qids)) if qids else None
    options, blocks = [], []
    interaction = ""
    for i, view in enumerate(shown):
        frame = _effect_frame(cells, axes, view)
        samples = view.resampled(cells, qids, draws) if draws is not None else None
        moving = [a for a in axes if effects.can_move(a, view.acts_on)]
        found = effects.main_effects(frame, moving, view.key, higher_is_better=view.higher_is_better, samples=samples)
        title = ("primary: " if i == 0 else "") + view.title
        options.append(f"<option value='{html.escape(view.key)}'>{html.escape(title)}</option>")
        grand = float(frame[view.key].mean()) if frame[view.key].notna().any() else math.nan
        png = None
        if i == 0 or view.key == correct:  # the PNGs cover the primary measure and correct
            name = "main_effects.png" if i == 0 else "main_effects_correct.png"
            png = charts.main_effects(found, view.title, out / name, grand=grand,
                                      higher_is_better=view.higher_is_better,
                                      questions=_defined_on(cells, view.key) or len(qids) or None)
        left_out = [a for a in axes if a not in moving]
        def level(lv: effects.Level) -> str:
            ci = f" [{lv.lo:.3f}, {lv.hi:.3f}]" if lv.lo == lv.lo else " (no CI: no per-question values)"
            return f"{lv.value}: {lv.mean:.3f}{ci}"

        rows = [{"axis": e.axis, "spread": e.spread,
                 "spread 95 % CI": f"[{e.spread_lo:.3f}, {e.spread_hi:.3f}]" if e.spread_lo == e.spread_lo else "",
                 "best level: mean [95 % CI]": level(e.levels[0]),
                 "worst level: mean [95 % CI]": level(e.levels[-1]), "levels": len(e.levels),
                 "balanced": "yes" if e.balanced else "no"} for e in found]
        chart_key = ("In the chart, dots: that mean; whiskers: its 95 % CI; dashed line: the mean of all cells; the "
                     "axis starts at 0 unless its label says otherwise. " if png else "")
        body = [f"<p>Mean <b>{html.escape(view.title)}</b> ({'higher' if view.higher_is_better else 'lower'} is "
                "better) of the cells at each level of each swept axis, over all values of the other axes. "
                f"{chart_key}Axes are ranked by spread, the largest level mean minus the smallest: a small spread says "
                "the choice hardly matters here.</p>"
                f"<p class='note'>Every interval is over questions, not over cells: the cells at one level answer "
                "the same questions, so they are not independent samples (an interval over them only shows how alike "
                f"the other axes' settings are). A bootstrap draws the {len(qids)} question ids with replacement "
                f"({effects.RESAMPLES} draws, seed {effects.SEED}), recomputes every cell's value on the same draw "
                "(over the drawn questions it is defined for) and averages each level's cells; the 2.5th and 97.5th "
                "percentiles over the draws give the level's "
                "interval, and the largest-minus-smallest difference in each draw the spread's (paired: both levels "
                "on the same questions). A spread whose interval includes 0 is not told apart from no effect.</p>"]
        if left_out:
            they = "it acts" if len(left_out) == 1 else "they act"
            body.append(f"<p class='note'>Not shown: {html.escape(', '.join(left_out))}; {they} after the ranking "
                        f"(on the passages handed to the generator) and cannot change {html.escape(view.title)}."
                        "</p>")
        body.append(_img(png, f"main effects on {view.key}") if png else "")
        body.append(page.table(rows, left=1) if rows else "<p class='note'>No axis with two levels can change "
                    "this measure.</p>")
        hidden = "" if i == 0 else " hidden"
        blocks.append(f"<div class='rb-effect' data-measure='{html.escape(view.key)}'{hidden}>{''.join(body)}</div>")
        if i == 0:
            chosen = pair or tuple(e.axis for e in found[:2])
            if len(chosen) == 2:
                grid = effects.interaction(frame, chosen[0], chosen[1], view.key)
                lo, hi = effects.interaction_intervals(frame, chosen[0], chosen[1], view.key, samples)
                interaction = (
                    f"<h3>Interaction: {html.escape(chosen[0])} × {html.escape(chosen[1])}</h3><p>Mean "
                    f"{html.escape(view.title)} (the primary measure) per pair of levels over the other axes, with "
                    "its 95 % CI over questions (choose the pair with <code>rag-bench report --pair A,B</code>). "
                    "Parallel rows mean the two choices do not interact. The colour scale is fitted to the values "
                    "shown (its ends are on the colour bar), so it does not start at 0: read the numbers.</p>"
                    + _img(charts.interaction(grid, view.title, out / "interaction.png", rows=chosen[0],
                                              cols=chosen[1], lo=lo, hi=hi, higher_is_better=view.higher_is_better),
                           "interaction", "Too few levels for a grid."))
    selector = (f"<p>Main effects on <select id='rb-effect'>{''.join(options)}</select> <span class='note'>(each "
                "measure against the axes that can change it)</span></p>")
    return selector + "".join(blocks) + interaction


def _defined_on(cells: list[Cell], key: str) -> int | None:
    """How many questions a mean measure is defined on (metrics.json ``n``; the most of any cell)."""
    ns = [n for c in cells if isinstance(n := c.metrics.get("n", {}).get(key), int)]
    return max(ns) if ns else None


def _pareto(cells: list[Cell], names: dict[str, str], metric: str, out: Path) -> str:
    better = measures.higher_is_better(metric)
    quality = [math.nan if (v := c.metric(metric)) is None else v for c in cells]
    body = []
    # Generator tokens cannot buy a better ranking: a ranking measure is only drawn against latency.
    costs = [views.LATENCY] + ([] if metric.split("/", 1)[0] in effects.RANKING_SECTIONS
                               else [views.END_TO_END, views.TOKENS])
    costs.append(views.MONEY)  # drawn when priced (prices.*): two cells with a $ per question
    costs.append(views.PARSE)  # drawn when two cells parsed document files
    for view in costs:
        x = [math.nan if (v := view.of(c)) is None else v for c in cells]
        front = effects.pareto_front(quality, x, higher_is_better=better)
        chart = charts.pareto(quality, x, front, [names[c.cell_id] for c in cells], out / f"pareto_{view.key}.png",
                              metric=metric, cost_label=view.title, higher_is_better=better,
                              ci=[_ci(c, metric) for c in cells])
        if chart is None:
            continue
        keep = [names[c.cell_id] for c, f in zip(cells, front) if f]
        body.append(_img(chart, f"pareto_{view.key}") + f"<p>On the front ({len(keep)} of {len(cells)}): "
                    f"{html.escape('; '.join(keep[:12]))}{' …' if len(keep) > 12 else ''}. Every grey cell is beaten "
                    f"on both {html.escape(metric)} and {html.escape(view.title)} by a cell on the front. The front "
                    "is drawn from the means; its whiskers are each cell's 95 % CI over questions: where they overlap, "
                    "the questions cannot tell those cells apart on quality.</p>")
        unpriced = sum(x_ != x_ for x_ in x)
        if view is views.MONEY and unpriced:
            body.append(f"<p class='note'>{unpriced} of {len(cells)} cells are unpriced (a model or "
                        "<code>prices.usd_per_hour</code> without a price: their warning names the key) and are not "
                        "drawn on the $ axis; they are not free.</p>")
    return "".join(body) or "<p class='note'>Fewer than two cells with a latency: no trade-off to draw.</p>"


def _tags(cells: list[Cell], names: dict[str, str], ranked: list[Cell], metric: str) -> str:
    tags = sorted({t for c in cells for t in c.metrics.get("by_tag", {})})
    if not tags:
        return "<p class='note'>No question has a tag.</p>"
    primary = measures.measure(metric)
    refusal = measures.CORRECT_REFUSAL_RATE
    answer = [m.name for m in measures.TAG_ANSWER]
    ranking = [m.name for m in (measures.NDCG.at(10), measures.HIT.at(5))]
    top = ranked[0]
    rows = []
    for t in tags:
        # A tag's best cell by the primary measure; a tag of unanswerable questions (no answer or
        # ranking measure is defined on them) by correct refusals, so it has its row too.
        have: list[Cell] = []
        for m in ([primary] if primary is not None else []) + [refusal]:
            have = [c for c in ranked if _finite(c.metrics.get("by_tag", {}).get(t, {}).get(m.name))]
            if have:
                break
        if not have:
            continue
        sign = 1 if m.higher_is_better is not False else -1
        win = max(have, key=lambda c: sign * c.metrics["by_tag"][t][m.name])  # the first of equals: the best ranked
        vals = win.metrics["by_tag"][t]
        overall = top.metrics.get("by_tag", {}).get(t, {}).get(m.name)
        row: dict[str, Any] = {
            "tag": t, "questions": vals.get("n"),
            "kind": "answerable" if any(_finite(vals.get(r)) for r in ranking) else "unanswerable",
            "best cell on this tag": (names[win.cell_id], names[win.cell_id], _drill(win, tag=t)), "by": m.name,
            "its value": vals.get(m.name),
            "overall best cell": overall if _finite(overall) else None}
        row.update({name: vals.get(name) if _finite(vals.get(name)) else None for name in (*answer, *ranking)
                    if name not in (refusal.name, primary.name if primary else "")})  # those are in "by"
        rows.append(row)
    return (f"<p>Each tag's best cell by {html.escape(metric)} (by correct_refusal_rate for a tag of unanswerable "
            f"questions, which have no answer to be correct) beside the overall best cell "
            f"<b>{html.escape(names[top.cell_id])}</b> on the same measure: where the overall best loses, a tag "
            "needs a different configuration. The measures that follow are the tag's best cell's (blank: not defined "
            "for the tag's questions).</p>" + page.table(rows, sortable=True, left=4)
            + f"<h3>Outcomes and failures by tag: {html.escape(names[top.cell_id])}</h3><p>The overall best cell's "
            "questions of each tag: how many expect an answer, a refusal or a clarifying question (a/r/c), hit@5 and "
            "ndcg@10 with their 95 % CIs over the tag's questions, the share with the right outcome (right: "
            "answer/correct_all), correct refusals and clarifications, and where the tag's questions were lost (first "
            "failing stage). Follow-up turns of a conversation against first turns (mt:Follow-up, mt:N/A) read here."
            "</p>" + page.table(tag_rows(top.metrics), table_id="tag-outcomes", sortable=True, left=1))


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _failures(cells: list[Cell], ranked: list[Cell], names: dict[str, str], metric: str, out: Path, top: int) -> str:
    chart = charts.failures(cells, out / "failures.png", labels=[names[c.cell_id] for c in cells], metric=metric,
                            top=top)
    labels = [lab for lab in charts.failure_labels(cells) if any(c.metrics.get("failures", {}).get(lab) for c in cells)]
    rows = []
    for c in ranked[:top]:
        f = c.metrics.get("failures", {})
        row: dict[str, Any] = {"cell": names[c.cell_id]}
        for lab in labels:
            v = int(f.get(lab, 0))
            row[lab] = (v, v, _drill(c, label=lab) if v else None)
        rows.append(row)
    return (_img(chart, "failures") + "<p>The first stage that lost each question. Each count links to its "
            f"questions in the drill-down (top {min(top, len(cells))} cells by {html.escape(metric)}).</p>"
            + page.table(rows, sortable=True, left=1) + _label_meanings(labels))


def _label_meanings(labels: list[str]) -> str:
    """What each label of the failure table means (its tally's definition), in the table's order."""
    meaning = {m.family: m.description for m in measures.FAILURES}
    items = "".join(f"<li><b>{html.escape(lab)}</b>: {html.escape(meaning[lab])}</li>" for lab in labels
                    if lab in meaning)
    return ("<p>The labels, in the order a question meets them (docs/metrics.md, the failure order):</p>"
            f"<ul class='labels'>{items}</ul>") if items else ""


def _depth(cells: list[Cell], out: Path) -> str:
    body = _img(charts.metric_vs_k(cells, out / "metric_vs_k.png"), "metric vs k", "Fewer than two cutoffs in eval.ks.")
    ann = charts.ann_tradeoff(cells, out / "ann.png")
    body += _img(ann, "ANN", "No approximate index (HNSW, IVF, LanceDB) in this sweep: ANN recall is 1 by construction, so "
                 "there is no ANN chart.")
    return body


def _abstention(best: Cell, names: dict[str, str], out: Path) -> str:
    scored = charts.top1_scores(best, out / "top1_scores.png", name=names[best.cell_id])
    if not scored:
        return "<p class='note'>The best cell has no unanswerable (or no answerable) questions.</p>"
    s = scored[1]
    return (_img(scored[0], "top-1 scores") + f"<p>Best cell. AUROC of 'answerable' from the top-1 score alone: "
            f"<b>{s['auroc']:.3f}</b>; best-F1 threshold {s['threshold']:.4g} gives F1 {s['f1']:.3f}. Below ~0.8 a "
            "score threshold cannot reliably decide when to abstain.</p>")


def _conditional(cells: list[Cell], names: dict[str, str]) -> str:
    generated = [c for c in cells if c.metrics.get("conditional")]
    if not generated:
        return ("<p class='note'>These cells have no generation stage (generator=none), so there is no answer to be "
                "correct.</p>")
    rows = []
    for c in generated:
        cond = c.metrics["conditional"]
        rows.append({"cell": names[c.cell_id], "k": cond["k"],
                     **{f"correct when {h} (n)": (f"{cond[h]['rate']:.3f} ({cond[h]['correct']}/{cond[h]['n']})"
                                                 if cond[h]["n"] else "n/a (0)") for h in ("hit", "miss")}})
    return ("<p>Answerable questions, split by whether a relevant chunk was in the top k handed to the generator. A "
            "low rate on hits points at generation; misses cap what any generator can do.</p>" + page.table(rows))


# The answer measures side by side: which is lenient, which reproduces SQuAD 2.0's script.
_ANSWER_MEASURES = (measures.CORRECT, measures.ANSWER_RECALL, measures.EXACT_MATCH, measures.TOKEN_F1,
                    measures.SQUAD_EXACT, measures.SQUAD_F1, measures.SQUAD_NOANS_EXACT)


def _answers(cells: list[Cell], names: dict[str, str]) -> str:
    generated = [c for c in cells if "generation" in c.metrics]
    if not generated:
        return "<p class='note'>These cells have no generation stage (generator=none): no answer to match.</p>"
    rows = []
    for c in generated:
        row: dict[str, Any] = {"cell": names[c.cell_id]}
        for m in _ANSWER_MEASURES:
            row[m.name] = page.with_ci(c.metric(m.key), _ci(c, m.key))
        row["n (all / answerable)"] = (f"{c.metrics.get('n', {}).get(measures.SQUAD_EXACT.key, 0)} / "
                                       f"{c.metrics.get('n', {}).get(measures.EXACT_MATCH.key, 0)}")
        rows.append(row)
    return ("<p><b>Lenient</b> (containment, Unicode-aware: any script's punctuation, digit grouping): "
            "<code>answer_recall</code>, facts, and <code>correct</code> under eval.answer_match=auto. "
            "<b>SQuAD-exact</b> (SQuAD 2.0's official script: ASCII punctuation deleted, articles removed; "
            "<code>[n]</code> citation markers stripped first): <code>exact_match</code>/<code>token_f1</code> on "
            "answerable questions (HasAns), <code>squad_exact</code>/<code>squad_f1</code> over all questions (a "
            "refusal is the empty answer, the gold of an unanswerable question), <code>squad_noans_exact</code> on "
            "unanswerable ones (NoAns). Comparable with published SQuAD 2.0 figures (which are in percent).</p>"
            + page.table(rows))


def _num(v: float | None, fmt: str = ".3f") -> str:
    return "n/a" if v is None or v != v else format(v, fmt)


def _versus(base: Cell, best: Cell, names: dict[str, str], found: Verdict) -> str:
    name_of = {**names, base.cell_id: names.get(base.cell_id, base.cell_id)}
    diff = compare_cells(base, best, names=(name_of[base.cell_id], names[best.cell_id]), primary=found.measure)
    primary = (f"On the primary measure {html.escape(found.measure)}, the one test the verdict rests on: "
               f"{html.escape(found.versus.text())}. " if found.versus is not None else "")
    role = found.versus.role if found.versus is not None and found.versus.role else "the config's defaults, or as named"
    body = [f"<p>baseline <b>{html.escape(name_of[base.cell_id])}</b> ({html.escape(role)}) → best "
            f"<b>{html.escape(names[best.cell_id])}</b>, {diff['questions']} questions. {primary}Below, the main measure "
            "of each stage: paired bootstrap CI, randomisation test, Holm-adjusted over these measures (so the primary "
            "measure's p here can be larger than the verdict's, and a CI that excludes 0 can sit beside a p (Holm) above "
            "0.05: the CI is not adjusted; where the CI and the unadjusted test disagree, the note says why).</p>",
            f"<p><b>Every stage:</b> {html.escape(diff['verdict'])}.</p>",
            page.table([{"measure": r["key"], "better": "higher" if r["higher_is_better"] else "lower", "n": r["n"],
                         "baseline": _num(r["mean_a"]), "best": _num(r["mean_b"]), "diff": _num(r["diff"], "+.3f"),
                         "95% CI": f"[{_num(r['ci'][0], '+.3f')}, {_num(r['ci'][1], '+.3f')}]",
                         "p (Holm)": _num(r["p_holm"]), "note": r.get("disagree", "")} for r in diff["metrics"]])]
    for key, title in (("wrong_to_right", "fixed by the best cell"), ("right_to_wrong", "broken by the best cell")):
        items = diff["flips"][key]
        body.append(f"<h3>{len(items)} question(s) {title} ({html.escape(diff['flips']['metric'])})</h3>")
        if items:
            body.append(page.table([{"qid": (i["qid"], i["qid"], _drill(best, q=i["qid"])), "question": i["question"],
                                     "baseline label": i["failure_a"], "best label": i["failure_b"]} for i in items],
                                   left=2))
    return "".join(body)


def _security(cells: list[Cell], names: dict[str, str]) -> str:
    rows = []
    for c in cells:
        sec, counts, gen = c.metrics.get("security", {}), c.metrics.get("counts", {}), c.metrics.get("generation", {})
        row = {"cell": names[c.cell_id], "unauthorized retrievals": sec.get(measures.UNAUTHORIZED_RETRIEVALS.name, 0),
               "stale retrievals": sec.get(measures.STALE_RETRIEVALS.name, 0),
               "unparseable answers": counts.get("unparseable", 0),
               "generation errors": int(c.records["generation_error"].notna().sum())
               if "generation_error" in c.records else 0,
               "endpoint failures": counts.get("endpoint_failures", 0),
               # judgements that failed (items x metrics x samples; refusals are not judged, not failed)
               "judge failures": counts.get("judge_failures", 0) if gen else 0}
        rows.append(row)
    bad = [r for r in rows if any(v for k, v in r.items() if k != "cell")]
    if not bad:
        return (f"<p>In all {len(cells)} cells: 0 unauthorized or stale retrievals, 0 unparseable answers, 0 generation, "
                "endpoint or judge failures.</p>")
    leaked = [r for r in rows if r["unauthorized retrievals"]]
    alert = ""
    if leaked:
        shown = ", ".join(html.escape(str(r["cell"])) for r in leaked[:10]) + (" ..." if len(leaked) > 10 else "")
        alert = (f"<p class='bad'><strong>SECURITY: {len(leaked)} cell(s) retrieved "
                 f"{sum(int(r['unauthorized retrievals']) for r in leaked)} chunk(s) their askers may not read</strong> "
                 f"(dropped before the context, the answer and every file; the release policy fails these cells): "
                 f"{shown}</p>")
    return (alert + "<p>Cells with a security finding or a failed call (others: none). An unauthorized retrieval is a "
            "passage the asker may not read; a stale one is archived.</p>" + page.table(bad, sortable=True, left=1))


def _documents(cells: list[Cell], names: dict[str, str]) -> str:
    """How each parser read the dataset's document files -- a row per parser and a row per parser
    and document (every cell of one parser reads one parse: the first cell's figures stand for
    them), every file that failed and why -- and, per cell, the hostile-text figures (hidden_text/*,
    injection/*: they depend on what the cell retrieved); '' when no cell parsed a file or met a
    planted instruction."""
    parse_shown = ((prs.DOCUMENTS, "files"), (prs.FAILED_DOCUMENTS, "failed"), (prs.EVIDENCE_LOCATED, "located"),
                   (prs.EVIDENCE_EXACT, "exact"), (prs.TABLE_ROWS_INTACT, "table rows intact"),
                   (prs.HEADINGS_FOUND, "headings found"), (prs.QUESTIONS_LOST, "questions lost"),
                   (prs.SECONDS, "parse s"))
    hostile_shown = ((inj.SURFACED, "hidden text surfaced"), (inj.RETRIEVED, "injection retrieved"),
                     (inj.IN_CONTEXT, "injection in context"), (inj.FOLLOWED, "injection followed"))
    by_parser: dict[str, list[Cell]] = {}
    hostile = []
    for c in cells:
        chosen = c.config.get("parser")
        parser = str(chosen.get("name", "auto")) if isinstance(chosen, dict) else "auto"
        if any((c.metrics.get(m.section) or {}).get(m.name) is not None for m, _ in parse_shown):
            by_parser.setdefault(parser, []).append(c)
        values = {label: (c.metrics.get(m.section) or {}).get(m.name) for m, label in hostile_shown}
        if any(v is not None for v in values.values()):
            hostile.append({"cell": names[c.cell_id], "parser": parser,
                            **{label: v for label, v in values.items() if v is not None}})
    parsers, documents, failed = [], [], []
    for parser, of in by_parser.items():
        first = of[0]  # every cell of this parser read the same parse of the same files
        row: dict[str, Any] = {"parser": parser, "cells": len(of)}
        row.update({label: v for m, label in parse_shown
                    if (v := (first.metrics.get(m.section) or {}).get(m.name)) is not None})
        parsers.append(row)
        reasons = dict(sorted((first.metrics.get(prs.FAILURES_SECTION) or {}).items()))
        per_doc = first.metrics.get(prs.DOCUMENTS_SECTION) or {}
        for doc in sorted({*per_doc, *reasons}):
            figures = per_doc.get(doc) or {}
            documents.append({"parser": parser, "document": doc,
                              **{k: figures[k] for k in prs.DOCUMENT_FIGURES if figures.get(k) is not None},
                              "failed": "yes" if doc in reasons else ""})
        failed += [{"parser": parser, "document": doc, "reason": reason} for doc, reason in reasons.items()]
    if not parsers and not hostile:
        return ""
    body = ("<p>How each parser read the dataset's .pdf/.html/.docx files (a quote not located is a loss, "
            "labelled <code>parsing</code>; <i>parse s</i>: its time, a cached parse counting what it cost), then "
            "each parser's files one by one; and per cell, planted instructions (docs.jsonl <code>canaries</code>): "
            "retrieved, in the generator's context, followed in the answer; text a person does not see that reached "
            "the parse (<code>hidden</code>). Definitions: docs/parsing.md, docs/metrics.md.</p>")
    if parsers:
        body += page.table(parsers, sortable=True, left=1)
    if documents:
        body += "<h3>Each parser, each document</h3>" + page.table(documents, sortable=True, left=2)
    if failed:
        body += (f"<p class='bad'>{len(failed)} document file(s) could not be parsed (recorded, the sweep went on; "
                 "the release policy bounds <code>parse/failed_documents</code>):</p>" + page.table(failed, left=3))
    if hostile:
        body += "<h3>Hostile text, per cell</h3>" + page.table(hostile, sortable=True, left=2)
    return body


def _costs(cells: list[Cell], names: dict[str, str]) -> str:
    """Per cell: the latencies per question (retrieval, rerank, and end to end where a generator
    answered: :data:`rag_bench.evaluation.scorers.latency.E2E_P50`), the stages' total times and
    what was computed."""
    generated = any("generation" in c.metrics for c in cells)
    priced = any(views.MONEY.of(c) is not None or "unpriced" in c.metrics.get("cost", {}) for c in cells)
    parsed = any(views.PARSE.of(c) is not None for c in cells)
    rows = []
    for c in cells:
        lat, cost = c.metrics.get("latency", {}), c.metrics.get("cost", {})
        tokens = views.TOKENS.of(c)
        row: dict[str, Any] = {"cell": names[c.cell_id], "retrieve p50 ms": lat.get("retrieve_p50_ms"),
                               "retrieve p95 ms": lat.get("retrieve_p95_ms"), "rerank p50 ms": lat.get("rerank_p50_ms")}
        if generated:
            timed, total, gen_ms = _generator_calls(c)
            row.update({"end to end p50 ms": lat.get(latency_scorer.E2E_P50.name),
                        "end to end p95 ms": lat.get(latency_scorer.E2E_P95.name),
                        "generator call p50 ms": gen_ms,
                        "answers timed": f"{timed}/{total}" if total else ""})
        if parsed:
            row["parse s"] = views.PARSE.of(c)
        row.update({"chunk s": lat.get("chunk_s"), "index s": lat.get("index_s"),
                    "generate s (stage)": lat.get("generate_s"), "embeddings computed": cost.get("embeddings_computed"),
                    "tokens / question": None if tokens is None else round(tokens, 1)})
        if priced:  # money: a cell without it says unpriced, never 0
            usd = views.MONEY.of(c)
            row["$ / question"] = "unpriced" if usd is None else usd
        rows.append(row)
    for r in rows:
        for k, v in r.items():
            if isinstance(v, float):
                r[k] = (_short(v), v, None)
    e2e = ("<p>Per question, in milliseconds: retrieval and rerank p50/p95 over every question; <b>end to end</b> = "
           "retrieval + rerank + the generator's call, summed per question, p50/p95 over the questions the generator "
           "answered in this run (<i>answers timed</i>). An answer served from the generation cache took no "
           "generator time in this run: it is left out, not counted as free, and a cell whose answers all came "
           "from the cache has no end-to-end figure (blank). <i>generator call p50</i> is the generator's own time "
           "per timed call (the extractive generator calls no model and reports 0). The <i>s</i> columns are each "
           "stage's total wall time for the cell (shared work counted once, by the cell that did it)"
           + ("; <i>parse s</i> the parse of the dataset's document files by the cell's parser (a cached parse "
              "counts what it cost)" if parsed else "") + ".</p>"
           if generated else
           "<p>Per question, in milliseconds: retrieval and rerank p50/p95 over every question (no generator: no "
           "end-to-end time). The <i>s</i> columns are each stage's total wall time for the cell (shared work counted "
           "once, by the cell that did it).</p>")
    money = ("<p><b>$ / question</b>: the run's US dollars per question under the price table (<code>prices.*</code>: "
             "tokens, texts and calls at their models' prices, local stages' seconds at their $/hour; a cached answer "
             "at its original cost); <i>unpriced</i> where a model or <code>prices.usd_per_hour</code> has no price "
             "(the cell's warning names the key), never 0. metrics.json <code>cost</code> holds each stage's share "
             "(docs/metrics.md).</p>" if priced else "")
    return (e2e + money + "<p class='note'>Measured on the machine that ran the sweep; the first cells of a sweep also "
            "pay for loading models and filling caches.</p>" + page.table(rows, sortable=True, left=1))


def _generator_calls(cell: Cell) -> tuple[int, int, float | None]:
    """(answers the generator produced in this run, answers, p50 of its seconds per such call in ms)."""
    r = cell.records
    if "generation_cached" not in r or "generate_s" not in r:
        return 0, 0, None
    fresh = ~r["generation_cached"].astype(bool)
    seconds = pd.to_numeric(r.loc[fresh, "generate_s"], errors="coerce").dropna()
    return int(fresh.sum()), len(r), float(seconds.median() * 1000.0) if len(seconds) else None


def _short(v: float) -> str:
    """A cost as people read one: 1,170 not 1.17e+03; 0.0498; 4e-05 only below a thousandth."""
    if abs(v) >= 100:
        return f"{v:,.0f}"
    return f"{v:.3g}" if v == 0 or abs(v) >= 0.001 else f"{v:.1e}"


def _log(cells: list[Cell], folder: Path) -> None:
    parents = Counter((c.done.get("tracking_uri"), c.done.get("parent_run_id")) for c in cells
                      if c.done.get("parent_run_id"))
    if not parents:
        return
    (uri, parent), _ = parents.most_common(1)[0]
    try:
        from mlflow.tracking import MlflowClient

        MlflowClient(tracking_uri=uri).log_artifacts(str(parent), str(folder), artifact_path="report")
        log.info("report logged to MLflow run %s (%s)", parent, uri)
    except Exception as exc:  # the report on disk is the product; tracking is best effort here
        log.warning("could not log the report to MLflow run %s at %s: %s", parent, uri, exc)

