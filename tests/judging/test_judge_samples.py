"""judge.samples: N independent judge calls per item, each cached under its index, kept in
records.parquet, turned into a two-level interval and judge_consistency; the judge's plumbing
(bounded pool, failures recorded and left out of n, tokens and seconds counted)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from rag_bench.evaluation.scorers.judge import columns as sample_columns
from rag_bench.evaluation.scorers.judge import failure_warning
from rag_bench.judging.base import JudgeResult, JudgeSample
from rag_bench.judging.ragas_judge import RagasJudge, embedder_identity
from rag_bench.judging.samples import tally
from rag_bench.metrics.bootstrap import judge_consistency, two_level_bootstrap_ci
from tests.judging.scripted_judge import ScriptedJudge, verdict
from tests.servers import serving

pytest.importorskip("ragas.metrics.collections", reason="the judge extra installs ragas")


class _BySeed:
    """A scorer whose value depends on the sample (the seed its LLM was built with) and the item."""

    def __init__(self, log, sample):
        self.log, self.sample = log, sample

    async def ascore(self, **kwargs):
        self.log.append((kwargs["user_input"], self.sample))

        class R:
            value = 0.0 if (self.sample + len(kwargs["user_input"])) % 3 == 0 else 1.0

        return R()


def test_samples_are_cached_by_index_and_raising_n_computes_only_the_new_ones(tmp_path, monkeypatch):
    log: list = []
    items = [JudgeSample("q1?", "a1", ("c",)), None, JudgeSample("q22?", "a2", ("c",))]

    def judge(n):
        j = RagasJudge(base_url="http://127.0.0.1:9/v1", metrics=["faithfulness"], samples=n, concurrency=2)
        monkeypatch.setattr(j, "_scorers", lambda sample=0: {"faithfulness": _BySeed(log, sample)})
        return j.judge(items, cache_dir=tmp_path)

    first = judge(3)
    assert sorted(log) == sorted((q, s) for q in ("q1?", "q22?") for s in range(3))
    assert first[0].samples["faithfulness"] == [0.0, 1.0, 1.0]  # (sample + len("q1?")) % 3 == 0 is 0
    assert first[0].scores["faithfulness"] == pytest.approx(2 / 3)
    assert first[1].samples == {} and first[0].calls == 3
    log.clear()
    again = judge(3)
    assert log == [] and again[0].samples == first[0].samples and again[0].calls == 0  # all from the cache
    more = judge(5)
    assert sorted(log) == sorted((q, s) for q in ("q1?", "q22?") for s in (3, 4))  # only the new samples
    assert more[0].samples["faithfulness"][:3] == first[0].samples["faithfulness"]
    assert len(more[2].samples["faithfulness"]) == 5


def test_sample_zero_keeps_the_key_of_a_judgement_made_before_samples_existed():
    j = RagasJudge(base_url="http://127.0.0.1:9/v1", metrics=["faithfulness"], samples=3)
    s = JudgeSample("q?", "a.", ("ctx",), "ref")
    keys = {j._key("faithfulness", s, n) for n in range(3)}
    assert len(keys) == 3 and j._key("faithfulness", s) == j._key("faithfulness", s, 0)


def test_the_embedder_is_in_the_key_even_without_an_identity():
    """Known bug: an embedder that carries no ``identity`` was keyed by its class name alone, so
    two configurations of one embedder class (another model) shared their response_relevancy
    judgements. Its own settings are in the key now."""

    class Plain:
        def __init__(self, model):
            self.model = model

    s = JudgeSample("q?", "a.", ("ctx",))
    a = RagasJudge(base_url="http://127.0.0.1:9/v1", metrics=["response_relevancy"], embedder=Plain("mini"))
    b = RagasJudge(base_url="http://127.0.0.1:9/v1", metrics=["response_relevancy"], embedder=Plain("bge"))
    assert a._key("response_relevancy", s) != b._key("response_relevancy", s)
    assert "mini" in embedder_identity(Plain("mini"))


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "3"])
def test_samples_must_be_a_positive_integer(bad):
    from rag_bench.errors import ConfigError

    with pytest.raises(ConfigError, match="judge.samples"):
        RagasJudge(base_url="http://127.0.0.1:9/v1", samples=bad)


def test_over_http_each_sample_is_its_own_seeded_call_with_tokens_counted(tmp_path):
    """The scripted judge flips a verdict by the request's seed: the samples RagasJudge returns are
    exactly the verdicts drawn for seeds 0..N-1, two calls each (ragas' faithfulness makes a
    statements call and a verdict call); tokens from the endpoint's usage are counted per item."""
    truth = {0: True, 1: False, 2: True}
    with serving(ScriptedJudge, run=7, truth=truth, flip=0.4) as server:
        judge = RagasJudge(base_url=f"http://127.0.0.1:{server.server_port}/v1", metrics=["faithfulness"],
                           samples=4, concurrency=3, max_retries=0, timeout_s=30)
        results = judge.judge([JudgeSample(f"item {q}", f"answer {q}.", ("ctx",)) for q in truth], cache_dir=tmp_path)
        seeds = sorted({r.get("seed") for r in server.requests})
    assert seeds == [0, 1, 2, 3] and len(server.requests) == 2 * 4 * 3
    for q, r in zip(truth, results):
        assert r.samples["faithfulness"] == [verdict(7, q, s, truth=truth[q], flip=0.4) for s in range(4)]
        assert r.tokens_in == 4 * 2 * 100 and r.tokens_out == 4 * 2 * 10 and r.seconds > 0


def test_columns_statistics_and_failures_left_out_of_n():
    results = [JudgeResult(scores={"f": 0.5}, samples={"f": [1.0, 0.0]}),
               JudgeResult(scores={"f": 1.0}, samples={"f": [1.0, None]}, failures={"f": "sample 1: Timeout"}),
               JudgeResult(scores={"f": None}, samples={"f": [None, None]}, failures={"f": "sample 0: Timeout"}),
               JudgeResult()]
    cols = sample_columns(results, ["f"])
    assert cols["judge_f"][:2] == [0.5, 1.0] and np.isnan(cols["judge_f"][2]) and np.isnan(cols["judge_f"][3])
    assert cols["judge_f_samples"][3] == [] and np.isnan(cols["judge_f_samples"][1][1])
    assert cols["judge_f_sd"][0] == pytest.approx(np.sqrt(0.5)) and np.isnan(cols["judge_f_sd"][1])
    assert tally(results) == {"attempted": 6, "failures": 3, "calls": 0, "tokens_in": 0, "tokens_out": 0,
                              "seconds": 0.0}
    assert cols["judge_failures"] == [None, json.dumps(results[1].failures), json.dumps(results[2].failures), None]
    warning = failure_warning(cols["judge_failures"], 3, 6)
    assert "3 of 6 judgements failed" in warning and "sample 1: Timeout" in warning


def test_the_two_level_interval_widens_with_judge_noise_and_equals_questions_only_for_one_sample():
    """Same per-question means, once judged consistently and once spread by +-0.3: the two-level
    interval is wider for the noisy judge (the questions-only one cannot tell them apart)."""
    from rag_bench.metrics.bootstrap import bootstrap_ci, question_means

    means = np.random.default_rng(0).uniform(0.3, 0.7, 30)
    quiet = np.repeat(means[:, None], 3, axis=1)
    noisy = means[:, None] + np.array([-0.3, 0.0, 0.3])
    assert np.allclose(question_means(noisy), means)
    lo_q, hi_q = two_level_bootstrap_ci(quiet, seed=1)
    lo_n, hi_n = two_level_bootstrap_ci(noisy, seed=1)
    assert hi_n - lo_n > 1.5 * (hi_q - lo_q)
    assert (lo_q, hi_q) == pytest.approx(bootstrap_ci(means, seed=1), abs=0.02)
    assert two_level_bootstrap_ci(means[:, None], seed=3) == bootstrap_ci(means, seed=3)
    assert judge_consistency(quiet) == 1.0 and judge_consistency(noisy) < 1.0


def test_a_cell_judged_with_samples_over_http(tmp_path, monkeypatch):
    """A real cell (extractive answers on the tiny set) judged by the scripted endpoint with
    judge.samples=3: the samples column, the two-level CI and consistency in metrics.json, the
    cost figures; the same cell again is served by the cache (no call)."""
    from tests.runner.test_run_cell import run

    monkeypatch.setenv("RAG_BENCH_CACHE", str(tmp_path / "cache"))
    with serving(ScriptedJudge, run=1, truth={}, flip=0.3) as server:
        args = ["generator=extractive", "judge=ragas", f"judge.base_url=http://127.0.0.1:{server.server_port}/v1",
                "judge.metrics=[faithfulness]", "judge.samples=3", "judge.max_retries=0", "judge.concurrency=2"]
        cell = run(tmp_path / "a", *args)
        again = run(tmp_path / "b", *args)
    records = pd.read_parquet(cell / "records.parquet")
    m = json.loads((cell / "metrics.json").read_text())
    judged = records["judge_faithfulness_samples"].map(len) > 0
    assert judged.sum() >= 1 and (records.loc[judged, "judge_faithfulness_samples"].map(len) == 3).all()
    matrix = np.array([list(v) if len(v) else [np.nan] * 3 for v in records["judge_faithfulness_samples"]])
    assert m["ci"]["judge/judge_faithfulness"] == list(two_level_bootstrap_ci(matrix, n_resamples=1000, seed=0))
    assert m["judge"]["judge_faithfulness_consistency"] == judge_consistency(matrix)
    assert m["judge"]["judge_faithfulness"] == pytest.approx(np.nanmean(matrix, axis=1)[judged].mean())
    assert m["counts"]["judge_attempted"] == 3 * judged.sum() and m["counts"]["judge_failures"] == 0
    assert m["cost"]["judge_calls"] == 3 * judged.sum() and m["cost"]["judge_tokens_in"] == 2 * 100 * 3 * judged.sum()
    m2 = json.loads((again / "metrics.json").read_text())
    assert m2["cost"]["judge_calls"] == 0 and m2["judge"] == m["judge"]


def test_the_report_counts_failed_judgements_not_unjudged_refusals(tmp_path):
    """The report's health table counted every row without a judge score as a judge failure (a
    refusal, which is never judged, among them) and, with list columns of samples, none at all;
    it shows counts.judge_failures now."""
    from rag_bench.cells import Cell
    from rag_bench.reporting.report import _security

    records = pd.DataFrame({"qid": ["q1", "q2"], "generation_error": [None, None],
                            "judge_faithfulness": [1.0, np.nan], "judge_faithfulness_samples": [[1.0, 1.0], []],
                            "judge_failures": [None, None]})
    metrics = {"generation": {"correct": 0.5}, "counts": {"judge_failures": 0}, "security": {}}
    clean = Cell("c1", tmp_path / "c1", {}, metrics, {}, [records])
    assert "0 generation, endpoint or judge failures" in _security([clean], {"c1": "c1"})
    failed = Cell("c2", tmp_path / "c2", {}, {**metrics, "counts": {"judge_failures": 3}}, {}, [records])
    assert "judge failures" in _security([failed], {"c2": "c2"}) and ">3<" in _security([failed], {"c2": "c2"})


def test_an_interrupt_stops_the_pool_and_keeps_finished_judgements(tmp_path, monkeypatch):
    """A KeyboardInterrupt inside a judge call stops the run (it is not recorded as a failure);
    calls still in flight are cancelled, and judgements finished before it stay cached."""
    import asyncio

    class Scorer:
        async def ascore(self, **kwargs):
            if kwargs["user_input"] == "stop?":
                await asyncio.sleep(0.05)
                raise KeyboardInterrupt
            if kwargs["user_input"] == "slow?":
                await asyncio.sleep(30)

            class R:
                value = 1.0

            return R()

    judge = RagasJudge(base_url="http://127.0.0.1:9/v1", metrics=["faithfulness"], concurrency=3)
    monkeypatch.setattr(judge, "_scorers", lambda sample=0: {"faithfulness": Scorer()})
    items = [JudgeSample(q, "a", ("c",)) for q in ("fast?", "stop?", "slow?")]
    with pytest.raises(KeyboardInterrupt):
        judge.judge(items, cache_dir=tmp_path)
    monkeypatch.setattr(judge, "_scorers", lambda sample=0: pytest.fail("fast? was cached"))
    (fast,) = judge.judge(items[:1], cache_dir=tmp_path)
    assert fast.scores == {"faithfulness": 1.0} and fast.calls == 0
