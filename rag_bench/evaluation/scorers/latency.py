"""Latency (metrics.json ``latency``): each stage's time and the per-question latencies' p50/p95.

Whose latencies they are is the run's to say: our pipeline's retrieval (``retrieve_p50_ms``), an
external system's end-to-end figure (``system_p50_ms``), or none given (an empty section). Every
number here is a duration: lower is better. Shared work is counted once, by the cell that did it.

Where our pipeline generated answers, ``e2e_p50_ms``/``e2e_p95_ms`` are what a person asking waits
per question: its retrieval + rerank + the generator's call, summed per question, over the questions
whose answer the generator produced in this run. A generation served from the generation cache
took no generator time in this run (its ``seconds`` are 0), so it is left out rather than counted
as free; when every answer came from the cache the figures are null (not measured).
``seconds_per_question`` is the generation stage's wall time over all questions (cache lookups
included): a stage total, not a per-question latency. How many answers were timed and how many came
from the cache: ``cost/generations_cached`` and records.parquet ``generation_cached`` (the report's
"answers timed").

The LLM judge is timed separately (it is the evaluation's cost, not the asker's wait):
``judge_p50_ms``/``judge_p95_ms`` over the questions whose judgement made calls in this run (a
judgement served by the judge cache took none of its time: left out, as cached answers are).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from rag_bench.evaluation.run import SystemRun
from rag_bench.evaluation.scorer import Measure, Part, ScoringInput, Settings

SECTION = "latency"


def duration(name: str, description: str = "") -> Measure:
    """A duration of the latency section (lower is better)."""
    return Measure(name, SECTION,
            description=description or f"{name.replace('_', ' ')}", higher_is_better=False, aggregate="value")


E2E_P50 = duration("e2e_p50_ms", "end-to-end latency per question, median (ms): retrieval + rerank + the "
                   "generator's call, over the questions the generator answered in this run (not from its cache)")
E2E_P95 = duration("e2e_p95_ms", "end-to-end latency per question, 95th percentile (ms): retrieval + rerank + the "
                   "generator's call, over the questions the generator answered in this run (not from its cache)")
JUDGE_P50 = duration("judge_p50_ms", "LLM judge time per question, median (ms): its calls for the question's "
                     "answer, over the questions judged by calls in this run (not from the judge cache)")
JUDGE_P95 = duration("judge_p95_ms", "LLM judge time per question, 95th percentile (ms): its calls for the "
                     "question's answer, over the questions judged by calls in this run (not from the judge cache)")
_DESCRIBED = {m.name: m for m in (E2E_P50, E2E_P95, JUDGE_P50, JUDGE_P95)}


def end_to_end_ms(run: SystemRun) -> list[float]:
    """Each question's retrieval + rerank + generation time (ms), for the questions whose answer
    the generator produced in this run (a cached generation took none of its time); empty when
    the run's latencies are not our pipeline's or nothing was generated."""
    if run.latency != "pipeline":
        return []
    return [q.retrieve_ms + (q.rerank_ms or 0.0) + 1000.0 * q.generation.seconds for q in run.questions
            if q.generation is not None and not q.generation.cached and q.retrieve_ms is not None]


def judge_ms(run: SystemRun) -> list[float]:
    """Each question's judge time (ms), for the questions whose judgement made calls in this run
    (seconds of calls in flight together are summed per question)."""
    return [1000.0 * q.judge.seconds for q in run.questions if q.judge is not None and q.judge.calls > 0]


def _percentiles(prefix: str, ms: Any) -> dict[str, float]:
    return {f"{prefix}_p50_ms": float(np.percentile(ms, 50)), f"{prefix}_p95_ms": float(np.percentile(ms, 95))}


class Latency:
    """The scorer of the ``latency`` section."""

    name = "latency"
    requires: tuple[str, ...] = ()  # what every run has: its rankings and questions

    def measures(self, run: SystemRun, settings: Settings) -> list[Measure]:
        """The durations the run reports (their names depend on the stages it ran)."""
        return [_DESCRIBED.get(name) or duration(name) for name in _values(run, 0.0)]

    def score(self, scoring: ScoringInput) -> list[Part]:
        """The stage timings (scoring's own included) and the latencies' percentiles."""
        values = _values(scoring.run, time.perf_counter() - scoring.started)
        return [Part(SECTION, values={f"{SECTION}/{name}": v for name, v in values.items()},
                     sections={SECTION: {}})]  # an empty section says "no latency given"


def _values(run: SystemRun, score_s: float) -> dict[str, Any]:
    if run.latency == "none":
        return {}
    latency: dict[str, Any] = {}
    for name, v in run.timings.items():
        latency[name] = round(v, 6)
        if name == "retrieve_s":
            latency["score_s"] = round(score_s, 6)
    if run.timings:
        latency.setdefault("score_s", round(score_s, 6))
    prefix = "system" if run.latency == "system" else "retrieve"
    lat = np.asarray([q.retrieve_ms for q in run.questions if q.retrieve_ms is not None], np.float64)
    latency.update({f"{prefix}_p50_ms": float(np.percentile(lat, 50)) if lat.size else None,
                    f"{prefix}_p95_ms": float(np.percentile(lat, 95)) if lat.size else None})
    rerank = [q.rerank_ms for q in run.questions if q.rerank_ms is not None]
    if rerank:
        latency.update(_percentiles("rerank", rerank))
    if run.answered and run.generate_s is not None:
        latency.update(generate_s=round(run.generate_s, 6),
                       seconds_per_question=run.generate_s / max(1, len(run.questions)))
    if run.answered and run.latency == "pipeline":
        e2e = end_to_end_ms(run)
        latency.update(_percentiles("e2e", e2e) if e2e else {E2E_P50.name: None, E2E_P95.name: None})
    if run.judge is not None:
        judged = judge_ms(run)
        latency.update(_percentiles("judge", judged) if judged else {JUDGE_P50.name: None, JUDGE_P95.name: None})
    return latency


SCORER = Latency()
