"""Prediction-powered inference (PPI) of a mean (Angelopoulos et al., Science 2023).

An automatic measure (a judge, a lexical proxy) scores all N items; people label n of them. The
PPI estimate of the mean is the automatic mean over all N items corrected by the mean
human-minus-automatic difference on the n labelled items (the *rectifier*):

    theta = mean(auto_all) + mean(human - auto_labelled)

with the normal interval theta ± z * sqrt(sd(auto_all)^2 / N + sd(human - auto_labelled)^2 / n)
(population standard deviations, as the ``ppi-python`` package computes its ``lam=1`` interval;
the numbers are tested equal to it). Here the N items are all the cell's items, the labelled ones
included — the labelled items are a sample of them. The interval is valid whatever the automatic
measure's quality; a good measure makes it narrow, a poor one wide.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np


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
             confidence: float = 0.95) -> PpiEstimate:
    """PPI mean and CI; ``human`` and ``auto_labelled`` are paired (the labelled items)."""
    f = np.asarray(auto_all, dtype=float)
    y, fy = np.asarray(human, dtype=float), np.asarray(auto_labelled, dtype=float)
    if len(y) != len(fy):
        raise ValueError("human and auto_labelled must be paired")
    if len(f) == 0 or len(y) == 0:
        nan = float("nan")
        return PpiEstimate(float(f.mean()) if len(f) else nan, nan, nan, nan, len(y), len(f))
    rectifier = y - fy
    theta = float(f.mean() + rectifier.mean())
    se = float(np.sqrt(f.std() ** 2 / len(f) + rectifier.std() ** 2 / len(y)))
    z = NormalDist().inv_cdf(0.5 + confidence / 2.0)
    return PpiEstimate(float(f.mean()), theta, theta - z * se, theta + z * se, len(y), len(f))
