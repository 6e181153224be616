"""Main effects, interactions and the Pareto front of a sweep (rag_bench.decision.effects); the
intervals are over questions, never over cells (issue 41: the whiskers were intervals over the 12
cells at a level, far narrower than any one cell's own interval)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from rag_bench.decision import effects
from rag_bench.metrics.bootstrap import bootstrap_ci


def _grid():
    rows = []
    for chunker, base in (("fixed", 0.6), ("section", 0.8)):
        for k, bump in (("3", 0.0), ("5", 0.02)):
            for seed in range(2):
                rows.append({"chunker": chunker, "k": k, "m": base + bump + 0.001 * seed})
    return pd.DataFrame(rows)


def test_axes_are_ranked_by_spread_with_levels_best_first():
    found = effects.main_effects(_grid(), ["k", "chunker"], "m")
    assert [e.axis for e in found] == ["chunker", "k"]
    chunker = found[0]
    assert [lv.value for lv in chunker.levels] == ["section", "fixed"]
    assert chunker.spread == pytest.approx(0.2)
    assert chunker.levels[0].mean == pytest.approx(0.8105) and chunker.levels[0].cells == 4
    assert chunker.balanced
    # No per-question values given: no interval at all, rather than one over the cells.
    assert math.isnan(chunker.levels[0].lo) and math.isnan(chunker.spread_lo)


def _sweep(questions: int = 200, seed: int = 1, gain: float = 0.15):
    """Eight cells (chunker x k x seed) over the same questions: each question is hard or easy for
    every cell alike (a 0/1 outcome shared by all cells), section answers ``gain`` more of them, and
    the cells at one level differ by a few questions only -- so their means are nearly equal and an
    interval over the cells is nearly a point."""
    rng = np.random.default_rng(seed)
    easy = rng.random(questions) < 0.5
    rows, columns = [], []
    for chunker, won in (("fixed", 0.0), ("section", gain)):
        for k in ("3", "5"):
            for s in range(2):
                v = easy.astype(float)
                flip = np.flatnonzero(~easy)[: int(won * questions)]  # the section chunker wins these
                v[flip] = 1.0
                v[rng.integers(0, questions, 2)] = 1.0 - v[rng.integers(0, questions, 2)]  # a little noise
                columns.append(v)
                rows.append({"chunker": chunker, "k": k, "m": v.mean()})
    return pd.DataFrame(rows), np.column_stack(columns)


def test_level_intervals_are_over_questions_and_as_wide_as_a_cells_own():
    frame, per_question = _sweep()
    d = effects.draws(per_question.shape[0])
    samples = effects.resampled_means(per_question, d).T  # cells x draws
    chunker = effects.main_effects(frame, ["chunker"], "m", samples=samples)[0]
    section = chunker.levels[0]
    assert section.value == "section" and section.cells == 4
    width = section.hi - section.lo
    # One cell's own 95 % bootstrap CI over the same questions: the level's is as wide (the cells
    # share their questions, so averaging four of them buys almost nothing) ...
    lo, hi = bootstrap_ci(per_question[:, 4])
    assert width == pytest.approx(hi - lo, rel=0.25) and width > 0.1
    # ... and far wider than an interval over the four cells' means, which the chart drew before.
    cell_means = frame.loc[frame["chunker"] == "section", "m"].to_numpy()
    over_cells = np.quantile(cell_means[np.random.default_rng(0).integers(0, 4, (1000, 4))].mean(axis=1),
                             [0.025, 0.975])
    assert width > 5 * (over_cells[1] - over_cells[0])
    # Exactly the percentiles of the level's cells averaged in each draw.
    rows = samples[(frame["chunker"] == "section").to_numpy()]
    assert (section.lo, section.hi) == pytest.approx(tuple(np.quantile(rows.mean(axis=0), [0.025, 0.975])))
    assert section.lo <= section.mean <= section.hi


def test_the_spread_interval_is_paired_over_the_same_questions():
    frame, per_question = _sweep(gain=0.06)
    samples = effects.resampled_means(per_question, effects.draws(per_question.shape[0])).T
    chunker = effects.main_effects(frame, ["chunker"], "m", samples=samples)[0]
    best, worst = chunker.levels
    # The two levels' intervals overlap, yet section wins the same questions in every draw: the
    # difference's interval (paired) excludes 0 and is much narrower than either level's.
    assert best.lo < worst.hi
    assert 0 < chunker.spread_lo < chunker.spread < chunker.spread_hi
    assert chunker.spread_hi - chunker.spread_lo < 0.5 * (best.hi - best.lo)


def test_samples_must_match_the_frame():
    frame, per_question = _sweep()
    with pytest.raises(ValueError, match="one row per row of the frame"):
        effects.main_effects(frame, ["chunker"], "m", samples=np.zeros((3, 10)))


def test_resampled_means_and_percentiles_are_the_statistic_on_each_draw():
    values = np.array([1.0, np.nan, 3.0, 10.0])
    d = effects.draws(4, resamples=50, seed=3)
    means = effects.resampled_means(values, d)
    p50 = effects.resampled_percentiles(values, d, 50)
    for b in range(50):
        drawn = values[d.idx[b]]
        drawn = drawn[~np.isnan(drawn)]
        assert means[b] == pytest.approx(drawn.mean()) if drawn.size else math.isnan(means[b])
        assert p50[b] == pytest.approx(np.percentile(drawn, 50)) if drawn.size else math.isnan(p50[b])
    assert np.array_equal(d.counts.sum(axis=1), np.full(50, 4.0))


def test_lower_is_better_measures_rank_the_lowest_level_first_and_one_level_axes_are_skipped():
    f = _grid().assign(same="x")
    found = effects.main_effects(f, ["chunker", "same"], "m", higher_is_better=False)
    assert [e.axis for e in found] == ["chunker"] and found[0].levels[0].value == "fixed"


def test_unbalanced_grids_say_so_and_missing_values_are_left_out():
    f = _grid()
    f.loc[0, "m"] = math.nan
    assert not effects.main_effects(f, ["chunker"], "m")[0].balanced


def test_interaction_is_the_mean_over_the_other_axes():
    grid = effects.interaction(_grid(), "chunker", "k", "m")
    assert grid.loc["section", "5"] == pytest.approx(0.8205) and grid.shape == (2, 2)


def test_interaction_intervals_are_over_questions_for_each_pair_of_levels():
    frame, per_question = _sweep()
    samples = effects.resampled_means(per_question, effects.draws(per_question.shape[0])).T
    grid = effects.interaction(frame, "chunker", "k", "m")
    lo, hi = effects.interaction_intervals(frame, "chunker", "k", "m", samples)
    assert lo.shape == hi.shape == grid.shape
    at = ((frame["chunker"] == "section") & (frame["k"] == "5")).to_numpy()
    assert (lo.loc["section", "5"], hi.loc["section", "5"]) == pytest.approx(
        tuple(np.quantile(samples[at].mean(axis=0), [0.025, 0.975])))
    assert (lo.to_numpy() <= grid.to_numpy()).all() and (grid.to_numpy() <= hi.to_numpy()).all()
    no_samples = effects.interaction_intervals(frame, "chunker", "k", "m", None)
    assert no_samples[0].isna().all().all()


def test_pareto_front_keeps_undominated_cells_and_ignores_missing_costs():
    assert effects.pareto_front([0.9, 0.9, 0.5, 0.95], [1.0, 2.0, 0.5, math.nan]) == [True, False, True, False]
    assert effects.pareto_front([0.1, 0.2], [1, 1], higher_is_better=False) == [True, False]
