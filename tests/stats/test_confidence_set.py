"""The model confidence set: who it keeps, how often it wrongly drops a cell, and its edges."""

from __future__ import annotations

import numpy as np
import pytest

from rag_bench.stats.confidence_set import model_confidence_set


def _cells(rates, n, seed):
    rng = np.random.default_rng(seed)
    return np.column_stack([rng.random(n) < r for r in rates]).astype(float)


def test_identical_cells_are_all_kept():
    col = _cells([0.6], 150, 0)[:, 0]
    mcs = model_confidence_set(np.column_stack([col, col, col]))
    assert mcs.included == (True, True, True) and mcs.n == 150
    assert min(mcs.p_values) >= 0.05


def test_a_clearly_worse_cell_leaves_and_its_p_value_is_small():
    v = _cells([0.8, 0.78, 0.3], 300, 1)
    mcs = model_confidence_set(v)
    assert mcs.included == (True, True, False)
    assert mcs.p_values[2] < 0.01 and max(mcs.p_values) == 1.0


def test_direction_lower_is_better():
    v = _cells([0.8, 0.3], 300, 2)  # as losses: the first cell is the worse one
    assert model_confidence_set(v, higher_is_better=False).included == (False, True)
    assert model_confidence_set(v, higher_is_better=True).included == (True, False)


def test_equal_cells_are_rarely_split_size_under_the_null():
    """Five cells of the same quality (independent answers per question): the set drops one of them
    in at most about alpha of the experiments -- the point of a set over Holm-corrected pairs from
    the best, which over-drops after picking the best on the same data."""
    runs = 60
    split = sum(not all(model_confidence_set(_cells([0.5] * 5, 120, s), n_resamples=400, seed=s).included)
                for s in range(runs))
    assert split <= 0.12 * runs, f"{split} of {runs} experiments dropped a cell as good as the best"


def test_the_truly_best_cell_is_kept_and_a_far_worse_one_dropped():
    kept_best = dropped_worst = 0
    for s in range(40):
        mcs = model_confidence_set(_cells([0.7, 0.6, 0.4], 200, 100 + s), n_resamples=400, seed=s)
        kept_best += mcs.included[0]
        dropped_worst += not mcs.included[2]
    assert kept_best >= 37  # >= 1 - alpha of the time (with room for 40 draws)
    assert dropped_worst >= 38  # 0.4 vs 0.7 over 200 questions is a large gap


def test_questions_undefined_in_any_cell_are_left_out():
    v = _cells([0.8, 0.3], 100, 3)
    v[:10, 1] = np.nan
    mcs = model_confidence_set(v)
    assert mcs.n == 90 and mcs.included == (True, False)


def test_deterministic_given_seed():
    v = _cells([0.6, 0.55, 0.5, 0.45], 150, 4)
    assert model_confidence_set(v, seed=7) == model_confidence_set(v, seed=7)


def test_nothing_to_tell_apart():
    assert model_confidence_set(np.ones((5, 1))).included == (True,)
    one_question = model_confidence_set(np.array([[1.0, 0.0, 0.0]]))
    assert one_question.included == (True, True, True) and one_question.n == 1
    everything_undefined = model_confidence_set(np.full((4, 2), np.nan))
    assert everything_undefined.n == 0 and everything_undefined.included == (True, True)


@pytest.mark.parametrize("values, kw, message", [
    (np.ones(5), {}, "questions, cells"),
    (np.ones((5, 2)), {"alpha": 0.0}, "alpha"),
    (np.ones((5, 2)), {"alpha": 1.5}, "alpha"),
    (np.ones((5, 2)), {"n_resamples": 0}, "n_resamples"),
])
def test_bad_arguments_are_named(values, kw, message):
    with pytest.raises(ValueError, match=message):
        model_confidence_set(values, **kw)
