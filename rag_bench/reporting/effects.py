"""Which choice matters: main effects, two-axis interactions and the Pareto front of a sweep.

Input is a frame with one row per cell: one column per axis (the value of that cell on it, as
text; :mod:`rag_bench.naming`) and the measure's column. Pure functions, no plotting.

A *main effect* of an axis is the measure's mean per level of that axis over every cell at that
level -- marginalised over the other axes, as a factorial design is read -- with a 95% percentile
bootstrap CI over those cells. Its *spread* (best level mean minus worst) ranks the axes: the axis
with the largest spread moves the measure most. On an unbalanced grid (a level that exists only
with some values of other axes) the means mix those other axes' effects; ``balanced`` says whether
every level was run the same number of times.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class Level:
    """One value of an axis: mean of the measure over its cells, 95% CI, number of cells."""

    value: str
    mean: float
    lo: float
    hi: float
    cells: int


@dataclass(frozen=True)
class Effect:
    """An axis with its levels (best first) and spread (best mean minus worst)."""

    axis: str
    levels: tuple[Level, ...]
    spread: float
    balanced: bool


def _ci(values: np.ndarray, resamples: int = 1000, seed: int = 0) -> tuple[float, float]:
    if values.size == 1:
        return float(values[0]), float(values[0])
    idx = np.random.default_rng(seed).integers(0, values.size, size=(resamples, values.size))
    lo, hi = np.quantile(values[idx].mean(axis=1), [0.025, 0.975])
    return float(lo), float(hi)


# Axes that act after the final ranking: the passages handed to the generator (pipeline.k, the
# context's budget and parent expansion), the generator and the judge. They cannot move a measure of
# the ranking (retrieval, document, evidence, ANN, security), so a main effect of theirs on one is
# a "spread 0.000" that says nothing.
AFTER_RANKING = ("pipeline.k", "pipeline.token_budget", "pipeline.expand_parents", "generator", "judge")
RANKING_SECTIONS = ("retrieval", "document", "evidence", "ann", "security")


def can_move(axis: str, metric: str) -> bool:
    """Whether a sweep axis can change ``metric`` (``section/name``) by the pipeline's data flow.

    >>> can_move("pipeline.k", "retrieval/ndcg@10"), can_move("pipeline.k", "generation/correct")
    (False, True)
    >>> can_move("generator.model", "evidence/complete@5"), can_move("chunker", "retrieval/ndcg@10")
    (False, True)
    """
    section = metric.split("/", 1)[0]
    if section not in RANKING_SECTIONS:
        return True
    return not any(axis == a or axis.startswith(a + ".") for a in AFTER_RANKING)


def main_effects(frame: pd.DataFrame, axes: Sequence[str], metric: str, *, higher_is_better: bool = True
                 ) -> list[Effect]:
    """Every axis's effect on ``metric``, the largest spread first (axes with one level skipped).

    >>> f = pd.DataFrame({"chunker": ["a", "a", "b", "b"], "k": ["3", "5", "3", "5"], "m": [.5, .6, .8, .9]})
    >>> [(e.axis, round(e.spread, 2), e.levels[0].value) for e in main_effects(f, ["chunker", "k"], "m")]
    [('chunker', 0.3, 'b'), ('k', 0.1, '5')]
    """
    data = frame[frame[metric].notna()]
    out = []
    for axis in axes:
        groups = data.groupby(axis, sort=True)[metric]
        if groups.ngroups < 2:
            continue
        levels = []
        for value, series in groups:
            v = series.to_numpy(dtype=np.float64)
            lo, hi = _ci(v)
            levels.append(Level(str(value), float(v.mean()), lo, hi, int(v.size)))
        levels.sort(key=lambda lv: -lv.mean if higher_is_better else lv.mean)
        means = [lv.mean for lv in levels]
        out.append(Effect(axis, tuple(levels), float(max(means) - min(means)),
                          len({lv.cells for lv in levels}) == 1))
    return sorted(out, key=lambda e: -e.spread)


def interaction(frame: pd.DataFrame, rows: str, cols: str, metric: str) -> pd.DataFrame:
    """Mean of ``metric`` for each (``rows`` level, ``cols`` level), over the other axes; NaN
    where the grid has no cell."""
    return frame.pivot_table(index=rows, columns=cols, values=metric, aggfunc="mean")


def pareto_front(quality: Sequence[float], cost: Sequence[float], *, higher_is_better: bool = True) -> list[bool]:
    """True for the cells no other cell beats on both quality and cost (lower cost is better):
    the configurations worth considering; the others are dominated.

    >>> pareto_front([0.9, 0.8, 0.7, 0.85], [10, 2, 5, 10])
    [True, True, False, False]
    """
    q = np.asarray(quality, dtype=np.float64) * (1 if higher_is_better else -1)
    c = np.asarray(cost, dtype=np.float64)
    front = []
    for i in range(q.size):
        if np.isnan(q[i]) or np.isnan(c[i]):
            front.append(False)
            continue
        better = (q >= q[i]) & (c <= c[i]) & ((q > q[i]) | (c < c[i]))
        front.append(not bool(better[~np.isnan(q) & ~np.isnan(c)].any()))
    return front
