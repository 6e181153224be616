"""Main effects, interactions and the Pareto front of a sweep (rag_bench.reporting.effects)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from rag_bench.reporting import effects


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
    assert chunker.levels[0].lo <= chunker.levels[0].mean <= chunker.levels[0].hi
    assert chunker.balanced


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


def test_pareto_front_keeps_undominated_cells_and_ignores_missing_costs():
    assert effects.pareto_front([0.9, 0.9, 0.5, 0.95], [1.0, 2.0, 0.5, math.nan]) == [True, False, True, False]
    assert effects.pareto_front([0.1, 0.2], [1, 1], higher_is_better=False) == [True, False]
