"""The ragas metric table: every entry exists in the pinned ragas, its inputs are what its
``ascore`` takes, and the judge runs them with bounded concurrency, counting every failure."""

from __future__ import annotations

import inspect
import json

import pytest

from rag_bench.errors import ConfigError
from rag_bench.judging.base import JudgeSample
from rag_bench.judging.ragas_judge import RAGAS_METRICS, RagasJudge
from tests.servers import JsonEndpoint, serving

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
    monkeypatch.setattr(judge, "_scorers", lambda n=0: {"faithfulness": _Scorer(log),
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


class _Value:
    def __init__(self, value):
        self.value = value

    async def ascore(self, **kwargs):
        class R:
            value = self.value

        return R()


def test_a_score_outside_the_metric_range_is_a_recorded_failure(tmp_path, monkeypatch):
    """ragas does not check the verdicts it averages: gemma-3-270m answered a context precision
    verdict of 10**15 (the prompt asks for 0/1) and ragas scored 1e15. Such a score is a failure
    with its reason, not cached; cosine-based relevancy may be negative."""
    judge = RagasJudge(base_url="http://127.0.0.1:9/v1", metrics=["context_precision", "response_relevancy"])
    monkeypatch.setattr(judge, "_scorers", lambda n=0: {"context_precision": _Value(1e15),
                                                   "response_relevancy": _Value(-0.0127)})
    (result,) = judge.judge([JudgeSample("q", "a", ("c",), "ref")], cache_dir=tmp_path)
    assert result.scores == {"context_precision": None, "response_relevancy": -0.0127}
    assert result.failures == {"context_precision": "ValueError: judge score 1000000000000000.0 is outside [0, 1]"}
    monkeypatch.setattr(judge, "_scorers", lambda n=0: {"context_precision": _Value(1.0)})
    (again,) = judge.judge([JudgeSample("q", "a", ("c",), "ref")], cache_dir=tmp_path)
    assert again.scores["context_precision"] == 1.0 and again.calls == 1  # judged again: the failure was not cached


class _Invalid(JsonEndpoint):
    """An OpenAI-compatible endpoint that records each request body and answers JSON that fits no
    ragas schema."""

    def answer(self, body):
        return 200, json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": "local",
                                "choices": [{"index": 0, "finish_reason": "stop",
                                             "message": {"role": "assistant", "content": '{"nothing": "useful"}'}}],
                                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}).encode()


@pytest.fixture
def invalid_endpoint():
    with serving(_Invalid) as server:
        yield server


def _judge_once(server, tmp_path, **kwargs):
    judge = RagasJudge(base_url=f"http://127.0.0.1:{server.server_port}/v1", metrics=["faithfulness"],
                       **{"timeout_s": 10, **kwargs})
    (result,) = judge.judge([JudgeSample("How long?", "14 days.", ("Refunds within 14 days.",))], cache_dir=tmp_path)
    return result


@pytest.mark.parametrize("max_retries", [0, 1])
def test_an_invalid_completion_is_retried_max_retries_times(invalid_endpoint, tmp_path, max_retries):
    """Real ragas and instructor against a local endpoint: a completion that does not fit the
    metric's schema is re-asked judge.max_retries times, then recorded as a failure. instructor's
    default re-asked it twice whatever the setting (3 requests per failed judgement)."""
    result = _judge_once(invalid_endpoint, tmp_path, max_retries=max_retries)
    assert result.scores == {"faithfulness": None} and "faithfulness" in result.failures
    assert len(invalid_endpoint.requests) == 1 + max_retries


def test_each_request_carries_the_metric_output_schema(invalid_endpoint, tmp_path):
    """response_format=json_object (default) attaches the schema of what the metric parses, which
    llama.cpp's server decodes to; ragas alone sends bare JSON mode, and a small model's free JSON
    then fails validation. json keeps the schema in the prompt only."""
    from ragas.metrics.collections.faithfulness.util import StatementGeneratorOutput

    _judge_once(invalid_endpoint, tmp_path, max_retries=0)
    _judge_once(invalid_endpoint, tmp_path / "json", max_retries=0, response_format="json")
    attached, bare = (r["response_format"] for r in invalid_endpoint.requests)
    assert attached == {"type": "json_object", "schema": StatementGeneratorOutput.model_json_schema()}
    assert bare == {"type": "json_object"}
    with pytest.raises(ConfigError, match="judge.response_format"):
        RagasJudge(base_url="http://127.0.0.1:9/v1", response_format="yaml")


def test_max_retries_must_be_a_non_negative_integer():
    with pytest.raises(ConfigError, match="judge.max_retries"):
        RagasJudge(base_url="http://127.0.0.1:9/v1", max_retries=-1)


def test_a_score_that_compares_embeddings_is_cached_per_embedder():
    """response_relevancy compares embeddings: another embedder is another cache entry; the
    faithfulness key (no embeddings) does not depend on it and is unchanged."""
    import hashlib

    class Embedder:
        def __init__(self, identity):
            self.identity = identity

    sample = JudgeSample("q?", "a.", ("ctx",), "ref")
    a = RagasJudge(base_url="http://127.0.0.1:9/v1", metrics=["faithfulness", "response_relevancy"],
                   embedder=Embedder("minilm@1"))
    b = RagasJudge(base_url="http://127.0.0.1:9/v1", metrics=["faithfulness", "response_relevancy"],
                   embedder=Embedder("bge@2"))
    assert a._key("response_relevancy", sample) != b._key("response_relevancy", sample)
    assert a._key("faithfulness", sample) == b._key("faithfulness", sample)
    before = json.dumps([a.identity, "faithfulness", "q?", "a.", ["ctx"], "ref"], sort_keys=True)
    assert a._key("faithfulness", sample) == hashlib.sha256(before.encode()).hexdigest()


def test_the_judge_client_keeps_the_key_home_and_bounds_each_request_whole(tmp_path, monkeypatch):
    """Our judge client (httpx under openai) against tests/servers.py's hostile endpoint: a
    redirect to another host is not followed (nothing reaches it), a reply dripped a byte at a time
    ends at judge.timeout_s (httpx's own timeout bounds each read only), and a failure's reason
    never holds the key an error page quotes back."""
    import time

    from tests.servers import TRANSPORT_ACTS, HostileEndpoint, hostile

    class Elsewhere(HostileEndpoint):
        def do_POST(self):  # noqa: N802 (http.server API)
            self.server.seen.append(self.headers.get("Authorization"))
            self.send(200, b"{}")

        do_GET = do_POST  # noqa: N815

    key = "sk-JUDGE-hostile-5c0ffee"
    monkeypatch.setenv("JUDGE_TEST_KEY", key)
    with serving(Elsewhere, seen=[]) as other:
        for act in ("redirect-302-elsewhere", "redirect-307-elsewhere", "drip", "echo-401"):
            with hostile(TRANSPORT_ACTS[act]) as server:
                server.elsewhere = f"http://localhost:{other.server_port}"
                t0 = time.monotonic()
                result = _judge_once(server, tmp_path / act, max_retries=0, api_key_env="JUDGE_TEST_KEY", timeout_s=1)
                took = time.monotonic() - t0
            assert result.scores == {"faithfulness": None}, act
            assert key not in json.dumps(result.failures), act
            assert all(auth == f"Bearer {key}" for _, auth in server.seen)
            if act == "drip":
                assert took < 6, took  # one request of 1 s (the reply would take a minute)
                assert "timed out" in result.failures["faithfulness"].lower()
    assert other.seen == []


@pytest.mark.parametrize(("kw", "needle"), [({"timeout_s": 0}, "judge.timeout_s"), ({"timeout_s": -5}, "judge.timeout_s"),
                                            ({"base_url": "127.0.0.1:8080/v1"}, "judge.base_url")])
def test_judge_timeout_and_url_are_checked(kw, needle):
    with pytest.raises(ConfigError, match=needle):
        RagasJudge(**{"base_url": "http://127.0.0.1:9/v1", **kw})
