"""Matplotlib charts for design reviews. Each function takes cells, writes one PNG, returns its
path (or None when the experiment has nothing to show for that chart)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from rag_bench.cells import Cell  # noqa: E402
from rag_bench.metrics import measures  # noqa: E402
from rag_bench.stats.threshold import auroc, best_f1_threshold  # noqa: E402

FAILURE_COLORS = {"chunking": "#8c564b", "retrieval_miss": "#d62728", "ranking": "#ff7f0e",
                  "false_refusal": "#9467bd", "generation": "#e377c2", "citation": "#bcbd22",
                  "in_context": "#2ca02c", "correct": "#2ca02c", "error": "#7f7f7f",
                  "correct_refusal": "#1f77b4", "hallucinated_answer": "#17becf"}


def _save(fig: plt.Figure, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def leaderboard(cells: Sequence[Cell], metric: str, path: Path) -> Path:
    """Horizontal bars of ``metric`` per cell with the 95% bootstrap CI as error bars, best on top."""
    rows = sorted(((c.metric(metric) or 0.0, c) for c in cells), key=lambda t: t[0])
    fig, ax = plt.subplots(figsize=(9, 0.45 * len(rows) + 1.6))
    vals = [v for v, _ in rows]
    lo = [v - (c.metrics.get("ci", {}).get(metric) or [v, v])[0] for v, c in rows]
    hi = [(c.metrics.get("ci", {}).get(metric) or [v, v])[1] - v for v, c in rows]
    ax.barh(range(len(rows)), vals, xerr=[lo, hi], color="#4c72b0", capsize=3)
    ax.set_yticks(range(len(rows)), [c.label for _, c in rows], fontsize=8)
    ax.set_xlabel(f"{metric} (bars: 95% bootstrap CI over questions)")
    ax.set_xlim(0, 1.05)
    ax.set_title("Leaderboard")
    return _save(fig, path)


def heatmap(cells: Sequence[Cell], metric: str, path: Path) -> Path | None:
    """Chunker × retriever grid of ``metric`` (the best cell of each pair)."""
    def name(c: Cell, g: str) -> str:
        return str((c.config.get(g) or {}).get("name", "?"))

    chunkers = sorted({name(c, "chunker") for c in cells})
    retrievers = sorted({name(c, "retriever") for c in cells})
    if len(chunkers) * len(retrievers) < 2:
        return None
    grid = np.full((len(chunkers), len(retrievers)), np.nan)
    for c in cells:
        i, j, v = chunkers.index(name(c, "chunker")), retrievers.index(name(c, "retriever")), c.metric(metric)
        if v is not None and not (grid[i, j] >= v):
            grid[i, j] = v
    fig, ax = plt.subplots(figsize=(1.6 * len(retrievers) + 3, 0.6 * len(chunkers) + 1.8))
    im = ax.imshow(grid, cmap="viridis", vmin=np.nanmin(grid), vmax=np.nanmax(grid), aspect="auto")
    ax.set_xticks(range(len(retrievers)), retrievers)
    ax.set_yticks(range(len(chunkers)), chunkers)
    for i in range(len(chunkers)):
        for j in range(len(retrievers)):
            if not np.isnan(grid[i, j]):
                ax.text(j, i, f"{grid[i, j]:.3f}", ha="center", va="center", color="white", fontsize=9)
    fig.colorbar(im, ax=ax, label=metric)
    ax.set_title(f"{metric}: chunker × retriever (best cell of each pair)")
    return _save(fig, path)


def metric_vs_k(cells: Sequence[Cell], path: Path, families: Sequence[str] = ("hit", "recall")) -> Path | None:
    """``hit@k`` and ``recall@k`` against k, one line per retriever (mean over its cells)."""
    by_retriever: dict[str, list[Cell]] = {}
    for c in cells:
        by_retriever.setdefault(str((c.config.get("retriever") or {}).get("name", "?")), []).append(c)
    hit = measures.family("retrieval", "hit")
    ks = sorted({m.cutoff for c in cells for name in c.metrics.get("retrieval", {})
                 if (m := measures.measure(f"retrieval/{name}")) is not None and m.family == hit.family
                 and m.cutoff is not None})
    if len(ks) < 2:
        return None
    fig, axes = plt.subplots(1, len(families), figsize=(5 * len(families), 3.6), squeeze=False)
    for ax, fam in zip(axes[0], families):
        for r, group in sorted(by_retriever.items()):
            ys = [np.mean([c.metric(measures.family("retrieval", fam).at(k).key) or 0 for c in group]) for k in ks]
            ax.plot(ks, ys, marker="o", label=r)
        ax.set_xlabel("k")
        ax.set_ylabel(f"{fam}@k")
        ax.set_ylim(0, 1.02)
        ax.set_xticks(ks)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("Metric vs k per retriever (mean over cells)")
    return _save(fig, path)


def ann_tradeoff(cells: Sequence[Cell], path: Path) -> Path | None:
    """ANN recall@k against ANN p50 query latency, one point per index setting, flat for reference."""
    pts = [(c.metrics["ann"], c) for c in cells if c.metrics.get("ann")]
    if not pts:
        return None
    kmax = max(int(k.split("@")[1]) for k in pts[0][0] if k.startswith("ann_recall@"))
    fig, ax = plt.subplots(figsize=(7, 4.2))
    seen = set()
    for ann, c in pts:
        key = ann.get("index")
        if key in seen:
            continue
        seen.add(key)
        x, y = ann.get("ann_p50_ms"), ann.get(f"ann_recall@{kmax}")
        ax.scatter([x], [y], s=40)
        ax.annotate(str(key), (x, y), textcoords="offset points", xytext=(5, 4), fontsize=8)
    exact = np.median([ann["exact_p50_ms"] for ann, _ in pts])
    ax.axvline(exact, ls="--", color="grey", lw=1, label=f"flat p50 {exact:.3f} ms")
    ax.set_xlim(left=0)
    ax.set_xlabel("ANN query latency p50 (ms)")
    ax.set_ylabel(f"ann_recall@{kmax} vs flat")
    ax.set_ylim(0, 1.05)
    ax.legend(fontsize=8)
    ax.set_title("ANN recall vs latency per index setting")
    return _save(fig, path)


def failures(cells: Sequence[Cell], path: Path) -> Path:
    """Stacked bars: how many answerable questions each cell lost at each stage."""
    labels = list(dict.fromkeys(k for c in cells for k in c.metrics.get("failures", {})))
    cells = sorted(cells, key=lambda c: sum(c.metrics.get("failures", {}).get(k, 0) for k in ("in_context", "correct")))
    fig, ax = plt.subplots(figsize=(9, 0.45 * len(cells) + 1.8))
    left = np.zeros(len(cells))
    for lab in labels:
        vals = np.array([c.metrics.get("failures", {}).get(lab, 0) for c in cells], dtype=float)
        ax.barh(range(len(cells)), vals, left=left, label=lab, color=FAILURE_COLORS.get(lab))
        left += vals
    ax.set_yticks(range(len(cells)), [c.label for c in cells], fontsize=8)
    ax.set_xlabel("questions (answerable: first stage that lost them; unanswerable: refused or not)")
    ax.legend(fontsize=8, ncol=min(4, len(labels)), loc="upper center", bbox_to_anchor=(0.5, -0.18))
    ax.set_title("Failure attribution per cell")
    return _save(fig, path)


def top1_scores(cell: Cell, path: Path) -> tuple[Path, dict[str, float]] | None:
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
    ax.set_title(f"{cell.label}: AUROC {a:.2f}")
    return _save(fig, path), {"auroc": a, "threshold": t, "f1": f1}
