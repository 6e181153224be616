"""Matplotlib charts for design reviews. Each function takes cells, writes one PNG, returns its
path (or None when the experiment has nothing to show for that chart).

Every text on a chart is drawn as it is written: cell labels, option names, tags and metric
names come from configs and datasets, and matplotlib would otherwise read ``$..$`` in them as
mathtext (``$\\frac{$`` raised a ParseError and the report crashed) or hand them to LaTeX. Each
chart is drawn inside :func:`plain_text`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from rag_bench.cells import Cell  # noqa: E402
from rag_bench.decision import decide, effects  # noqa: E402
from rag_bench.evaluation import measures  # noqa: E402
from rag_bench.failure_labels import in_attribution_order  # noqa: E402
from rag_bench.reporting import views  # noqa: E402
from rag_bench.stats.threshold import auroc, best_f1_threshold  # noqa: E402

TOP = 20  # cells drawn in per-cell charts (every cell is in the report's table)
MAX_HEIGHT_IN = 9.0  # no chart taller than a screen at the report's 110 dpi

# Failure colours by the stage that lost the question: one hue family per stage (parsing blue-violet,
# chunking purple,
# what the retriever may return -- what the asker may read, the current version -- magenta,
# retrieval red, ranking orange, citation yellow, correct outcomes green, context teal, generation
# blue, no verdict grey),
# shades within a family darker the worse the outcome. Chosen so that any two are told apart
# (CIELAB distance >= 25, and >= 15 for deuteranopes and protanopes, Machado et al.'s simulation):
# the earlier palette had four near-identical oranges for three stages; the four labels of issue 42
# were picked by a search of the sRGB cube for the colour farthest from the others within its
# family's hue (and no loss green); issue 43's parsing the same way, in the hue gap between
# generation's blues and chunking's purple. The legend lists the labels family by family.
FAILURE_FAMILY = {"parsing": "parsing", "chunking": "chunking", "unauthorized": "access & version",
                  "stale_version": "access & version", "query": "query",
                  "retrieval_miss": "retrieval", "partial_evidence": "retrieval", "ranking": "ranking",
                  "context": "context", "false_refusal": "generation", "generation": "generation",
                  "hallucinated_answer": "generation", "citation": "citation", "in_context": "correct outcome",
                  "correct": "correct outcome", "correct_refusal": "correct outcome", "error": "no verdict",
                  "unjudged": "no verdict"}
FAMILY_ORDER = ("parsing", "chunking", "access & version", "query", "retrieval", "ranking", "context", "generation",
                "citation", "correct outcome", "no verdict")
FAILURE_COLORS = {"parsing": "#0f61fe", "chunking": "#49006a", "unauthorized": "#380020", "stale_version": "#c80068",
                  "query": "#ffff99", "retrieval_miss": "#af1117", "partial_evidence": "#f80848", "ranking": "#f9812e",
                  "context": "#007880", "false_refusal": "#b7d4ea", "generation": "#519ccc",
                  "hallucinated_answer": "#1966ad", "citation": "#fdd12f", "in_context": "#b0dfaa", "correct": "#077331",
                  "correct_refusal": "#60ba6c", "error": "#4e4e4e", "unjudged": "#959595"}


F = TypeVar("F", bound=Callable[..., Any])
@contextmanager
def plain_text() -> Iterator[None]:
    """Matplotlib draws every text created inside as plain characters (no mathtext parsing of
    ``$``, no LaTeX); the caller's settings are put back on leaving."""
    with matplotlib.rc_context({"text.parse_math": False, "text.usetex": False}):
        yield


def _plain(chart: F) -> F:
    """Draw ``chart`` (a function that creates and saves a figure) inside :func:`plain_text`."""
    @functools.wraps(chart)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with plain_text():
            return chart(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def _save(fig: Any, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _names(cells: Sequence[Cell], labels: Sequence[str] | None) -> dict[str, str]:
    return dict(zip((c.cell_id for c in cells), labels or [c.label for c in cells]))


def _height(rows: int) -> float:
    """Figure height in inches for ``rows`` bars: readable, never taller than a screen."""
    return min(0.32 * rows + 1.6, MAX_HEIGHT_IN)


def ranked(cells: Sequence[Cell], metric: str, top: int | None) -> list[Cell]:
    """The ``top`` cells best first on ``metric``, ties broken by the one rule of
    :func:`rag_bench.decision.decide.rank` (as the leaderboard, the report and MLflow)."""
    measures.higher_is_better(metric)  # a descriptive figure ranks nothing: ValueError
    out = decide.rank(cells, metric)
    return out[:top] if top else out


@_plain
def leaderboard(cells: Sequence[Cell], metric: str, path: Path, *, labels: Sequence[str] | None = None,
                top: int | None = TOP) -> Path:
    """Horizontal bars of ``metric`` for the ``top`` cells with the 95% bootstrap CI as error bars,
    best on top; the x axis starts at 0."""
    names = _names(cells, labels)
    shown = ranked(cells, metric, top)[::-1]
    fig, ax = plt.subplots(figsize=(9, _height(len(shown))))
    vals = [c.metric(metric) or 0.0 for c in shown]
    lo = [v - (c.metrics.get("ci", {}).get(metric) or [v, v])[0] for v, c in zip(vals, shown)]
    hi = [(c.metrics.get("ci", {}).get(metric) or [v, v])[1] - v for v, c in zip(vals, shown)]
    ax.barh(range(len(shown)), vals, xerr=[lo, hi], color="#4c72b0", capsize=3)
    ax.set_yticks(range(len(shown)), [names[c.cell_id] for c in shown], fontsize=8)
    ax.set_xlabel(f"{metric} (bar: the cell's mean; whiskers: 95% bootstrap CI over questions)")
    ax.set_xlim(0, max(1.05, max(v + h for v, h in zip(vals, hi)) * 1.05) if vals else 1.05)
    more = f" (top {len(shown)} of {len(cells)}; all in the table)" if len(shown) < len(cells) else ""
    ax.set_title(f"Leaderboard{more}")
    return _save(fig, path)


def _text_color(rgba: Sequence[float]) -> str:
    """Black or white, whichever reads on a background colour (WCAG relative luminance)."""
    def lin(c: float) -> float:
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    lum = 0.2126 * lin(rgba[0]) + 0.7152 * lin(rgba[1]) + 0.0722 * lin(rgba[2])
    return "black" if lum > 0.179 else "white"


def heat_limits(values: Any) -> tuple[float, float]:
    """The colour scale of a heatmap of ``values``: fitted to the data (its smallest to its largest
    value), so values of 0.20-0.30 span the whole scale instead of one colour of a 0-1 scale; a
    grid of one value gets a scale around it.

    >>> heat_limits(np.array([[0.205, 0.295], [0.23, np.nan]]))
    (0.205, 0.295)
    """
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if not v.size:
        return 0.0, 1.0
    lo, hi = float(v.min()), float(v.max())
    if hi > lo:
        return lo, hi
    pad = abs(lo) * 0.05 or 0.5
    return lo - pad, hi + pad


@_plain
def interaction(grid: pd.DataFrame, metric: str, path: Path, *, rows: str, cols: str,
                lo: pd.DataFrame | None = None, hi: pd.DataFrame | None = None,
                higher_is_better: bool = True) -> Path | None:
    """Heatmap of the mean of ``metric`` per (``rows`` level, ``cols`` level), over the other
    axes, each with its 95% CI over questions (``lo``/``hi``, same shape) when given. The colour
    scale is fitted to the data (:func:`heat_limits`; the colour bar says so), brighter the better;
    each number is printed in black or white, whichever reads on its colour."""
    if grid.size < 2:
        return None
    values = grid.to_numpy(dtype=float)
    vmin, vmax = heat_limits(values)
    cmap = plt.get_cmap("viridis" if higher_is_better else "viridis_r")
    norm = matplotlib.colors.Normalize(vmin=vmin, vmax=vmax)
    fig, ax = plt.subplots(figsize=(min(max(1.3 * grid.shape[1] + 3, 6.5), 12),
                                    min(0.6 * grid.shape[0] + 2.4, MAX_HEIGHT_IN)))
    im = ax.imshow(values, cmap=cmap, norm=norm, aspect="auto")
    ax.set_xticks(range(grid.shape[1]), [str(c) for c in grid.columns], rotation=30, ha="right", fontsize=8)
    ax.set_yticks(range(grid.shape[0]), [str(r) for r in grid.index], fontsize=8)
    ax.set_xlabel(cols)
    ax.set_ylabel(rows)
    lows = lo.reindex(index=grid.index, columns=grid.columns).to_numpy(dtype=float) if lo is not None else None
    highs = hi.reindex(index=grid.index, columns=grid.columns).to_numpy(dtype=float) if hi is not None else None
    for i in range(grid.shape[0]):
        for j in range(grid.shape[1]):
            if not np.isnan(values[i, j]):
                text = f"{values[i, j]:.3f}"
                if lows is not None and highs is not None and np.isfinite(lows[i, j]) and np.isfinite(highs[i, j]):
                    text += f"\n[{lows[i, j]:.3f}, {highs[i, j]:.3f}]"
                ax.text(j, i, text, ha="center", va="center", fontsize=8,
                        color=_text_color(cmap(norm(values[i, j]))))
    start = "" if vmin == 0 else ", not from 0"
    fig.colorbar(im, ax=ax, label=f"{metric}: colour fitted to the data\n({vmin:.3g} to {vmax:.3g}{start}; "
                                  "brighter is better)")
    ci = "; [95 % CI over questions]" if lows is not None else ""
    ax.set_title(f"{metric}: {rows} × {cols}\n(mean over the other axes{ci})", fontsize=10)
    return _save(fig, path)


def value_axis(values: Sequence[float]) -> tuple[float, float, bool]:
    """The limits of an axis showing ``values`` (means and interval ends) and whether it starts
    at 0: from 0 whenever no value is negative (a rate, a count, a duration: a difference is then
    read against the whole), up to 1 at most for values within [0, 1]; else it spans the data.

    >>> left, right, from_zero = value_axis([0.22, 0.30, 0.18, 0.41])
    >>> left, round(right, 4), from_zero
    (0.0, 0.4305, True)
    >>> left, right, from_zero = value_axis([-0.05, 0.1])
    >>> round(left, 4), round(right, 4), from_zero
    (-0.065, 0.115, False)
    """
    v = [float(x) for x in values if x == x and np.isfinite(x)]
    if not v:
        return 0.0, 1.0, True
    lo, hi = min(v), max(v)
    if lo >= 0:
        top = hi * 1.05 if hi > 0 else 1.0
        return 0.0, min(top, 1.0) if hi <= 1.0 else top, True
    pad = max((hi - lo) * 0.1, 1e-9)
    return lo - pad, hi + pad, False


def axis_note(left: float, from_zero: bool) -> str:
    """What an axis label says about where the axis starts."""
    return "axis from 0" if from_zero else f"axis from {left:.3g}, not 0"


MAIN_EFFECTS_CI = ("whiskers: 95 % CI over questions{over}\n(bootstrap: question ids drawn with replacement, one draw "
                   "for every cell,\nthe level's cells averaged in each draw)")


@_plain
def main_effects(effects: Sequence[Any], metric: str, path: Path, *, grand: float | None = None,
                 higher_is_better: bool = True, questions: int | None = None) -> Path | None:
    """One row of points per axis level with its 95% CI over questions (the level's cells share
    them: :mod:`rag_bench.decision.effects`), axes ordered by how much they move ``metric``; the
    dashed vertical line is ``grand``, the mean of all cells (drawn when given). The value axis
    starts at 0 for values that cannot be negative (:func:`value_axis`) and says so."""
    if not effects:
        return None
    rows = sum(len(e.levels) for e in effects)
    fig, axes_ = plt.subplots(len(effects), 1, figsize=(8, _height(rows + len(effects)) + 0.6), squeeze=False,
                              sharex=True, gridspec_kw={"height_ratios": [len(e.levels) for e in effects]})
    left, right, from_zero = value_axis([x for e in effects for lv in e.levels for x in (lv.mean, lv.lo, lv.hi)]
                                        + ([grand] if grand is not None else []))
    over = f" (n = {questions})" if questions else ""
    for ax, e in zip(axes_[:, 0], effects):
        _effect_panel(ax, e, grand, MAIN_EFFECTS_CI.format(over=over))
    # The legend above the panels, where it covers no point.
    axes_[0, 0].legend(loc="lower left", bbox_to_anchor=(0, 1.22), ncol=1, fontsize=7, frameon=False)
    axes_[-1, 0].set_xlim(left, right)
    axes_[-1, 0].set_xlabel(f"mean {metric} of the level's cells ({'higher' if higher_is_better else 'lower'} "
                            f"is better; {axis_note(left, from_zero)})", fontsize=9)
    fig.suptitle(f"Main effects on {metric}: which choice moves it\n(largest spread first; spread = largest level "
                 "mean minus smallest [95 % CI, paired over questions])", fontsize=9)
    return _save(fig, path)


def _effect_panel(ax: Any, e: Any, grand: float | None, ci_note: str) -> None:
    """One axis of :func:`main_effects`: a row per level, its mean with its CI whiskers (an open dot
    when the level has no interval), the grand mean dashed, the axis's spread in the title."""
    ys = list(range(len(e.levels)))[::-1]
    with_ci = [(y, lv) for y, lv in zip(ys, e.levels) if lv.lo == lv.lo and lv.hi == lv.hi]
    if with_ci:
        ax.errorbar([lv.mean for _, lv in with_ci], [y for y, _ in with_ci],
                    xerr=[[lv.mean - lv.lo for _, lv in with_ci], [lv.hi - lv.mean for _, lv in with_ci]],
                    fmt="o", color="#4c72b0", capsize=3,
                    label="dot: mean of the level's cells; " + ci_note)
    bare = [(y, lv) for y, lv in zip(ys, e.levels) if not (lv.lo == lv.lo and lv.hi == lv.hi)]
    if bare:
        ax.plot([lv.mean for _, lv in bare], [y for y, _ in bare], "o", color="#4c72b0", mfc="white",
                label="open dot: mean of the level's cells (no per-question values: no interval)")
    ax.set_yticks(ys, [f"{lv.value} ({lv.cells} cell{'s' if lv.cells != 1 else ''})" for lv in e.levels],
                  fontsize=8)
    ax.set_ylim(-0.6, len(e.levels) - 0.4)
    if grand is not None and np.isfinite(grand):
        ax.axvline(grand, color="grey", lw=1, ls="--", label=f"dashed: mean of all cells ({grand:.3f})")
    ci = f" [{e.spread_lo:.3f}, {e.spread_hi:.3f}]" if e.spread_lo == e.spread_lo else ""
    ax.set_title(f"{e.axis}: spread {e.spread:.3f}{ci}{'' if e.balanced else ' (unbalanced)'}", fontsize=9,
                 loc="left")
    ax.grid(axis="x", alpha=0.3)


def _overlaps(box: Any, others: Sequence[Any]) -> bool:
    return any(box.overlaps(o) for o in others)


def _text_box(ann: Any, renderer: Any) -> Any:
    """An annotation's text box in pixels, without its leader line."""
    ann.update_positions(renderer)  # an annotation's place is computed when drawn
    return matplotlib.text.Text.get_window_extent(ann, renderer)


def _label_points(fig: Any, ax: Any, points: Sequence[tuple[float, float, str]],
                  others: Sequence[tuple[float, float]] = ()) -> None:
    """Annotate each point with its text where it overlaps no label already placed, no marker (of
    ``points`` or ``others``) and stays inside the axes: the first free spot among offsets around the point, farther out when
    the near ones are taken (with a leader line), else the last one tried."""
    renderer = fig.canvas.get_renderer()
    frame = ax.get_window_extent(renderer)
    marks = []
    for x, y in [(p[0], p[1]) for p in points] + list(others):
        px, py = ax.transData.transform((x, y))
        marks.append(matplotlib.transforms.Bbox.from_bounds(px - 4, py - 4, 8, 8))
    placed: list[Any] = []
    # Right or left of the point, stepping up and down a line at a time, nearest first.
    offsets = sorted(((dx, dy) for dx in (6, -6, 30, -30) for dy in range(-4 - 11 * 12, 11 * 12, 11)),
                     key=lambda o: (abs(o[0]) > 6, abs(o[1] + 4), o[0] < 0))
    for x, y, text in points:
        chosen = None
        for dx, dy in offsets:
            ann = ax.annotate(text, (x, y), textcoords="offset points", xytext=(dx, dy), fontsize=7,
                              ha="left" if dx >= 0 else "right",
                              arrowprops={"arrowstyle": "-", "color": "#999", "lw": 0.6} if abs(dy) > 10 else None)
            box = _text_box(ann, renderer)
            inside = frame.contains(box.x0, box.y0) and frame.contains(box.x1, box.y1)
            if inside and not _overlaps(box, placed) and not _overlaps(box, marks):
                chosen = (ann, box)
                break
            ann.remove()
        if chosen is None:  # nowhere free: the first spot, which a reader can still follow
            ann = ax.annotate(text, (x, y), textcoords="offset points", xytext=(6, 0), fontsize=7)
            chosen = (ann, _text_box(ann, renderer))
        placed.append(chosen[1])


@_plain
def pareto(quality: Sequence[float], cost: Sequence[float], front: Sequence[bool], names: Sequence[str],
           path: Path, *, metric: str, cost_label: str, higher_is_better: bool = True,
           ci: Sequence[Sequence[float] | None] | None = None) -> Path | None:
    """Quality against cost, one point per cell: the Pareto front in colour and labelled, the
    dominated cells grey. Cells at the same point share one label; labels are placed where they
    overlap nothing. ``ci``: each cell's 95% CI of ``quality`` over questions, drawn as whiskers on
    the front (a front a few hundredths apart is within them). The quality axis starts at 0 for
    values that cannot be negative (:func:`value_axis`) and says so."""
    pts = [(q, c, f, n) for q, c, f, n in zip(quality, cost, front, names) if q == q and c == c]
    if len(pts) < 2:
        return None
    whiskers = _front_whiskers(quality, cost, front, list(ci) if ci is not None else [None] * len(quality))
    fig, ax = plt.subplots(figsize=(8, 4.8))
    dom = [(c, q) for q, c, f, _ in pts if not f]
    if dom:
        ax.scatter([c for c, _ in dom], [q for _, q in dom], color="#bbbbbb", s=18, label=f"dominated ({len(dom)})")
    at = _front_cells(pts)
    best = sorted(at)
    ax.plot([c for c, _ in best], [q for _, q in best], "-o", color="#d62728", ms=5,
            label=f"Pareto front ({sum(len(v) for v in at.values())} cells)")
    drawn = [(c, q, w) for (c, q), w in whiskers.items()]
    if drawn:
        ax.errorbar([c for c, _, _ in drawn], [q for _, q, _ in drawn],
                    yerr=[[q - w[0] for _, q, w in drawn], [w[1] - q for _, q, w in drawn]], fmt="none",
                    ecolor="#d62728", alpha=0.5, capsize=3, label="whiskers: 95 % CI over questions")
    _pareto_axes(ax, pts, drawn, metric=metric, cost_label=cost_label, higher_is_better=higher_is_better)
    fig.tight_layout()
    _label_points(fig, ax, _front_labels(at, best[:12]), others=dom + _front_obstacles(best, drawn))
    return _save(fig, path)


def _front_cells(pts: Sequence[tuple[float, float, bool, str]]) -> dict[tuple[float, float], list[str]]:
    """The front's points ``{(cost, quality): [cell names there]}``."""
    at: dict[tuple[float, float], list[str]] = {}
    for q, c, f, n in pts:
        if f:
            at.setdefault((c, q), []).append(n)
    return at


def _front_whiskers(quality: Sequence[float], cost: Sequence[float], front: Sequence[bool],
                    cis: Sequence[Sequence[float] | None]) -> dict[tuple[float, float], Sequence[float]]:
    """The front's points with a finite two-sided CI: ``{(cost, quality): (lo, hi)}``."""
    return {(c, q): w for q, c, f, w in zip(quality, cost, front, cis)
            if f and q == q and c == c and w is not None and len(w) == 2 and all(x == x for x in w)}


def _pareto_axes(ax: Any, pts: Sequence[tuple[float, float, bool, str]],
                 drawn: Sequence[tuple[float, float, Sequence[float]]], *, metric: str, cost_label: str,
                 higher_is_better: bool) -> None:
    """:func:`pareto`'s axes: labels, legend below, title, margins for the labels, cost from 0."""
    bottom, top, from_zero = value_axis([q for q, _, _, _ in pts] + [x for _, _, w in drawn for x in w])
    ax.set_xlabel(f"{cost_label} (lower is better)")
    ax.set_ylabel(f"{metric} ({'higher' if higher_is_better else 'lower'} is better;\n{axis_note(bottom, from_zero)})")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=3, frameon=False)  # covers no point
    ax.set_title(f"{metric} vs {cost_label}: cells worth considering", fontsize=10)
    ax.margins(x=0.25, y=0.15)  # room for the labels inside the axes
    if min(c for _, c, _, _ in pts) >= 0:
        ax.set_xlim(left=0)  # a cost is never negative
    ax.set_ylim(bottom, top + (top - bottom) * 0.08)  # room above the best point for its label


def _front_labels(at: dict[tuple[float, float], list[str]],
                  shown: Sequence[tuple[float, float]]) -> list[tuple[float, float, str]]:
    """A label per front point shown: the first two cells there, and how many more."""
    return [(c, q, " | ".join(at[(c, q)][:2]) + (f" (+{len(at[(c, q)]) - 2} more)" if len(at[(c, q)]) > 2 else ""))
            for c, q in shown]


def _front_obstacles(best: Sequence[tuple[float, float]],
                     drawn: Sequence[tuple[float, float, Sequence[float]]]) -> list[tuple[float, float]]:
    """The front's line and the whiskers are obstacles too: points along each of them."""
    line = [(c0 + (c1 - c0) * t / 20, q0 + (q1 - q0) * t / 20) for (c0, q0), (c1, q1) in zip(best, best[1:])
            for t in range(1, 20)]
    return line + [(c, w[0] + (w[1] - w[0]) * t / 20) for c, _, w in drawn for t in range(21)]


@_plain
def metric_vs_k(cells: Sequence[Cell], path: Path,
                families: Sequence[measures.Measure] = (measures.HIT, measures.RECALL)) -> Path | None:
    """``hit@k`` and ``recall@k`` against k, one line per retriever (mean over its cells) with its
    95% CI over questions as a band (:func:`depth_curves`)."""
    curves = depth_curves(cells, families)
    if curves is None:
        return None
    ks, by_family = curves
    fig, axes = plt.subplots(1, len(families), figsize=(5 * len(families), 3.8), squeeze=False)
    for ax, fam in zip(axes[0], families):
        for r, (means, lows, highs) in sorted(by_family[fam.family].items()):
            line, = ax.plot(ks, means, marker="o", label=r)
            if not np.isnan(lows).all():
                ax.fill_between(ks, lows, highs, color=line.get_color(), alpha=0.15, lw=0)
        ax.set_xlabel("k")
        ax.set_ylabel(f"{fam.family}@k (axis from 0)")
        ax.set_ylim(0, 1.02)
        ax.set_xticks(ks)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, title="retriever", title_fontsize=8)
    fig.suptitle("Metric vs k per retriever: mean over its cells; band: 95 % CI, bootstrap over questions", fontsize=10)
    return _save(fig, path)


def depth_curves(cells: Sequence[Cell], families: Sequence[measures.Measure] = (measures.HIT, measures.RECALL)
                 ) -> tuple[list[int], dict[str, dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]]] | None:
    """What :func:`metric_vs_k` draws: the cutoffs k, and per family and retriever the mean over
    the retriever's cells of ``family@k`` at each k with its 95% CI over questions (the questions
    drawn with replacement, the same draw for every cell, the retriever's cells averaged in each
    draw: :mod:`rag_bench.decision.effects`). None with fewer than two cutoffs."""
    by_retriever: dict[str, list[Cell]] = {}
    for c in cells:
        by_retriever.setdefault(str((c.config.get("retriever") or {}).get("name", "?")), []).append(c)
    hit = measures.HIT
    ks = sorted({m.cutoff for c in cells for name in c.metrics.get("retrieval", {})
                 if (m := measures.measure(f"retrieval/{name}")) is not None and m.family == hit.family
                 and m.cutoff is not None})
    if len(ks) < 2:
        return None
    qids = views.question_ids(cells)
    d = effects.draws(len(qids))
    out: dict[str, dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]] = {}
    for fam in families:
        for r, group in by_retriever.items():
            means, lows, highs = [], [], []
            for k in ks:
                view = views.measure_view(fam.at(k).key)
                means.append(float(np.mean([c.metric(fam.at(k).key) or 0 for c in group])))
                lo, hi = effects.interval(view.resampled(group, qids, d)) if qids else (np.nan, np.nan)
                lows.append(lo)
                highs.append(hi)
            out.setdefault(fam.family, {})[r] = (np.array(means), np.array(lows), np.array(highs))
    return ks, out


@_plain
def ann_tradeoff(cells: Sequence[Cell], path: Path) -> Path | None:
    """ANN recall@k against ANN p50 query latency, one point per index setting, flat for reference;
    for an index tuned to ``index.target_recall``, its tuning curve (recall@10 against latency per
    knob value tried, on the tuning half of the questions) as a line through its points, the
    chosen value ringed and the target dashed."""
    from rag_bench.evaluation.scorers import ann as ann_scorer  # the ann section's measures

    pts = [(c.metrics["ann"], c) for c in cells if c.metrics.get("ann")
           and str(c.metrics["ann"].get("index", "flat")) != "flat"]
    if not pts:
        return None  # flat against flat is one point on the edge: nothing to trade
    cuts = {m.cutoff for k in pts[0][0] if (m := measures.measure(f"ann/{k}")) is not None
            and m.family == ann_scorer.ANN_RECALL.family and m.cutoff is not None}
    kmax = 10 if 10 in cuts else max(cuts)  # the tuner's cutoff when the cell has it
    fig, ax = plt.subplots(figsize=(7, 4.2))
    seen, curve_ms = _tuning_curves(ax, [ann for ann, _ in pts])
    _index_points(ax, [ann for ann, _ in pts], kmax)
    exact = np.median([ann[ann_scorer.EXACT_P50.name] for ann, _ in pts])
    ax.axvline(exact, ls="--", color="grey", lw=1, label=f"flat p50 {exact:.3f} ms")
    _latency_axis(ax, [x for x in curve_ms if x > 0] + [ann[ann_scorer.ANN_P50.name] for ann, _ in pts
                                                        if ann.get(ann_scorer.ANN_P50.name)])
    ax.set_xlabel("ANN query latency p50 (ms)" + (", log scale" if ax.get_xscale() == "log" else ""))
    ax.set_ylabel(f"{ann_scorer.ANN_RECALL.at(kmax).name} vs flat")
    ax.set_ylim(0, 1.05)
    ax.legend(fontsize=7)
    ax.set_title("ANN recall vs latency per index" + (" (lines: tuning curves)" if seen else " setting"))
    return _save(fig, path)


def _tuning_curves(ax: Any, anns: Sequence[dict[str, Any]]) -> tuple[set[Any], list[float]]:
    """:func:`ann_tradeoff`'s tuning curves, one per index and target (the chosen value ringed, each
    target dashed); the curves drawn and their latencies."""
    from rag_bench.evaluation.scorers import ann as ann_scorer  # the ann section's measures

    seen, targets = set(), set()
    curve_ms: list[float] = []
    for ann in anns:
        curve = ann.get("tune_curve") or []
        key = (ann.get("index"), ann.get(ann_scorer.TARGET.name))
        if curve and key not in seen:
            seen.add(key)
            xs, ys = [p["p50_ms"] for p in curve], [p["recall"] for p in curve]
            curve_ms += xs
            line, = ax.plot(xs, ys, marker=".", lw=1, label=f"{ann.get('index')}: {ann.get('tuned_knob')} "
                            f"{curve[0]['value']}..{curve[-1]['value']} (tuning half, recall@10)")
            chosen = next((p for p in curve if p["value"] == ann.get(ann_scorer.TUNED_VALUE.name)), None)
            if chosen is not None:
                ax.scatter([chosen["p50_ms"]], [chosen["recall"]], s=90, facecolors="none",
                           edgecolors=line.get_color(), zorder=3)
                ax.annotate(f"{ann.get('tuned_knob')}={chosen['value']}", (chosen["p50_ms"], chosen["recall"]),
                            textcoords="offset points", xytext=(6, -12 * len(seen)), fontsize=8)  # stacked
            targets.add(float(ann[ann_scorer.TARGET.name]))
    for target in sorted(targets):
        ax.axhline(target, ls=":", color="grey", lw=1, label=f"target recall {target:g}")
    return seen, curve_ms


def _index_points(ax: Any, anns: Sequence[dict[str, Any]], kmax: int) -> None:
    """:func:`ann_tradeoff`'s points: one per index setting, labelled with its index."""
    from rag_bench.evaluation.scorers import ann as ann_scorer  # the ann section's measures

    drawn = set()
    for ann in anns:
        key = ann.get("index"), ann.get(ann_scorer.TUNED_VALUE.name)
        if key in drawn:
            continue
        drawn.add(key)
        x, y = ann.get(ann_scorer.ANN_P50.name), ann.get(ann_scorer.ANN_RECALL.at(kmax).name)
        ax.scatter([x], [y], s=40)
        ax.annotate(str(ann.get("index")), (x, y), textcoords="offset points", xytext=(5, 4 + 10 * (len(drawn) - 1)),
                    fontsize=8)  # stacked: tuned indexes end near one point (the target)


def _latency_axis(ax: Any, xs: Sequence[float]) -> None:
    """A log latency axis when the latencies ``xs`` are more than 20x apart, else linear from 0."""
    if xs and max(xs) > 20 * min(xs):  # indexes 100x apart (FAISS HNSW, LanceDB): both legible
        ax.set_xscale("log")
        # plain numbers: the default log labels are mathtext, printed raw under plain_text()
        ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    else:
        ax.set_xlim(left=0)


def failure_labels(cells: Sequence[Cell]) -> list[str]:
    """The failure labels of ``cells``, in attribution order (retrieval first, then generation)."""
    return in_attribution_order(k for c in cells for k in c.metrics.get("failures", {}))


def failure_legend(label: str) -> str:
    """A failure label as the legend names it: with its stage family when the name does not say it."""
    family = FAILURE_FAMILY.get(label)
    return label if family is None or family == label else f"{label} ({family})"


@_plain
def failures(cells: Sequence[Cell], path: Path, *, labels: Sequence[str] | None = None, metric: str | None = None,
             top: int | None = TOP) -> Path:
    """Stacked bars: how many questions each of the ``top`` cells (by ``metric``) lost at each
    stage, best cell on top."""
    names = _names(cells, labels)
    labs = failure_labels(cells)
    shown = ranked(cells, metric or measures.PRIMARY.key, top)[::-1]
    fig, ax = plt.subplots(figsize=(9, _height(len(shown)) + 0.6))
    left = np.zeros(len(shown))
    bars = {}
    for lab in labs:
        vals = np.array([c.metrics.get("failures", {}).get(lab, 0) for c in shown], dtype=float)
        if vals.any():
            bars[lab] = ax.barh(range(len(shown)), vals, left=left, label=failure_legend(lab),
                                color=FAILURE_COLORS.get(lab))
        left += vals
    ax.set_yticks(range(len(shown)), [names[c.cell_id] for c in shown], fontsize=8)
    ax.set_xlabel("questions (answerable: first stage that lost them; unanswerable: refused or not)")
    # The legend hangs a fixed distance (in points) below the axes, under the x label: anchored at a
    # share of the axes' height it covered the label of a chart of a few cells.
    order = sorted(bars, key=lambda lab: (FAMILY_ORDER.index(FAILURE_FAMILY[lab]) if lab in FAILURE_FAMILY
                                          else len(FAMILY_ORDER), labs.index(lab)))
    ax.legend([bars[lab] for lab in order], [failure_legend(lab) for lab in order], fontsize=8,
              ncol=min(3, len(order)), loc="upper center", bbox_to_anchor=(0.5, 0), borderaxespad=4.5,
              title="colour: the stage that lost the question (hue), the outcome within it (shade)", title_fontsize=8)
    more = f" (top {len(shown)} of {len(cells)} by {metric or measures.PRIMARY.key})" if len(shown) < len(cells) else ""
    ax.set_title(f"Failure attribution per cell{more}")
    return _save(fig, path)


@_plain
def top1_scores(cell: Cell, path: Path, *, name: str | None = None) -> tuple[Path, dict[str, float]] | None:
    """Histograms of the top-1 retrieval score for answerable vs unanswerable questions, with the
    best-F1 threshold and the AUROC of "answerable" from that score alone."""
    r = cell.records
    top = np.array([s[0] if len(s) else np.nan for s in r["scores"]], dtype=float)
    y = r["answerable"].to_numpy(bool)
    keep = ~np.isnan(top)
    if not (y[keep].any() and (~y[keep]).any()):
        return None
    a = auroc(top[keep], y[keep])
    t, f1 = best_f1_threshold(top[keep], y[keep])
    fig, ax = plt.subplots(figsize=(7, 3.8))
    bins = np.linspace(top[keep].min(), top[keep].max(), 25).tolist()
    ax.hist(top[keep & y], bins=bins, alpha=0.6, label=f"answerable (n={int((keep & y).sum())})")
    ax.hist(top[keep & ~y], bins=bins, alpha=0.6, label=f"unanswerable (n={int((keep & ~y).sum())})")
    ax.axvline(t, color="black", ls="--", label=f"best-F1 threshold {t:.3g} (F1 {f1:.2f})")
    ax.set_xlabel("top-1 retrieval score")
    ax.set_ylabel("questions")
    ax.legend(fontsize=8)
    ax.set_title(f"{name or cell.label}: AUROC {a:.2f}")
    return _save(fig, path), {"auroc": a, "threshold": t, "f1": f1}
