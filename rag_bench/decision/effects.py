"""Which choice matters: main effects, two-axis interactions and the Pareto front of a sweep.

Input is a frame with one row per cell: one column per axis (the value of that cell on it, as
text; :mod:`rag_bench.naming`) and the measure's column. Pure functions, no plotting.

A *main effect* of an axis is the measure's mean per level of that axis over every cell at that
level -- marginalised over the other axes, as a factorial design is read. Its *spread* (best level
mean minus worst) ranks the axes: the axis with the largest spread moves the measure most. On an
unbalanced grid (a level that exists only with some values of other axes) the means mix those
other axes' effects; ``balanced`` says whether every level was run the same number of times.

Intervals are over **questions**, never over cells: the cells of a sweep answer the same
questions, so the twelve cells at one level are not twelve independent samples (an interval over
them shows how alike the other axes' settings are, and is far narrower than any one cell's own
interval). One bootstrap draws question ids with replacement (:func:`draws`, fixed seed); the
same draw is applied to every cell, each cell's value is recomputed on it (``samples``: cells x
draws), and a level's value in a draw is the mean of its cells' values in that draw. The
percentiles of those give the level's 95% interval; the best-minus-worst difference in each draw
gives the spread's (paired: both levels are computed on the same questions).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

RESAMPLES = 1000  # bootstrap draws of the questions
SEED = 0


@dataclass(frozen=True)
class Draws:
    """Bootstrap draws of question ids: ``idx[b]`` the ids of draw ``b`` (with replacement, as many
    as there are questions), ``counts[b, j]`` how often question ``j`` is in it."""

    idx: np.ndarray
    counts: np.ndarray


def draws(n_questions: int, resamples: int = RESAMPLES, seed: int = SEED) -> Draws:
    """``resamples`` draws of ``n_questions`` question ids with replacement (numpy's default_rng(seed)).

    >>> d = draws(3, resamples=2)
    >>> d.idx.shape, d.counts.sum(axis=1).tolist()
    ((2, 3), [3.0, 3.0])
    """
    idx = np.random.default_rng(seed).integers(0, n_questions, size=(resamples, n_questions))
    counts = np.zeros((resamples, n_questions))
    np.add.at(counts, (np.repeat(np.arange(resamples), n_questions), idx.ravel()), 1.0)
    return Draws(idx, counts)


def resampled_means(values: np.ndarray, d: Draws) -> np.ndarray:
    """The mean of ``values`` (one per question, NaN where the measure is undefined) in each draw,
    over the drawn questions where it is defined (NaN for a draw with none).

    >>> resampled_means(np.array([1.0, np.nan, 0.0]), Draws(np.array([[0, 0, 1]]), np.array([[2.0, 1.0, 0.0]])))
    array([1.])
    """
    v = np.asarray(values, dtype=np.float64)
    defined = ~np.isnan(v)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (d.counts @ np.where(defined, v, 0.0)) / (d.counts @ defined.astype(np.float64))


def resampled_percentiles(values: np.ndarray, d: Draws, q: float) -> np.ndarray:
    """The ``q``-th percentile of ``values`` (NaN: undefined) in each draw, over the drawn
    questions where it is defined (numpy's linear interpolation, as the cells' p50s are computed)."""
    v = np.asarray(values, dtype=np.float64)
    keep = ~np.isnan(v)
    if not keep.any():
        return np.full(len(d.idx), np.nan)
    if keep.all():
        return np.percentile(v[d.idx], q, axis=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a draw with no defined value: NaN
        return np.nanpercentile(v[d.idx], q, axis=1)


def interval(rows: np.ndarray | None) -> tuple[float, float]:
    """95% percentile interval of the mean of ``rows`` (cells x draws) over the draws; NaN when a
    cell has no value in any draw (no per-question values: nothing to resample)."""
    if rows is None or rows.size == 0 or np.isnan(rows).all(axis=1).any():
        return math.nan, math.nan
    means = rows.mean(axis=0)
    means = means[~np.isnan(means)]
    if not means.size:
        return math.nan, math.nan
    lo, hi = np.quantile(means, [0.025, 0.975])
    return float(lo), float(hi)


@dataclass(frozen=True)
class Level:
    """One value of an axis: mean of the measure over its cells, its 95% CI over questions (NaN:
    no per-question values to resample), number of cells."""

    value: str
    mean: float
    lo: float
    hi: float
    cells: int


@dataclass(frozen=True)
class Effect:
    """An axis with its levels (best first) and spread (largest level mean minus smallest), with
    the spread's 95% CI over questions (the same two levels compared in every draw)."""

    axis: str
    levels: tuple[Level, ...]
    spread: float
    balanced: bool
    spread_lo: float = math.nan
    spread_hi: float = math.nan


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


def _check_samples(frame: pd.DataFrame, samples: np.ndarray | None) -> np.ndarray | None:
    if samples is None:
        return None
    s = np.asarray(samples, dtype=np.float64)
    if s.ndim != 2 or s.shape[0] != len(frame):
        raise ValueError(f"samples must be (cells, draws) with one row per row of the frame ({len(frame)}), "
                         f"got shape {s.shape!r}")
    return s


def main_effects(frame: pd.DataFrame, axes: Sequence[str], metric: str, *, higher_is_better: bool = True,
                 samples: np.ndarray | None = None) -> list[Effect]:
    """Every axis's effect on ``metric``, the largest spread first (axes with one level skipped).
    ``samples`` (cells x draws, rows as the frame's): each cell's value in each bootstrap draw of
    the questions (:func:`draws`), which the intervals are read from; without it there are none
    (NaN), never intervals over cells.

    >>> f = pd.DataFrame({"chunker": ["a", "a", "b", "b"], "k": ["3", "5", "3", "5"], "m": [.5, .6, .8, .9]})
    >>> [(e.axis, round(e.spread, 2), e.levels[0].value) for e in main_effects(f, ["chunker", "k"], "m")]
    [('chunker', 0.3, 'b'), ('k', 0.1, '5')]
    """
    all_samples = _check_samples(frame, samples)
    keep = frame[metric].notna().to_numpy()
    data = frame[keep]
    s = all_samples[keep] if all_samples is not None else None
    values = data[metric].to_numpy(dtype=np.float64)
    out = []
    for axis in axes:
        groups = data.groupby(axis, sort=True).indices  # level -> row positions in data
        if len(groups) < 2:
            continue
        levels = []
        rows: dict[str, np.ndarray] = {}
        for value, pos in groups.items():
            lo, hi = interval(None if s is None else s[pos])
            levels.append(Level(str(value), float(values[pos].mean()), lo, hi, int(pos.size)))
            rows[str(value)] = pos
        levels.sort(key=lambda lv: -lv.mean if higher_is_better else lv.mean)
        top = max(levels, key=lambda lv: lv.mean)
        bottom = min(levels, key=lambda lv: lv.mean)
        spread_lo = spread_hi = math.nan
        if s is not None:
            lo_rows, hi_rows = s[rows[bottom.value]], s[rows[top.value]]
            if not (np.isnan(lo_rows).all(axis=1).any() or np.isnan(hi_rows).all(axis=1).any()):
                diff = hi_rows.mean(axis=0) - lo_rows.mean(axis=0)
                diff = diff[~np.isnan(diff)]
                if diff.size:
                    spread_lo, spread_hi = (float(x) for x in np.quantile(diff, [0.025, 0.975]))
        out.append(Effect(axis, tuple(levels), float(top.mean - bottom.mean),
                          len({lv.cells for lv in levels}) == 1, spread_lo, spread_hi))
    return sorted(out, key=lambda e: -e.spread)


def interaction(frame: pd.DataFrame, rows: str, cols: str, metric: str) -> pd.DataFrame:
    """Mean of ``metric`` for each (``rows`` level, ``cols`` level), over the other axes; NaN
    where the grid has no cell."""
    return frame.pivot_table(index=rows, columns=cols, values=metric, aggfunc="mean")


def interaction_intervals(frame: pd.DataFrame, rows: str, cols: str, metric: str,
                          samples: np.ndarray | None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The 95% CI over questions of each mean of :func:`interaction` (low grid, high grid, same
    shape): the cells at that pair of levels averaged in each draw of ``samples``."""
    grid = interaction(frame, rows, cols, metric)
    lo = pd.DataFrame(np.nan, index=grid.index, columns=grid.columns)
    hi = lo.copy()
    s = _check_samples(frame, samples)
    if s is None:
        return lo, hi
    data = frame.reset_index(drop=True)
    keep = data[metric].notna().to_numpy()
    for (r, c), pos in data[keep].groupby([rows, cols], sort=True).indices.items():
        lo.loc[r, c], hi.loc[r, c] = interval(s[np.flatnonzero(keep)[pos]])
    return lo, hi


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
