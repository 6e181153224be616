"""Bootstrap CIs of a whole cell in one call are bit for bit the per-measure ones."""

from __future__ import annotations

import numpy as np
import pytest

from rag_bench.metrics.bootstrap import bootstrap_ci, bootstrap_cis


def reference(values: np.ndarray, n_resamples: int, seed: int) -> tuple[float, float]:
    """The per-measure computation every cell used before bootstrap_cis (fresh draws each time)."""
    v = values[~np.isnan(values)]
    if v.size == 0:
        return float("nan"), float("nan")
    means = v[np.random.default_rng(seed).integers(0, v.size, size=(n_resamples, v.size))].mean(axis=1)
    alpha = (1 - 0.95) / 2  # 0.025000000000000022, as bootstrap_ci always computed it
    lo, hi = np.quantile(means, [alpha, 1 - alpha])
    return float(lo), float(hi)


def cell_like(rng: np.random.Generator, n: int, m: int) -> np.ndarray:
    """Measures as a cell has them: binary and graded columns, shared and own NaN masks, equal
    columns, an all-NaN column."""
    v = rng.random((n, m))
    unjudged = rng.random(n) < 0.3
    v[unjudged, : m // 2] = np.nan
    v[:, : m // 4] = np.where(np.isnan(v[:, : m // 4]), np.nan, rng.integers(0, 2, (n, m // 4)))
    v[rng.random((n, m)) < 0.05] = np.nan
    v[:, -1] = np.nan
    v[:, -2] = v[:, 0]
    v[:, -3] = np.round(v[:, -3] * 5) / 5  # precision@5-like fractions: not integers
    return v


@pytest.mark.parametrize("n_resamples", [1, 2, 7, 1000])
@pytest.mark.parametrize("n", [1, 3, 9, 208])
def test_every_column_equals_its_own_bootstrap_bit_for_bit(n, n_resamples):
    rng = np.random.default_rng(n * 31 + n_resamples)
    values = cell_like(rng, n, 24)
    got = bootstrap_cis(values, n_resamples=n_resamples, seed=3)
    for j in range(values.shape[1]):
        want = reference(values[:, j], n_resamples, 3)
        assert np.array_equal(got[j], want, equal_nan=True), (j, got[j], want)
        assert np.array_equal(bootstrap_ci(values[:, j], n_resamples=n_resamples, seed=3), want, equal_nan=True)


def test_large_grids_are_cut_into_bounded_gathers(monkeypatch):
    import rag_bench.metrics.bootstrap as bs

    values = cell_like(np.random.default_rng(0), 50, 12)
    whole = bootstrap_cis(values, n_resamples=100)
    monkeypatch.setattr(bs, "_GATHER_BYTES", 1)  # one column per gather
    assert np.array_equal(bootstrap_cis(values, n_resamples=100), whole, equal_nan=True)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="n_resamples"):
        bootstrap_cis(np.zeros((3, 1)), n_resamples=0)
    with pytest.raises(ValueError, match="confidence"):
        bootstrap_cis(np.zeros((3, 1)), confidence=1.0)
    with pytest.raises(ValueError, match="shape"):
        bootstrap_cis(np.zeros(3))
