"""Charts that cannot mislead (issue 28 item 6): Pareto labels that do not overprint, cells at one
point named once, CIs and the mean line labelled for what they are."""

from __future__ import annotations

import itertools

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from matplotlib.text import Text

from rag_bench.decision.effects import Effect, Level
from rag_bench.reporting import charts


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


# --- issue 41: charts that cannot mislead ------------------------------------------------------


def test_main_effects_axis_starts_at_0_for_rates_and_the_whiskers_say_they_are_over_questions(kept, tmp_path):
    # The demo's levels: means 0.22-0.29, whiskers over questions 0.13-0.41. The axis used to run
    # 0.22-0.30, which made a 0.06 spread look like the whole range.
    effect = Effect("chunker", (Level("section", 0.288, 0.169, 0.412, 12), Level("sentence", 0.224, 0.130, 0.327, 12)),
                    0.064, True, 0.004, 0.136)
    charts.main_effects([effect], "generation/correct", tmp_path / "m.png", grand=0.25, questions=61)
    (fig,) = kept
    ax = fig.axes[0]
    assert ax.get_xlim() == pytest.approx(charts.value_axis([0.288, 0.169, 0.412, 0.224, 0.130, 0.327, 0.25])[:2])
    assert ax.get_xlim()[0] == 0.0 and "axis from 0" in ax.get_xlabel()
    legend = " ".join(t.get_text() for t in ax.get_legend().get_texts())
    assert "95 % CI over questions (n = 61)" in legend and "same" not in legend.split("CI")[0]
    assert "one draw for every cell" in legend
    assert ax.get_title(loc="left") == "chunker: spread 0.064 [0.004, 0.136]"
    assert [t.get_text() for t in ax.get_yticklabels()] == ["section (12 cells)", "sentence (12 cells)"]


def test_a_level_without_per_question_values_is_drawn_without_whiskers(kept, tmp_path):
    nan = float("nan")
    effect = Effect("retriever", (Level("bm25", 0.7, nan, nan, 2), Level("dense", 0.6, nan, nan, 2)), 0.1, True)
    charts.main_effects([effect], "m", tmp_path / "m.png")
    (fig,) = kept
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert legend == ["open dot: mean of the level's cells (no per-question values: no interval)"]


def test_value_axes_start_at_0_unless_data_are_negative_and_then_say_so():
    assert charts.value_axis([0.22, 0.30]) == (0.0, pytest.approx(0.315), True)
    assert charts.value_axis([0.9, 0.99, 1.0]) == (0.0, 1.0, True)  # a rate: never past 1
    assert charts.value_axis([120.0, 480.0]) == (0.0, pytest.approx(504.0), True)  # a duration
    left, right, from_zero = charts.value_axis([-0.05, 0.10])
    assert not from_zero and left < -0.05 and right > 0.10
    assert charts.axis_note(left, from_zero) == "axis from -0.065, not 0"


def test_the_interaction_colour_scale_is_fitted_to_the_data_and_says_so(kept, tmp_path):
    # The demo's grid: 0.205-0.295 all one colour on the 0-1 scale drawn before.
    grid = pd.DataFrame([[0.246, 0.230, 0.242], [0.295, 0.279, 0.291], [0.238, 0.205, 0.230]],
                        index=["fixed", "section", "sentence"], columns=["bm25", "dense", "hybrid"])
    assert charts.heat_limits(grid.to_numpy()) == (0.205, 0.295)
    lo, hi = grid - 0.1, grid + 0.12
    charts.interaction(grid, "generation/correct", tmp_path / "i.png", rows="chunker", cols="retriever", lo=lo, hi=hi)
    (fig,) = kept
    image = fig.axes[0].get_images()[0]
    assert (image.norm.vmin, image.norm.vmax) == (0.205, 0.295)
    bar = fig.axes[1]
    assert "colour fitted to the data" in bar.get_ylabel() and "0.205 to 0.295, not from 0" in bar.get_ylabel()
    texts = {t.get_text() for t in fig.axes[0].texts}
    assert "0.295\n[0.195, 0.415]" in texts  # each mean with its CI over questions
    assert charts.heat_limits(np.array([[0.5, np.nan]])) == (0.475, 0.525)  # one value: a scale around it


def _lab(hex_colour: str, vision: str = "normal") -> np.ndarray:
    """CIELAB (D65) of an sRGB colour, as seen with normal vision or (Machado et al. 2009, severity
    1) by a deuteranope or a protanope."""
    rgb = np.array(matplotlib.colors.to_rgb(hex_colour))
    lin = np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    sim = {"normal": np.eye(3),
           "deutan": [[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413], [-0.011820, 0.042940, 0.968881]],
           "protan": [[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216], [-0.003882, -0.048116, 1.051998]]}
    lin = np.clip(np.asarray(sim[vision]) @ lin, 0, 1)
    xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]]) @ lin
    f = xyz / np.array([0.95047, 1.0, 1.08883])
    f = np.where(f > (6 / 29) ** 3, np.cbrt(f), f / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def test_failure_colours_are_one_hue_family_per_stage_and_all_told_apart():
    from rag_bench.failure_labels import GENERATION_CELL_LABELS, RETRIEVAL_LABELS

    labels = set(GENERATION_CELL_LABELS) | set(RETRIEVAL_LABELS) | {"error"}
    assert labels <= set(charts.FAILURE_COLORS) and labels <= set(charts.FAILURE_FAMILY)
    assert set(charts.FAILURE_FAMILY.values()) == set(charts.FAMILY_ORDER)
    # Every pair told apart, for readers with normal colour vision and with the two common deficiencies
    # (the chart had four near-identical oranges: ranking vs false_refusal was 16 apart).
    for vision, least in (("normal", 25), ("deutan", 15), ("protan", 15)):
        for a, b in itertools.combinations(sorted(labels), 2):
            dist = np.linalg.norm(_lab(charts.FAILURE_COLORS[a], vision) - _lab(charts.FAILURE_COLORS[b], vision))
            assert dist >= least, f"{a} and {b}: {dist:.1f} apart for {vision} vision"
    # One hue family per stage: within a family the hues stay within 50 degrees of one another, and
    # the families' hues differ (the greys of "no verdict" have none).
    hue = {lab: np.degrees(np.arctan2(*_lab(c)[[2, 1]])) % 360 for lab, c in charts.FAILURE_COLORS.items()}
    chroma = {lab: np.hypot(*_lab(c)[1:]) for lab, c in charts.FAILURE_COLORS.items()}
    families: dict[str, list[str]] = {}
    for lab, fam in charts.FAILURE_FAMILY.items():
        families.setdefault(fam, []).append(lab)
    centre = {}
    for fam, members in families.items():
        if fam == "no verdict":
            assert all(chroma[m] < 2 for m in members)
            continue
        angles = np.radians([hue[m] for m in members])
        centre[fam] = np.degrees(np.arctan2(np.sin(angles).mean(), np.cos(angles).mean())) % 360
        assert all(min(abs(hue[m] - centre[fam]), 360 - abs(hue[m] - centre[fam])) <= 25 for m in members), fam
    for a, b in itertools.combinations(centre, 2):
        gap = abs(centre[a] - centre[b])
        assert min(gap, 360 - gap) >= 15, (a, b)


def test_the_failure_chart_colours_bars_by_family_and_names_the_family_in_the_legend(kept, tmp_path):
    from types import SimpleNamespace

    counts = {"retrieval_miss": 3, "ranking": 2, "false_refusal": 5, "generation": 4, "citation": 1, "correct": 6,
              "correct_refusal": 7, "hallucinated_answer": 1}
    cell = SimpleNamespace(cell_id="c1", label="c1", metrics={"failures": counts, "retrieval": {"ndcg@10": 0.5}},
                           metric=lambda key: 0.5, config={})
    charts.failures([cell], tmp_path / "f.png", metric="retrieval/ndcg@10")
    (fig,) = kept
    ax = fig.axes[0]
    drawn = {bars.get_label(): matplotlib.colors.to_hex(bars.patches[0].get_facecolor()) for bars in ax.containers}
    assert drawn["false_refusal (generation)"] == charts.FAILURE_COLORS["false_refusal"]
    assert drawn["ranking"] == charts.FAILURE_COLORS["ranking"]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    # Family by family: retrieval, ranking, the three generation outcomes, citation, correct outcomes.
    assert legend == ["retrieval_miss (retrieval)", "ranking", "false_refusal (generation)", "generation",
                      "hallucinated_answer (generation)", "citation", "correct (correct outcome)",
                      "correct_refusal (correct outcome)"]


def test_the_labels_before_generation_have_their_families_and_come_in_attribution_order(kept, tmp_path):
    """Issue 42's labels: partial_evidence beside retrieval_miss (one family, lighter: a lesser
    loss), unauthorized and stale_version one family (what the retriever may return), context one of
    its own, in the legend in the order a question meets them."""
    from types import SimpleNamespace

    counts = {"context": 2, "partial_evidence": 3, "stale_version": 1, "unauthorized": 1, "retrieval_miss": 2,
              "correct": 4}
    cell = SimpleNamespace(cell_id="c1", label="c1", metrics={"failures": counts, "retrieval": {"ndcg@10": 0.5}},
                           metric=lambda key: 0.5, config={})
    charts.failures([cell], tmp_path / "f.png", metric="retrieval/ndcg@10")
    (fig,) = kept
    ax = fig.axes[0]
    drawn = {bars.get_label(): matplotlib.colors.to_hex(bars.patches[0].get_facecolor()) for bars in ax.containers}
    assert drawn["context"] == charts.FAILURE_COLORS["context"]
    assert drawn["partial_evidence (retrieval)"] == charts.FAILURE_COLORS["partial_evidence"]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "unauthorized (access & version)", "stale_version (access & version)", "retrieval_miss (retrieval)",
        "partial_evidence (retrieval)", "context", "correct (correct outcome)"]
    assert _lab(charts.FAILURE_COLORS["partial_evidence"])[0] > _lab(charts.FAILURE_COLORS["retrieval_miss"])[0]


def test_pareto_quality_axis_starts_at_0_and_the_front_carries_its_intervals(kept, tmp_path):
    quality, cost = [0.31, 0.295, 0.26, 0.2], [0.23, 0.04, 0.037, 0.1]
    front = [True, True, True, False]
    ci = [[0.2, 0.44], [0.18, 0.43], [0.15, 0.38], [0.1, 0.3]]
    charts.pareto(quality, cost, front, ["a", "b", "c", "d"], tmp_path / "p.png", metric="generation/correct",
                  cost_label="latency", ci=ci)
    (fig,) = kept
    ax = fig.axes[0]
    assert ax.get_ylim()[0] == 0.0 and "axis from 0" in ax.get_ylabel()
    (bars,) = [c for c in ax.containers if c.get_label() == "whiskers: 95 % CI over questions"]
    segments = sorted(tuple(np.round(s[:, 1], 3)) for s in bars.lines[2][0].get_segments())
    assert segments == [(0.15, 0.38), (0.18, 0.43), (0.2, 0.44)]  # the front's cells only


def test_depth_curves_carry_a_band_over_questions(demo_cells):
    from rag_bench.metrics.bootstrap import bootstrap_ci

    cells = list(demo_cells.values())
    ks, curves = charts.depth_curves(cells)
    means, lows, highs = curves["hit"]["bm25"]
    assert list(means) == pytest.approx([np.mean([c.metric(f"retrieval/hit@{k}") for c in cells]) for k in ks])
    assert (lows <= means).all() and (means <= highs).all()
    # As wide as one cell's own interval over the same questions (the cells share them).
    lo, hi = bootstrap_ci(cells[0].records[f"hit@{ks[0]}"].to_numpy(dtype=float))
    assert highs[0] - lows[0] == pytest.approx(hi - lo, rel=0.5) and highs[0] - lows[0] > 0.05


def test_the_reports_failure_section_says_what_each_label_shown_means(kept, tmp_path):
    """The report's failure table lists the labels it shows with their definitions (the tallies'
    descriptions, one source), in attribution order -- a reader meets partial_evidence or context
    without opening docs/."""
    from types import SimpleNamespace

    from rag_bench.reporting import report

    counts = {"correct": 3, "context": 1, "partial_evidence": 2}
    cell = SimpleNamespace(cell_id="c1", label="c1", metrics={"failures": counts, "retrieval": {"ndcg@10": 0.5}},
                           metric=lambda key: 0.5, config={})
    html = report._failures([cell], [cell], {"c1": "c1"}, "retrieval/ndcg@10", tmp_path, 10)
    listed = html.split("<ul class='labels'>", 1)[1]
    assert listed.index("partial_evidence") < listed.index("<b>context</b>") < listed.index("<b>correct</b>")
    assert "only some of their evidence spans" in listed and "cut from the context by the token budget" in listed


def test_the_failure_legend_never_covers_the_x_label_of_a_short_chart(kept, tmp_path):
    """A failure chart of four cells had its legend (three rows: nine labels) drawn over the x axis'
    label: it hung at a share of the axes' height below them. Now it hangs below the label."""
    from types import SimpleNamespace

    counts = {"retrieval_miss": 4, "ranking": 2, "context": 20, "false_refusal": 12, "generation": 7, "citation": 1,
              "correct": 51, "correct_refusal": 29, "hallucinated_answer": 83}
    cells = [SimpleNamespace(cell_id=f"c{i}", label=f"c{i}", metrics={"failures": counts}, metric=lambda key: 0.5,
                             config={}) for i in range(4)]
    charts.failures(cells, tmp_path / "f.png", metric="retrieval/ndcg@10")
    (fig,) = kept
    fig.tight_layout()  # as charts._save lays it out before saving
    fig.canvas.draw()
    ax = fig.axes[0]
    renderer = fig.canvas.get_renderer()
    legend, label = ax.get_legend().get_window_extent(renderer), ax.xaxis.label.get_window_extent(renderer)
    assert legend.y1 < label.y0, (legend, label)
    assert legend.y0 >= 0  # and the figure still holds it
