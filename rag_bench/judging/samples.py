"""Judge samples in a cell: the ``(items, samples)`` matrices of each judged metric, read from
judge results or from a records frame (the columns and statistics built from them are the judge
scorer's: :mod:`rag_bench.evaluation.scorers.judge`).

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

# The judge's measures are judge/judge_<metric> (metrics.json section, records.parquet column prefix).
JUDGE_SECTION = "judge"
JUDGE_PREFIX = "judge_"
SAMPLES_SUFFIX = "_samples"
SPREAD_SUFFIX = "_sd"
# Metrics judged per claim: each claim with its verdicts, {metric: [claim, ...]} as JSON. Not a
# judge_<m> name: those are judged measures (calibrate reads every judge_*faithful* as one).
CLAIMS_COLUMN = "judged_claims"
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
    (NaN padded), or None when the frame has no such column. ValueError naming the column when it
    holds anything but lists of finite numbers (or NaN).

    The judge scorer writes the column for every judged metric; a judged cell without it was
    written before samples were kept (format 0), and None is what makes ``compare`` and the gate
    test its judged measures over the questions alone, as they always did. A "cell written before
    X" branch the format upgrade (:func:`rag_bench.cells.upgrade`) cannot take over while old
    cells read the same: records.parquet is read as written, and a column of one-sample lists
    filled in would switch those cells to the two-level test (and show in the drill-down, which
    lists every ``judge_*`` column)."""
    col = JUDGE_PREFIX + metric + SAMPLES_SUFFIX
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


def paired_samples(key: str, a: pd.DataFrame, b: pd.DataFrame) -> tuple[np.ndarray, np.ndarray] | None:
    """For ``compare`` and the gate: the ``(questions, samples)`` matrices of a judged measure
    ``key`` (``judge/judge_<m>``) in two records frames aligned on the same questions, or None
    when ``key`` is not judged or either cell kept no samples (then the questions-only test
    applies)."""
    section, _, name = key.partition("/")
    if section != JUDGE_SECTION or not name.startswith(JUDGE_PREFIX):
        return None
    metric = name[len(JUDGE_PREFIX):]
    sa, sb = frame_samples(a, metric), frame_samples(b, metric)
    if sa is None or sb is None:
        return None
    return sa, sb
