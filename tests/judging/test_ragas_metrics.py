"""The ragas metric table: every entry exists in the pinned ragas, its inputs are what its
``ascore`` takes, and the judge runs them with bounded concurrency, counting every failure."""

from __future__ import annotations

import inspect

import pytest

from rag_bench.errors import ConfigError
from rag_bench.judging.base import JudgeSample
from rag_bench.judging.ragas_judge import RAGAS_METRICS, RagasJudge

collections = pytest.importorskip("ragas.metrics.collections", reason="the judge extra installs ragas")


@pytest.mark.parametrize("name", sorted(RAGAS_METRICS))
def test_every_metric_matches_the_pinned_ragas(name):
    spec = RAGAS_METRICS[name]
    params = inspect.signature(getattr(collections, spec.cls).ascore).parameters
    assert set(spec.inputs) == {p for p in params if p != "self"}
    assert ("embeddings" in inspect.signature(getattr(collections, spec.cls).__init__).parameters) >= spec.embeddings


def test_unknown_metrics_and_bad_concurrency_are_config_errors():
    with pytest.raises(ConfigError, match="judge.metrics: unknown"):
        RagasJudge(base_url="http://127.0.0.1:9/v1", metrics=["vibes"])
    with pytest.raises(ConfigError, match="judge.concurrency"):
        RagasJudge(base_url="http://127.0.0.1:9/v1", concurrency=0)


class _Scorer:
    def __init__(self, log, fail=False):
        self.log, self.fail = log, fail

    async def ascore(self, **kwargs):
        import asyncio

        self.log.append(("start", kwargs.get("user_input") or kwargs.get("response")))
        await asyncio.sleep(0.01)
        self.log.append(("end", None))
        if self.fail:
            raise TimeoutError("judge timed out")

        class R:
            value = 0.5

        return R()


def test_reference_metrics_skip_questions_without_one_and_failures_are_counted(tmp_path, monkeypatch):
    """Our logic around ragas (a fake scorer stands in for the LLM): which samples each metric
    gets, at most `concurrency` in flight, failures recorded with their reason."""
    log: list = []
    judge = RagasJudge(base_url="http://127.0.0.1:9/v1", metrics=["faithfulness", "context_recall"], concurrency=2)
    monkeypatch.setattr(judge, "_scorers", lambda: {"faithfulness": _Scorer(log),
                                                   "context_recall": _Scorer(log, fail=True)})
    samples = [JudgeSample("q1", "a1", ("c",), "ref"), JudgeSample("q2", "a2", ("c",), None), None,
               JudgeSample("q3", "a3", ("c",), "ref3")]
    results = judge.judge(samples, cache_dir=tmp_path)
    assert set(results[0].scores) == {"faithfulness", "context_recall"} and set(results[1].scores) == {"faithfulness"}
    assert results[2].scores == {} and results[0].scores["faithfulness"] == 0.5
    assert results[0].failures == {"context_recall": "TimeoutError: judge timed out"}
    in_flight = peak = 0
    for kind, _ in log:
        in_flight += 1 if kind == "start" else -1
        peak = max(peak, in_flight)
    assert peak == 2
    again = judge.judge(samples, cache_dir=tmp_path)  # successes are cached, failures retried
    assert again[0].scores["faithfulness"] == 0.5 and again[0].calls == 1
