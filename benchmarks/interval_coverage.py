"""How often does a cell's 95 % interval hold the true mean? (issue 55)

For a 0/1 measure (a proportion) at n = 3, 10, 20, 100 questions and a true rate p = 1.0, 0.9,
0.5: the interval metrics.json reports for the typical observation (round(n p) of n), and the
coverage of two methods -- the Wilson score interval (:func:`rag_bench.metrics.intervals.wilson`,
reported since issue 55) and the percentile bootstrap it replaced. Wilson's coverage is exact (a sum
over the binomial distribution, no simulation); the bootstrap's is simulated (seeded draws). Then,
for a non-binary measure bounded in [0, 1] (a mixture like nDCG: a share at 1, the rest uniform),
the simulated coverage of :func:`rag_bench.metrics.intervals.mean_ci` (a bootstrap corrected at
the boundary).

    python benchmarks/interval_coverage.py [--runs 2000]

prints the Markdown table docs/statistics.md shows (tests/stats/test_intervals.py checks that the
table there is this script's output).
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rag_bench.metrics.bootstrap import bootstrap_ci  # noqa: E402
from rag_bench.metrics.intervals import mean_ci, wilson  # noqa: E402

NS = (3, 10, 20, 100)
PS = (1.0, 0.9, 0.5)


def wilson_coverage(n: int, p: float) -> float:
    """The exact probability that the Wilson 95 % interval of Binomial(n, p) holds p."""
    x = np.arange(n + 1)
    ci = wilson(x, n)
    pmf = np.array([math.comb(n, int(k)) * p ** int(k) * (1 - p) ** (n - int(k)) for k in x])
    return float(pmf[(ci[:, 0] <= p) & (p <= ci[:, 1])].sum())


def bootstrap_coverage(n: int, p: float, runs: int, seed: int = 0) -> float:
    """The simulated coverage of the percentile bootstrap (200 resamples) on Binomial(n, p) draws."""
    rng = np.random.default_rng(seed)
    hit = 0
    for r in range(runs):
        lo, hi = bootstrap_ci((rng.random(n) < p).astype(float), n_resamples=200, seed=r)
        hit += lo <= p <= hi
    return hit / runs


def bounded_mean_coverage(n: int, runs: int, share_at_one: float = 0.6, seed: int = 0) -> float:
    """Simulated coverage of :func:`mean_ci` (200 resamples) for a [0, 1] measure: 1.0 with
    probability ``share_at_one``, else uniform on [0, 1] (true mean ``share + (1 - share) / 2``)."""
    rng = np.random.default_rng(seed)
    truth = share_at_one + (1 - share_at_one) / 2
    hit = 0
    for r in range(runs):
        v = np.where(rng.random(n) < share_at_one, 1.0, rng.random(n))
        lo, hi = mean_ci(v, n_resamples=200, seed=r)
        hit += lo <= truth <= hi
    return hit / runs


def table(runs: int) -> str:
    """The Markdown tables, proportions then a bounded mean."""
    lines = ["| n | true p | observed | 95 % interval (Wilson) | coverage, Wilson (exact) | "
             f"coverage, percentile bootstrap ({runs} runs) |", "|---|---|---|---|---|---|"]
    for n in NS:
        for p in PS:
            x = round(n * p)
            lo, hi = wilson(x, n)
            lines.append(f"| {n} | {p:.1f} | {x}/{n} | [{lo:.3f}, {hi:.3f}] | {wilson_coverage(n, p):.3f} | "
                         f"{bootstrap_coverage(n, p, runs):.3f} |")
    lines += ["", f"| n | coverage of a bounded mean (60 % at 1.0, rest uniform; {runs} runs) |", "|---|---|"]
    lines += [f"| {n} | {bounded_mean_coverage(n, runs):.3f} |" for n in NS]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=2000, help="simulated golden sets per row (default 2000)")
    print(table(ap.parse_args(argv).runs))


if __name__ == "__main__":
    main()
