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
from rag_bench.evaluation import measures  # noqa: E402
from rag_bench.failure_labels import in_attribution_order  # noqa: E402
from rag_bench.reporting import decide  # noqa: E402
from rag_bench.stats.threshold import auroc, best_f1_threshold  # noqa: E402

TOP = 20  # cells drawn in per-cell charts (every cell is in the report's table)
MAX_HEIGHT_IN = 9.0  # no chart taller than a screen at the report's 110 dpi

# Semantic colours: losses warm (darker the earlier the stage that lost the question; a
# hallucinated answer the darkest red), successes green, a failed call grey.
FAILURE_COLORS = {"chunking": "#7f2704", "retrieval_miss": "#d62728", "ranking": "#f16913",
                  "false_refusal": "#fd8d3c", "generation": "#fdae6b", "citation": "#fdd0a2",
                  "hallucinated_answer": "#67000d", "error": "#7f7f7f", "unjudged": "#d9d9d9",
                  "in_context": "#a1d99b", "correct": "#238b45", "correct_refusal": "#74c476"}


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
    :func:`rag_bench.reporting.decide.rank` (as the leaderboard, the report and MLflow)."""
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


@_plain
def interaction(grid: pd.DataFrame, metric: str, path: Path, *, rows: str, cols: str) -> Path | None:
    """Heatmap of the mean of ``metric`` per (``rows`` level, ``cols`` level), over the other
    axes. The colour scale starts at 0 (at 1 for measures bounded by it), so the colour of a
    0.83 and a 0.89 differ as little as the numbers do; each number is printed in black or white,
    whichever reads on its colour."""
    if grid.size < 2:
        return None
    values = grid.to_numpy(dtype=float)
    top = np.nanmax(values)
    vmax = 1.0 if top <= 1.0 else top
    cmap = plt.get_cmap("viridis")
    norm = matplotlib.colors.Normalize(vmin=0.0, vmax=vmax)
    fig, ax = plt.subplots(figsize=(min(max(1.3 * grid.shape[1] + 3, 6.5), 12),
                                    min(0.5 * grid.shape[0] + 2.2, MAX_HEIGHT_IN)))
    im = ax.imshow(values, cmap=cmap, norm=norm, aspect="auto")
    ax.set_xticks(range(grid.shape[1]), [str(c) for c in grid.columns], rotation=30, ha="right", fontsize=8)
    ax.set_yticks(range(grid.shape[0]), [str(r) for r in grid.index], fontsize=8)
    ax.set_xlabel(cols)
    ax.set_ylabel(rows)
    for i in range(grid.shape[0]):
        for j in range(grid.shape[1]):
            if not np.isnan(values[i, j]):
                ax.text(j, i, f"{values[i, j]:.3f}", ha="center", va="center", fontsize=8,
                        color=_text_color(cmap(norm(values[i, j]))))
    fig.colorbar(im, ax=ax, label=f"{metric} (scale from 0)")
    ax.set_title(f"{metric}: {rows} × {cols}\n(mean over the other axes)", fontsize=10)
    return _save(fig, path)


@_plain
def main_effects(effects: Sequence[Any], metric: str, path: Path, *, grand: float | None = None,
                 higher_is_better: bool = True) -> Path | None:
    """One row of points per axis level with its 95% CI (over cells), axes ordered by how much
    they move ``metric``; the dashed vertical line is ``grand``, the mean of all cells (drawn
    when given)."""
    if not effects:
        return None
    rows = sum(len(e.levels) for e in effects)
    fig, axes_ = plt.subplots(len(effects), 1, figsize=(8, _height(rows + len(effects)) + 0.3), squeeze=False,
                              sharex=True, gridspec_kw={"height_ratios": [len(e.levels) for e in effects]})
    lo_all = min(lv.lo for e in effects for lv in e.levels)
    hi_all = max(lv.hi for e in effects for lv in e.levels)
    pad = max((hi_all - lo_all) * 0.1, 0.01)
    for ax, e in zip(axes_[:, 0], effects):
        ys = range(len(e.levels))[::-1]
        means = [lv.mean for lv in e.levels]
        err = [[lv.mean - lv.lo for lv in e.levels], [lv.hi - lv.mean for lv in e.levels]]
        ax.errorbar(means, list(ys), xerr=err, fmt="o", color="#4c72b0", capsize=3,
                    label="dot: mean of the level's cells; whiskers: 95 % CI")
        ax.set_yticks(list(ys), [f"{lv.value} (n={lv.cells})" for lv in e.levels], fontsize=8)
        ax.set_ylim(-0.6, len(e.levels) - 0.4)
        if grand is not None and np.isfinite(grand):
            ax.axvline(grand, color="grey", lw=1, ls="--", label=f"dashed: mean of all cells ({grand:.3f})")
        ax.set_title(f"{e.axis}: spread {e.spread:.3f}{'' if e.balanced else ' (unbalanced)'}", fontsize=9,
                     loc="left")
        ax.grid(axis="x", alpha=0.3)
    # The legend above the panels, where it covers no point.
    axes_[0, 0].legend(loc="lower left", bbox_to_anchor=(0, 1.22), ncol=2, fontsize=7, frameon=False)
    axes_[-1, 0].set_xlim(lo_all - pad, hi_all + pad)
    axes_[-1, 0].set_xlabel(f"mean {metric} of the cells at each level ({'higher' if higher_is_better else 'lower'} "
                            "is better)")
    fig.suptitle(f"Main effects on {metric}: which choice moves it (largest spread first)", fontsize=10)
    return _save(fig, path)


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
                              arrowprops={"arrowstyle": "-", "color": "#999", "lw": 0.6} if abs(dy) > 20 else None)
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
           path: Path, *, metric: str, cost_label: str, higher_is_better: bool = True) -> Path | None:
    """Quality against cost, one point per cell: the Pareto front in colour and labelled, the
    dominated cells grey. Cells at the same point share one label; labels are placed where they
    overlap nothing."""
    pts = [(q, c, f, n) for q, c, f, n in zip(quality, cost, front, names) if q == q and c == c]
    if len(pts) < 2:
        return None
    fig, ax = plt.subplots(figsize=(8, 4.8))
    dom = [(c, q) for q, c, f, _ in pts if not f]
    if dom:
        ax.scatter([c for c, _ in dom], [q for _, q in dom], color="#bbbbbb", s=18, label=f"dominated ({len(dom)})")
    at: dict[tuple[float, float], list[str]] = {}
    for q, c, f, n in pts:
        if f:
            at.setdefault((c, q), []).append(n)
    best = sorted(at)
    n_front = sum(len(v) for v in at.values())
    ax.plot([c for c, _ in best], [q for _, q in best], "-o", color="#d62728", ms=5,
            label=f"Pareto front ({n_front} cells)")
    ax.set_xlabel(f"{cost_label} (lower is better)")
    ax.set_ylabel(f"{metric} ({'higher' if higher_is_better else 'lower'} is better)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2, frameon=False)  # covers no point
    ax.set_title(f"{metric} vs {cost_label}: cells worth considering", fontsize=10)
    ax.margins(x=0.25, y=0.15)  # room for the labels inside the axes
    if min(c for _, c, _, _ in pts) >= 0:
        ax.set_xlim(left=0)  # a cost is never negative
    fig.tight_layout()
    shown = best[:12]
    labels = [(c, q, " | ".join(at[(c, q)][:2]) + (f" (+{len(at[(c, q)]) - 2} more)" if len(at[(c, q)]) > 2 else ""))
              for c, q in shown]
    # The front's line is an obstacle too: points along each of its segments.
    line = [(c0 + (c1 - c0) * t / 20, q0 + (q1 - q0) * t / 20) for (c0, q0), (c1, q1) in zip(best, best[1:])
            for t in range(1, 20)]
    _label_points(fig, ax, labels, others=dom + line)
    return _save(fig, path)


@_plain
def metric_vs_k(cells: Sequence[Cell], path: Path,
                families: Sequence[measures.Measure] = (measures.HIT, measures.RECALL)) -> Path | None:
    """``hit@k`` and ``recall@k`` against k, one line per retriever (mean over its cells)."""
    by_retriever: dict[str, list[Cell]] = {}
    for c in cells:
        by_retriever.setdefault(str((c.config.get("retriever") or {}).get("name", "?")), []).append(c)
    hit = measures.HIT
    ks = sorted({m.cutoff for c in cells for name in c.metrics.get("retrieval", {})
                 if (m := measures.measure(f"retrieval/{name}")) is not None and m.family == hit.family
                 and m.cutoff is not None})
    if len(ks) < 2:
        return None
    fig, axes = plt.subplots(1, len(families), figsize=(5 * len(families), 3.6), squeeze=False)
    for ax, fam in zip(axes[0], families):
        for r, group in sorted(by_retriever.items()):
            ys = [np.mean([c.metric(fam.at(k).key) or 0 for c in group]) for k in ks]
            ax.plot(ks, ys, marker="o", label=r)
        ax.set_xlabel("k")
        ax.set_ylabel(f"{fam.family}@k")
        ax.set_ylim(0, 1.02)
        ax.set_xticks(ks)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("Metric vs k per retriever (mean over cells)")
    return _save(fig, path)


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
    seen, targets = set(), set()
    curve_ms: list[float] = []
    for ann, _ in pts:
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
    drawn = set()
    for ann, c in pts:
        key = ann.get("index"), ann.get(ann_scorer.TUNED_VALUE.name)
        if key in drawn:
            continue
        drawn.add(key)
        x, y = ann.get(ann_scorer.ANN_P50.name), ann.get(ann_scorer.ANN_RECALL.at(kmax).name)
        ax.scatter([x], [y], s=40)
        ax.annotate(str(ann.get("index")), (x, y), textcoords="offset points", xytext=(5, 4 + 10 * (len(drawn) - 1)),
                    fontsize=8)  # stacked: tuned indexes end near one point (the target)
    exact = np.median([ann[ann_scorer.EXACT_P50.name] for ann, _ in pts])
    ax.axvline(exact, ls="--", color="grey", lw=1, label=f"flat p50 {exact:.3f} ms")
    xs = [x for x in curve_ms if x > 0] + [ann[ann_scorer.ANN_P50.name] for ann, _ in pts
                                          if ann.get(ann_scorer.ANN_P50.name)]
    if xs and max(xs) > 20 * min(xs):  # indexes 100x apart (FAISS HNSW, LanceDB): both legible
        ax.set_xscale("log")
        # plain numbers: the default log labels are mathtext, printed raw under plain_text()
        ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    else:
        ax.set_xlim(left=0)
    ax.set_xlabel("ANN query latency p50 (ms)" + (", log scale" if ax.get_xscale() == "log" else ""))
    ax.set_ylabel(f"{ann_scorer.ANN_RECALL.at(kmax).name} vs flat")
    ax.set_ylim(0, 1.05)
    ax.legend(fontsize=7)
    ax.set_title("ANN recall vs latency per index" + (" (lines: tuning curves)" if seen else " setting"))
    return _save(fig, path)


def failure_labels(cells: Sequence[Cell]) -> list[str]:
    """The failure labels of ``cells``, in attribution order (retrieval first, then generation)."""
    return in_attribution_order(k for c in cells for k in c.metrics.get("failures", {}))


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
    for lab in labs:
        vals = np.array([c.metrics.get("failures", {}).get(lab, 0) for c in shown], dtype=float)
        if vals.any():
            ax.barh(range(len(shown)), vals, left=left, label=lab, color=FAILURE_COLORS.get(lab))
        left += vals
    ax.set_yticks(range(len(shown)), [names[c.cell_id] for c in shown], fontsize=8)
    ax.set_xlabel("questions (answerable: first stage that lost them; unanswerable: refused or not)")
    ax.legend(fontsize=8, ncol=min(4, len(labs)), loc="upper center", bbox_to_anchor=(0.5, -0.18))
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
