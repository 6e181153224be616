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
    monkeypatch.setattr(bs, "_SEEN", type(bs._SEEN)())  # computed again, not remembered
    assert np.array_equal(bootstrap_cis(values, n_resamples=100), whole, equal_nan=True)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="n_resamples"):
        bootstrap_cis(np.zeros((3, 1)), n_resamples=0)
    with pytest.raises(ValueError, match="confidence"):
        bootstrap_cis(np.zeros((3, 1)), confidence=1.0)
    with pytest.raises(ValueError, match="shape"):
        bootstrap_cis(np.zeros(3))


def test_columns_seen_before_are_remembered_exactly_and_the_memory_is_bounded(monkeypatch):
    """Cells that share a ranking share their retrieval columns: a column already bootstrapped (same
    values, resamples, seed, confidence) is not resampled again, and gives the same interval."""
    import rag_bench.metrics.bootstrap as bs

    monkeypatch.setattr(bs, "_SEEN", type(bs._SEEN)())
    monkeypatch.setattr(bs, "_SEEN_SIZE", 30)
    rng = np.random.default_rng(5)
    first, other = cell_like(rng, 40, 16), cell_like(rng, 40, 16)
    mixed = np.concatenate([first[:, :8], other[:, :8]], axis=1)  # half seen, half new
    calls: list[int] = []
    real = bs._cis
    monkeypatch.setattr(bs, "_cis", lambda v, *a: calls.append(v.shape[1]) or real(v, *a))
    a = bootstrap_cis(first, n_resamples=50, seed=1)
    b = bootstrap_cis(mixed, n_resamples=50, seed=1)
    assert calls == [16, 8]  # the seen half is not resampled again
    assert np.array_equal(b[:8], a[:8], equal_nan=True)
    for j in range(16):
        assert np.array_equal(b[j], reference(mixed[:, j], 50, 1), equal_nan=True)
    assert np.array_equal(bootstrap_cis(first, n_resamples=50, seed=2), real(first, 50, 2, 0.95), equal_nan=True)
    assert len(bs._SEEN) <= 30
