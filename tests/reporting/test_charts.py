"""Charts that cannot mislead (issue 28 item 6): Pareto labels that do not overprint, cells at one
point named once, CIs and the mean line labelled for what they are."""

from __future__ import annotations

import itertools

import matplotlib.pyplot as plt
import pytest
from matplotlib.text import Text

from rag_bench.reporting import charts
from rag_bench.reporting.effects import Effect, Level


@pytest.fixture
def kept(monkeypatch):
    """The figures the charts draw, kept open instead of closed after saving."""
    figures = []

    def save(fig, path):
        fig.savefig(path)
        figures.append(fig)
        return path

    monkeypatch.setattr(charts, "_save", save)
    yield figures
    for f in figures:
        plt.close(f)


def _boxes(fig):
    renderer = fig.canvas.get_renderer()
    # The text's own box (an annotation's extent would include its leader line).
    fig.canvas.draw()  # places the annotations
    return [Text.get_window_extent(t, renderer) for ax in fig.axes for t in ax.texts]


def test_pareto_labels_do_not_overlap_and_cells_at_one_point_share_one(kept, tmp_path):
    # Six cells on the front crowded within a few pixels (a far seventh stretches the axes), and two
    # more at the very same point as the first: labels at one fixed offset would overprint.
    quality = [0.300, 0.3004, 0.3008, 0.3012, 0.3016, 0.302, 0.60, 0.30, 0.30]
    cost = [0.050, 0.051, 0.052, 0.053, 0.054, 0.055, 1.0, 0.05, 0.05]
    names = [f"section hybrid rr=none k={i}" for i in range(9)]
    front = [True] * 9
    assert charts.pareto(quality, cost, front, names, tmp_path / "p.png", metric="generation/correct",
                         cost_label="latency") is not None
    (fig,) = kept
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert len(texts) == 7  # one label per distinct point
    assert "section hybrid rr=none k=0 | section hybrid rr=none k=7 (+1 more)" in texts
    boxes = _boxes(fig)
    for a, b in itertools.combinations(boxes, 2):
        assert not a.overlaps(b)
    frame = fig.axes[0].get_window_extent(fig.canvas.get_renderer())
    assert all(frame.contains(b.x0, b.y0) and frame.contains(b.x1, b.y1) for b in boxes)


def test_main_effects_say_what_the_whiskers_and_the_dashed_line_are(kept, tmp_path):
    effect = Effect("chunker", (Level("section", 0.3, 0.25, 0.35, 4), Level("fixed", 0.2, 0.15, 0.25, 4)), 0.1, True)
    charts.main_effects([effect], "generation/correct", tmp_path / "m.png", grand=0.25)
    (fig,) = kept
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert "dashed: mean of all cells (0.250)" in legend
    assert any("whiskers: 95 % CI" in t for t in legend)
    dashed = [ln for ln in fig.axes[0].get_lines() if ln.get_linestyle() == "--"]
    assert len(dashed) == 1 and dashed[0].get_xdata()[0] == pytest.approx(0.25)


def test_a_ranking_measure_is_not_drawn_against_generator_tokens(demo_cells, tmp_path):
    from rag_bench.reporting.report import render_report

    exp = demo_cells["baseline"].path.parent
    by_correct = render_report(exp, out_root=tmp_path / "a", log_to_mlflow=False).parent
    by_ndcg = render_report(exp, out_root=tmp_path / "b", metric="retrieval/ndcg@10", log_to_mlflow=False).parent
    assert (by_correct / "pareto_tokens.png").exists()  # tokens can buy a better answer
    assert not (by_ndcg / "pareto_tokens.png").exists() and (by_ndcg / "pareto_latency.png").exists()


def test_ann_chart_draws_each_tuned_index_recall_against_latency(kept, tmp_path):
    """index.target_recall cells: one line per index through its tuning curve (from metrics.json
    ann/tune_curve), the chosen value ringed and named, the target dashed; an untuned cell stays a point."""
    from types import SimpleNamespace

    def cell(index, curve=None, chosen=None, knob="nprobe"):
        ann = {"index": index, "ann_recall@10": 0.96, "ann_p50_ms": 0.5, "exact_p50_ms": 2.0}
        if curve:
            ann.update(target_recall=0.95, tuned_knob=knob, tuned_value=chosen,
                       tune_curve=[{"value": v, "recall": r, "p50_ms": ms} for v, r, ms in curve])
        return SimpleNamespace(metrics={"ann": ann})

    cells = [cell("hnsw", [(1, 0.3, 0.1), (2, 0.6, 0.2), (4, 0.97, 0.4)], 4, "ef_search"),
             cell("lancedb", [(1, 0.5, 0.3), (2, 0.8, 0.5), (3, 0.96, 0.7)], 3), cell("ivf")]
    assert charts.ann_tradeoff(cells, tmp_path / "ann.png") is not None
    (fig,) = kept
    ax = fig.axes[0]
    curves = [ln for ln in ax.get_lines() if len(ln.get_xdata()) > 2]
    assert [list(ln.get_ydata()) for ln in curves] == [[0.3, 0.6, 0.97], [0.5, 0.8, 0.96]]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any(t.startswith("hnsw: ef_search 1..4") for t in legend) and "target recall 0.95" in legend
    assert {"ef_search=4", "nprobe=3", "ivf"} <= {t.get_text() for t in ax.texts}
    assert ax.get_xscale() == "linear"  # latencies within 20x of one another


def test_ann_chart_turns_logarithmic_when_indexes_are_orders_apart(kept, tmp_path):
    from types import SimpleNamespace

    cells = [SimpleNamespace(metrics={"ann": {"index": name, "ann_recall@10": 0.95, "ann_p50_ms": ms,
                                              "exact_p50_ms": 1.0}}) for name, ms in (("hnsw", 0.05), ("lancedb", 12.0))]
    charts.ann_tradeoff(cells, tmp_path / "ann.png")
    (fig,) = kept
    assert fig.axes[0].get_xscale() == "log" and "log scale" in fig.axes[0].get_xlabel()
    fig.canvas.draw()
    labels = [t.get_text() for t in fig.axes[0].get_xticklabels() if t.get_text()]
    assert labels and not any("$" in t for t in labels), labels  # plain_text() would print mathtext raw
