"""LLM judge (metrics.json ``judge``): the judged measures ``judge/judge_<metric>``, one per metric
the judge scores, and their per-question columns in records.parquet.

With ``judge.samples=N`` each judged item has N independent judgements per metric. records.parquet
keeps them all: ``judge_<metric>`` is the per-question mean of the samples that succeeded (NaN when
none did: left out of n), ``judge_<metric>_samples`` the list of every sample in sample order (NaN
for a failed call) and ``judge_<metric>_sd`` their spread (standard deviation, NaN with fewer
than two). The cell's interval of ``judge/judge_<metric>`` is the two-level bootstrap over that
list column (:func:`rag_bench.metrics.bootstrap.two_level_bootstrap_ci`), and
``judge/judge_<metric>_consistency`` says how often the judge agrees with itself. Which metrics
are judged is the judge's choice (``judge.metrics``): the measures are made per cell
(:func:`judge_measures`), not declared once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from rag_bench.judging.base import JudgeResult
from rag_bench.judging.samples import CONSISTENCY_SUFFIX, SAMPLES_SUFFIX, SPREAD_SUFFIX, frame_samples, sample_matrix
from rag_bench.metrics import measures
from rag_bench.metrics.bootstrap import judge_consistency, question_spreads, two_level_bootstrap_ci
from rag_bench.metrics.measures import Measure

SECTION = measures.JUDGE_SECTION


def judge_measures(metrics: Sequence[str]) -> list[Measure]:
    """The measures of the judged ``metrics`` (``faithfulness`` → ``judge/judge_faithfulness``)."""
    return [measures.judge_measure(m) for m in metrics]


def columns(results: Sequence[JudgeResult], metrics: Sequence[str]) -> dict[str, list[Any]]:
    """Per metric: ``judge_<m>`` (the mean of the samples that succeeded), ``judge_<m>_samples``
    (each sample, NaN when its call failed; an empty list when the item was not judged) and
    ``judge_<m>_sd``."""
    columns: dict[str, list[Any]] = {}
    for m in metrics:
        matrix = sample_matrix(results, m)
        col = measures.judge_measure(m).column
        columns[col] = [r.scores.get(m, np.nan) if r.scores.get(m) is not None else np.nan for r in results]
        columns[col + SAMPLES_SUFFIX] = [row.tolist() if m in r.samples or m in r.scores else []
                                         for r, row in zip(results, matrix)]
        columns[col + SPREAD_SUFFIX] = question_spreads(matrix).tolist()
    return columns


def statistics(frame: pd.DataFrame, metrics: Sequence[str], *, n_resamples: int, seed: int) -> dict[str, Any]:
    """For metrics.json: per judged metric the two-level CI (``ci``), and its consistency
    (``judge``: ``judge_<m>_consistency``, None when no item has two samples; ``n``: the items
    with two or more samples)."""
    out: dict[str, Any] = {SECTION: {}, "ci": {}, "n": {}}
    for m in metrics:
        samples = frame_samples(frame, m)
        if samples is None:
            continue
        key = measures.judge_measure(m).key
        lo, hi = two_level_bootstrap_ci(samples, n_resamples=n_resamples, seed=seed)
        out["ci"][key] = None if np.isnan(lo) else [lo, hi]
        name = measures.judge_measure(m).name + CONSISTENCY_SUFFIX
        c = judge_consistency(samples)
        out[SECTION][name] = None if np.isnan(c) else c
        out["n"][f"{SECTION}/{name}"] = int(((~np.isnan(samples)).sum(axis=1) >= 2).sum())
    return out


def failure_warning(frame: pd.DataFrame, failures: int, attempted: int) -> str:
    """The console's and report's line about failed judgements: how many, that they are left out
    of n, and the first reason recorded in ``judge_failures``."""
    reasons = [r for r in frame.get("judge_failures", pd.Series(dtype=object)) if isinstance(r, str) and r]
    first = f"; first reason: {reasons[0][:200]}" if reasons else ""
    return (f"judge: {failures} of {attempted} judgements failed and are left out of n (records.parquet "
            f"judge_failures has each reason){first}")
