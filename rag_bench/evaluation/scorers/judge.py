"""LLM judge (metrics.json ``judge``): the judged measures ``judge/judge_<metric>``, one per metric
the judge scores, and their per-question columns in records.parquet.

With ``judge.samples=N`` each judged item has N independent judgements per metric. records.parquet
keeps them all: ``judge_<metric>`` is the per-question mean of the samples that succeeded (NaN when
none did: left out of n), ``judge_<metric>_samples`` the list of every sample in sample order (NaN
for a failed call) and ``judge_<metric>_sd`` their spread (standard deviation, NaN with fewer
than two). The cell's interval of ``judge/judge_<metric>`` is the two-level bootstrap over that
list column (:func:`rag_bench.metrics.intervals.judged_ci`: Wilson with one yes/no sample each), and
``judge/judge_<metric>_consistency`` says how often the judge agrees with itself. Which metrics
are judged is the judge's choice (``judge.metrics``): the measures are made per run
(:func:`judge_measure`), not declared once. What judging cost goes to ``counts`` and ``cost``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from rag_bench.evaluation.run import SystemRun
from rag_bench.evaluation.scorer import Measure, Part, ScoringInput, Settings, figures
from rag_bench.judging.base import JudgeResult
from rag_bench.judging.samples import (
    CLAIMS_COLUMN,
    CONSISTENCY_SUFFIX,
    JUDGE_PREFIX,
    JUDGE_SECTION,
    SAMPLES_SUFFIX,
    SPREAD_SUFFIX,
    sample_matrix,
    tally,
)
from rag_bench.metrics.bootstrap import judge_consistency, question_spreads
from rag_bench.metrics.intervals import judged_ci

SECTION = JUDGE_SECTION
COUNTS = figures("counts", (
    ("judge_attempted", None, "items the judge was asked to score"),
    ("judge_failures", False, "judge calls that failed"),
    ("judge_calls", False, "judge calls (a cost)"),
))
COST = figures("cost", (
    ("judge_calls", False, "judge calls made (judgements served by the judge cache make none)"),
    ("judge_tokens_in", False, "prompt tokens of the judge calls (the endpoint's usage)"),
    ("judge_tokens_out", False, "completion tokens of the judge calls (the endpoint's usage)"),
    ("judge_s", False, "seconds spent in judge calls (summed over calls in flight together)"),
))


def judge_measure(metric: str) -> Measure:
    """The measure of one judged metric (``faithfulness`` → ``judge/judge_faithfulness``)."""
    return Measure(JUDGE_PREFIX + metric, SECTION, description=f"LLM judge: {metric}")


def consistency_measure(metric: str) -> Measure:
    """How often the judge agrees with itself on one metric (items with two or more samples)."""
    return Measure(JUDGE_PREFIX + metric + CONSISTENCY_SUFFIX, SECTION,
            description=f"LLM judge: {metric}, agreement of its "
                   "samples with each other", aggregate="value")


def _results(run: SystemRun) -> list[JudgeResult]:
    return [q.judge if q.judge is not None else JudgeResult() for q in run.questions]


def columns(results: Sequence[JudgeResult], metrics: Sequence[str]) -> dict[str, list[Any]]:
    """Per metric: ``judge_<m>`` (the mean of the samples that succeeded), ``judge_<m>_samples``
    (each sample, NaN when its call failed; an empty list when the item was not judged) and
    ``judge_<m>_sd``; then ``judge_failures`` (each item's failure reasons, JSON) and, when a
    metric was judged per claim, ``judged_claims`` (per such metric each claim, its citations, the
    passages the judge read and its verdict per sample, JSON)."""
    out: dict[str, list[Any]] = {}
    for m in metrics:
        matrix = sample_matrix(results, m)
        col = judge_measure(m).column
        out[col] = [r.scores.get(m, np.nan) if r.scores.get(m) is not None else np.nan for r in results]
        out[col + SAMPLES_SUFFIX] = [row.tolist() if m in r.samples or m in r.scores else []
                                     for r, row in zip(results, matrix)]
        out[col + SPREAD_SUFFIX] = question_spreads(matrix).tolist()
    out["judge_failures"] = [json.dumps(r.failures) if r.failures else None for r in results]
    if any(r.claims for r in results):  # judged per claim: each claim with its verdicts
        out[CLAIMS_COLUMN] = [json.dumps(r.claims) if r.claims else None for r in results]
    return out


class Judge:
    """The scorer of the judged measures (cells an LLM judge scored)."""

    name = "judge"
    requires: tuple[str, ...] = ("judge",)  # the evaluation runs it only on a run that has it

    def measures(self, run: SystemRun, settings: Settings) -> list[Measure]:
        """Each judged metric's measure and consistency, and what judging cost."""
        assert run.judge is not None  # requires
        ms = run.judge.metrics
        return [*(judge_measure(m) for m in ms), *(consistency_measure(m) for m in ms), *COUNTS, *COST]

    def score(self, scoring: ScoringInput) -> list[Part]:
        """The judge's columns; per metric its two-level interval and consistency; counts, cost and
        the failure warning."""
        run = scoring.run
        assert run.judge is not None  # requires
        metrics, results = run.judge.metrics, _results(run)
        cols = columns(results, metrics)
        values: dict[str, Any] = {}
        n: dict[str, int] = {}
        cis: dict[str, list[float] | None] = {}
        for m in metrics:
            samples = sample_matrix(results, m)
            lo, hi = judged_ci(samples, n_resamples=scoring.settings.n_resamples, seed=scoring.settings.seed)
            cis[judge_measure(m).key] = None if np.isnan(lo) else [lo, hi]
            c = judge_consistency(samples)
            key = consistency_measure(m).key
            values[key] = None if np.isnan(c) else c
            n[key] = int(((~np.isnan(samples)).sum(axis=1) >= 2).sum())
        cost = tally(results)
        values.update({COUNTS[0].key: cost["attempted"], COUNTS[1].key: cost["failures"], COUNTS[2].key: cost["calls"],
                       COST[0].key: cost["calls"], COST[1].key: cost["tokens_in"], COST[2].key: cost["tokens_out"],
                       COST[3].key: cost["seconds"]})
        warnings = (failure_warning(cols["judge_failures"], cost["failures"], cost["attempted"]),) \
            if cost["failures"] else ()
        return [Part("judge", cols, values=values, n=n, cis=cis, warnings=warnings)]


def failure_warning(failures: Sequence[str | None], failed: int, attempted: int) -> str:
    """The console's and report's line about failed judgements: how many, that they are left out
    of n, and the first reason recorded in ``judge_failures``."""
    reasons = [r for r in failures if isinstance(r, str) and r]
    first = f"; first reason: {reasons[0][:200]}" if reasons else ""
    return (f"judge: {failed} of {attempted} judgements failed and are left out of n (records.parquet "
            f"judge_failures has each reason){first}")


SCORER = Judge()
