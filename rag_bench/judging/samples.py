"""Judge samples in a cell: the per-question columns they become and the statistics over them.

With ``judge.samples=N`` each judged item has N independent judgements per metric. records.parquet
keeps them all: ``judge_<metric>`` is the per-question mean of the samples that succeeded (NaN when
none did: left out of n), ``judge_<metric>_samples`` the list of every sample in sample order (NaN
for a failed call) and ``judge_<metric>_sd`` their spread (standard deviation, NaN with fewer
than two). The cell's interval of ``judge/judge_<metric>`` is the two-level bootstrap over that
list column (:func:`rag_bench.metrics.bootstrap.two_level_bootstrap_ci`), and
``judge/judge_<metric>_consistency`` says how often the judge agrees with itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from rag_bench.judging.base import JudgeResult
from rag_bench.metrics import measures
from rag_bench.metrics.bootstrap import judge_consistency, question_spreads, two_level_bootstrap_ci

SAMPLES_SUFFIX = "_samples"
SPREAD_SUFFIX = "_sd"
CONSISTENCY_SUFFIX = "_consistency"


def sample_matrix(results: Sequence[JudgeResult], metric: str) -> np.ndarray:
    """``(items, samples)`` of one metric, NaN for a failed or absent sample; a judge that gives no
    samples (a plugin with one score per item) counts its score as the one sample."""
    rows: list[list[float | None]] = [r.samples[metric] if metric in r.samples
                                      else ([r.scores[metric]] if metric in r.scores else []) for r in results]
    width = max((len(row) for row in rows), default=0) or 1
    out = np.full((len(rows), width), np.nan)
    for i, row in enumerate(rows):
        for j, v in enumerate(row):
            if v is not None:
                out[i, j] = float(v)
    return out


def sample_columns(results: Sequence[JudgeResult], metrics: Sequence[str]) -> dict[str, list[Any]]:
    """Per metric: ``judge_<m>`` (the mean of the samples that succeeded), ``judge_<m>_samples``
    (each sample, NaN when its call failed; an empty list when the item was not judged) and
    ``judge_<m>_sd``."""
    columns: dict[str, list[Any]] = {}
    for m in metrics:
        matrix = sample_matrix(results, m)
        col = measures.JUDGE_PREFIX + m
        columns[col] = [r.scores.get(m, np.nan) if r.scores.get(m) is not None else np.nan for r in results]
        columns[col + SAMPLES_SUFFIX] = [row.tolist() if m in r.samples or m in r.scores else []
                                         for r, row in zip(results, matrix)]
        columns[col + SPREAD_SUFFIX] = question_spreads(matrix).tolist()
    return columns


def tally(results: Sequence[JudgeResult]) -> dict[str, Any]:
    """What judging cost and how much of it failed: judgements attempted (items x metrics x
    samples), failed (left out of every n), calls made, tokens and seconds."""
    attempted = failed = 0
    for r in results:
        for m in set(r.scores) | set(r.samples):
            values = r.samples.get(m, [r.scores.get(m)])
            attempted += len(values)
            failed += sum(v is None for v in values)
    return {"attempted": attempted, "failures": failed, "calls": sum(r.calls for r in results),
            "tokens_in": sum(r.tokens_in for r in results), "tokens_out": sum(r.tokens_out for r in results),
            "seconds": round(sum(r.seconds for r in results), 6)}


def frame_samples(frame: pd.DataFrame, metric: str) -> np.ndarray | None:
    """The ``(questions, samples)`` matrix of a records frame's ``judge_<metric>_samples`` column
    (NaN padded), or None when the frame has no such column (a cell written before samples).
    ValueError naming the column when it holds anything but lists of finite numbers (or NaN)."""
    col = measures.JUDGE_PREFIX + metric + SAMPLES_SUFFIX
    if col not in frame:
        return None
    try:
        rows: list[np.ndarray] = [np.empty(0) if v is None else np.asarray(list(v), dtype=np.float64)
                                  for v in frame[col]]
    except (TypeError, ValueError) as exc:
        raise ValueError(f"records.parquet {col} holds something other than lists of numbers "
                         f"({' '.join(str(exc).split())[:120]})") from exc
    if any(np.isinf(r).any() for r in rows if len(r)):
        raise ValueError(f"records.parquet {col} holds an infinite judge sample")
    width = max((len(r) for r in rows), default=0) or 1
    out = np.full((len(rows), width), np.nan)
    for i, row in enumerate(rows):
        out[i, :len(row)] = row
    return out


def judge_statistics(frame: pd.DataFrame, metrics: Sequence[str], *, n_resamples: int,
                     seed: int) -> dict[str, Any]:
    """For metrics.json: per judged metric the two-level CI (``ci``), and its consistency
    (``judge``: ``judge_<m>_consistency``, None when no item has two samples; ``n``: the items
    with two or more samples)."""
    out: dict[str, Any] = {"judge": {}, "ci": {}, "n": {}}
    for m in metrics:
        samples = frame_samples(frame, m)
        if samples is None:
            continue
        key = measures.judge_measure(m).key
        lo, hi = two_level_bootstrap_ci(samples, n_resamples=n_resamples, seed=seed)
        out["ci"][key] = None if np.isnan(lo) else [lo, hi]
        name = measures.JUDGE_PREFIX + m + CONSISTENCY_SUFFIX
        c = judge_consistency(samples)
        out["judge"][name] = None if np.isnan(c) else c
        out["n"][f"{measures.JUDGE_SECTION}/{name}"] = int(((~np.isnan(samples)).sum(axis=1) >= 2).sum())
    return out


def failure_warning(frame: pd.DataFrame, failures: int, attempted: int) -> str:
    """The console's and report's line about failed judgements: how many, that they are left out
    of n, and the first reason recorded in ``judge_failures``."""
    reasons = [r for r in frame.get("judge_failures", pd.Series(dtype=object)) if isinstance(r, str) and r]
    first = f"; first reason: {reasons[0][:200]}" if reasons else ""
    return (f"judge: {failures} of {attempted} judgements failed and are left out of n (records.parquet "
            f"judge_failures has each reason){first}")


def paired_samples(key: str, a: pd.DataFrame, b: pd.DataFrame) -> tuple[np.ndarray, np.ndarray] | None:
    """For ``compare`` and the gate: the ``(questions, samples)`` matrices of a judged measure
    ``key`` (``judge/judge_<m>``) in two records frames aligned on the same questions, or None
    when ``key`` is not judged or either cell kept no samples (then the questions-only test
    applies)."""
    section, _, name = key.partition("/")
    if section != measures.JUDGE_SECTION or not name.startswith(measures.JUDGE_PREFIX):
        return None
    metric = name[len(measures.JUDGE_PREFIX):]
    sa, sb = frame_samples(a, metric), frame_samples(b, metric)
    if sa is None or sb is None:
        return None
    return sa, sb
