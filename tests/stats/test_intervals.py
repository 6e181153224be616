"""A cell's interval never overclaims (issue 55 B): Wilson for proportions (never zero width), an
expanded bootstrap corrected at the boundary for other means; coverage checked by seeded simulation."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest

from rag_bench.metrics.intervals import expanded_confidence, judged_ci, mean_ci, mean_cis, t_quantile, wilson

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("x", "n", "expected"), [(20, 20, (0.839, 1.0)), (3, 3, (0.439, 1.0)), (0, 3, (0.0, 0.561)),
                                                  (18, 20, (0.699, 0.972))])
def test_wilson_matches_the_published_values(x, n, expected):
    assert tuple(np.round(wilson(x, n), 3)) == expected


def test_no_proportion_has_a_zero_width_interval():
    for n in range(1, 201):
        ci = wilson(np.arange(n + 1), n)
        assert (ci[:, 1] - ci[:, 0] > 0).all(), n


def test_all_correct_cells_say_how_little_twenty_questions_show():
    assert [round(v, 2) for v in mean_ci(np.ones(20))] == [0.84, 1.0]
    assert [round(v, 2) for v in mean_ci(np.r_[np.ones(3), [np.nan] * 4])] == [0.44, 1.0]  # NaN: not asked
    assert [round(v, 2) for v in judged_ci(np.ones((20, 3)))] == [0.84, 1.0]  # a judge that always says yes
    assert [round(v, 2) for v in judged_ci(np.ones((20, 1)))] == [0.84, 1.0]


def test_a_bounded_mean_without_spread_is_not_a_point_but_an_unbounded_one_is():
    (lo, hi), (lo2, hi2) = mean_cis(np.column_stack([np.full(20, 0.5), np.full(20, 312.0)]))
    assert lo < 0.5 < hi and hi - lo > 0.3
    assert lo2 == hi2 == 312.0


def test_wilson_coverage_simulated():
    """Seeded draws of Binomial(n, p): the share of 95% intervals that hold p."""
    rng = np.random.default_rng(55)
    for n in (10, 20, 100):
        for p in (0.5, 0.8, 0.9):
            x = rng.binomial(n, p, size=4000)
            ci = wilson(x, n)
            coverage = float(((ci[:, 0] <= p) & (p <= ci[:, 1])).mean())
            assert 0.92 <= coverage <= 0.99, (n, p, coverage)


def test_mean_coverage_simulated():
    """A skewed [0, 1] measure (60 % at 1.0, else uniform) and a latency-like log-normal one: the
    expanded bootstrap holds the true mean in about 9 of 10 golden sets of 20 questions or more
    (docs/statistics.md gives the figures; the percentile bootstrap alone held it less often)."""
    rng = np.random.default_rng(7)
    for n, runs in ((20, 300), (60, 200)):
        skewed = np.where(rng.random((runs, n)) < 0.6, 1.0, rng.random((runs, n)))
        latency = rng.lognormal(3.0, 0.5, size=(runs, n))
        for values, truth in ((skewed, 0.8), (latency, float(np.exp(3.0 + 0.125)))):
            hits = [lo <= truth <= hi for lo, hi in (mean_ci(v, n_resamples=400, seed=i) for i, v in enumerate(values))]
            assert np.mean(hits) >= 0.87, (n, truth, np.mean(hits))


def test_t_quantile_is_within_a_hundredth_of_scipys():
    stats = pytest.importorskip("scipy.stats")
    for df in range(1, 60):
        assert t_quantile(0.975, df) == pytest.approx(stats.t.ppf(0.975, df), abs=0.01 if df > 2 else 1e-9)
    assert expanded_confidence(0.95, 1) == 0.95 and expanded_confidence(0.95, 2) < 1


def test_the_table_in_docs_is_the_scripts_output_for_its_exact_columns():
    """docs/statistics.md's interval table comes from benchmarks/interval_coverage.py: its Wilson
    columns (intervals and exact coverage, no simulation) are recomputed here."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        import interval_coverage as script
    finally:
        sys.path.remove(str(REPO / "benchmarks"))
    docs = (REPO / "docs" / "statistics.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| (\d+) \| (\d\.\d) \| (\d+)/\d+ \| \[([\d.]+), ([\d.]+)\] \| ([\d.]+) \|", docs, re.M)
    assert len(rows) == len(script.NS) * len(script.PS)
    for n, p, x, lo, hi, cover in rows:
        ci = wilson(int(x), int(n))
        assert (f"{ci[0]:.3f}", f"{ci[1]:.3f}") == (lo, hi)
        assert f"{script.wilson_coverage(int(n), float(p)):.3f}" == cover


def _one_by_one(v: np.ndarray, seed: int) -> np.ndarray:
    """mean_cis as first written: each column's method, then its interval on its own."""
    from rag_bench.metrics.bootstrap import bootstrap_cis
    from rag_bench.metrics.intervals import method

    out = np.full((v.shape[1], 2), np.nan)
    for j in range(v.shape[1]):
        d = v[:, j][~np.isnan(v[:, j])]
        if method(v[:, j]) == "bootstrap":
            out[j] = bootstrap_cis(v[:, [j]], n_resamples=200, seed=seed,
                                   confidence=expanded_confidence(0.95, d.size))[0]
        elif d.size:
            out[j] = wilson(d.sum(), d.size, 0.95)
    return out


def test_every_column_at_once_is_each_column_on_its_own():
    """mean_cis picks every column's method and computes the Wilson intervals at once (issue 57):
    bit for bit what each column gives alone, over binary, constant (in and out of [0, 1]), spread,
    all-undefined, -0.0 and infinite columns with NaN holes."""
    rng = np.random.default_rng(5)
    for trial in range(60):
        n = int(rng.integers(0, 40))
        kinds = rng.integers(0, 7, size=int(rng.integers(1, 12)))
        cols = []
        for kind in kinds:
            col = [rng.integers(0, 2, n).astype(float), np.full(n, rng.choice([0.1, 0.7, 1.0, 0.0, 2.5])),
                   rng.random(n), np.full(n, np.nan), np.where(rng.random(n) < 0.5, -0.0, 1.0),
                   np.where(rng.random(n) < 0.2, np.inf, rng.random(n)), rng.integers(0, 5, n).astype(float)][kind]
            holes = rng.random(n) < rng.choice([0.0, 0.3, 0.9])
            cols.append(np.where(holes, np.nan, col))
        v = np.column_stack(cols) if n else np.empty((0, len(cols)))
        got, want = mean_cis(v, n_resamples=200, seed=trial), _one_by_one(v, trial)
        assert got.tobytes() == want.tobytes(), (trial, got, want)
