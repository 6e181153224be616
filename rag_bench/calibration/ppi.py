"""Prediction-powered inference (PPI) of a mean (Angelopoulos et al., Science 2023).

An automatic measure (a judge, a lexical proxy) scores all N items; people label n of them. The
PPI estimate of the mean is the automatic mean over all N items corrected by the mean
human-minus-automatic difference on the n labelled items (the *rectifier*):

    theta = mean(auto_all) + mean(human - auto_labelled)

with the normal interval theta ± z * sqrt(sd(auto_all)^2 / N + sd(human - auto_labelled)^2 / n)
(population standard deviations, as the ``ppi-python`` package computes its ``lam=1`` interval;
the numbers are tested equal to it). Here the N items are all the cell's items, the labelled ones
included — the labelled items are a sample of them. The interval is valid whatever the automatic
measure's quality (a good measure makes it narrow, a poor one wide) **provided the labelled items
are a uniform random sample of the N**: labels chosen by stratum (``rag-bench label --stratify``)
or carried over from other cells by answer digest are not, and then the PPI mean is indicative
only. ``rag-bench calibrate`` shows it from :data:`MIN_LABELLED` labelled items on; the gate uses
it only from labels shown to be a uniform sample of the cell
(:func:`rag_bench.calibration.calibrate.uniform_ppi`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

MIN_LABELLED = 10  # fewer labelled answers of a cell: no PPI mean (n/a), the raw mean stands


@dataclass(frozen=True)
class PpiEstimate:
    """The raw automatic mean and the PPI-corrected mean with its CI."""

    raw_mean: float
    mean: float
    low: float
    high: float
    n_labelled: int
    n_all: int


def ppi_mean(auto_all: Sequence[float], human: Sequence[float], auto_labelled: Sequence[float], *,
             confidence: float = 0.95, min_labelled: int = 1,
             bounds: tuple[float, float] | None = None) -> PpiEstimate:
    """PPI mean and CI; ``human`` and ``auto_labelled`` are paired (the labelled items).

    Below ``min_labelled`` labelled items the estimate is undefined (NaN): a rectifier from one or
    two labels has a spread of 0 and would give a confident interval around a guess. ``bounds``
    (e.g. (0, 1) for a rate) clips the estimate and the interval to the measure's range. With the
    defaults the numbers are exactly ``ppi-python``'s (``lam=1``)."""
    f = np.asarray(auto_all, dtype=float)
    y, fy = np.asarray(human, dtype=float), np.asarray(auto_labelled, dtype=float)
    if len(y) != len(fy):
        raise ValueError("human and auto_labelled must be paired")
    if len(f) == 0 or len(y) == 0 or len(y) < min_labelled:
        nan = float("nan")
        return PpiEstimate(float(f.mean()) if len(f) else nan, nan, nan, nan, len(y), len(f))
    rectifier = y - fy
    theta = float(f.mean() + rectifier.mean())
    se = float(np.sqrt(f.std() ** 2 / len(f) + rectifier.std() ** 2 / len(y)))
    z = NormalDist().inv_cdf(0.5 + confidence / 2.0)
    low, high = theta - z * se, theta + z * se
    if bounds is not None:
        theta, low, high = (min(max(v, bounds[0]), bounds[1]) for v in (theta, low, high))
    return PpiEstimate(float(f.mean()), theta, low, high, len(y), len(f))
