"""Kendall's tau-b kernel: scipy's value on vectors with ties and undefined items, many draws at once."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import kendalltau

from rag_bench.stats.rank_agreement import kendall_tau_b, percentile_interval


def test_tau_b_is_scipys_on_tied_and_random_vectors():
    rng = np.random.default_rng(7)
    x = rng.integers(0, 4, size=(300, 9)).astype(float)  # many ties
    y = rng.integers(0, 4, size=(300, 9)).astype(float)
    got = kendall_tau_b(x, y)
    want = np.array([kendalltau(a, b).statistic for a, b in zip(x, y)])
    assert got.shape == (300,)
    assert np.allclose(got, want, equal_nan=True)


def test_undefined_items_are_left_out_and_no_order_is_nan():
    x = np.array([1.0, 2.0, np.nan, 4.0])
    y = np.array([1.0, 2.0, 3.0, 0.0])
    assert float(kendall_tau_b(x, y)) == pytest.approx(kendalltau([1, 2, 4], [1, 2, 0]).statistic)
    assert math.isnan(float(kendall_tau_b(np.array([1.0, 1.0, 1.0]), np.array([1.0, 2.0, 3.0]))))  # all tied
    assert math.isnan(float(kendall_tau_b(np.array([1.0]), np.array([2.0]))))  # one item: no pair
    with pytest.raises(ValueError, match="same shape"):
        kendall_tau_b(np.zeros(3), np.zeros(4))


def test_percentile_interval_leaves_out_nan_draws():
    assert percentile_interval(np.array([np.nan, *np.arange(101.0)])) == (2.5, 97.5)
    assert all(math.isnan(v) for v in percentile_interval(np.array([np.nan])))
