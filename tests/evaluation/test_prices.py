"""Cost in money (issue 44): a price table (``prices.*``) gives each cell its dollars per question,
per correct answer and per 1,000 questions, with each stage's share; an unknown price is
"unpriced" (absent, with a warning naming the model and the key), never 0; a cached answer carries
its original cost."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from omegaconf import OmegaConf

from rag_bench.domain import Answer, Dataset, Question, Ranking
from rag_bench.embedding.base import EmbedStats
from rag_bench.evaluation import prices
from rag_bench.evaluation.evaluation import aggregate
from rag_bench.evaluation.grade import Grades
from rag_bench.evaluation.run import JudgeRun, QuestionRun, SystemRun
from rag_bench.evaluation.scorer import ScoringInput, Settings
from rag_bench.evaluation.scorers import cost
from rag_bench.generation.base import Generation, _decode, _encode
from rag_bench.judging.base import JudgeResult

# $3.60 an hour is $0.001 a second: a millisecond costs a millionth of a dollar.
TABLE = {"usd_per_hour": 3.6, "models": {
    "api-llm": {"usd_per_1m_input_tokens": 2.0, "usd_per_1m_output_tokens": 6.0},
    "judge-llm": {"usd_per_1m_input_tokens": 1.0, "usd_per_1m_output_tokens": 4.0},
    "emb": {"usd_per_1k_texts": 0.02}}}
STAGE_CONFIGS = {"generator": {"name": "openai", "model": "api-llm"}, "judge": {"name": "ragas", "model": "judge-llm"},
                 "embedder": {"name": "openai", "model": "emb"}, "reranker": {"name": "mmr", "lambda_": 0.7}}

# Per question: retrieve ms, rerank ms, generator tokens in/out (cached?), correct, judge tokens in/out (calls).
ROWS = [(10.0, 5.0, 1000, 100, False, 1.0, 500, 50, 1),
        (20.0, 5.0, 2000, 200, True, 0.0, 0, 0, 0),  # a cached answer (its original tokens) and a cached judgement
        (30.0, 10.0, 1000, 0, False, 1.0, 500, 50, 1),
        (40.0, 10.0, 1000, 100, False, math.nan, 0, 0, 0)]  # unanswerable: correct undefined, not judged


def table(**changes) -> prices.Prices | None:
    cfg = OmegaConf.create({"prices": {**TABLE, **changes}, **STAGE_CONFIGS})
    return prices.from_config(cfg)


def run(rows=ROWS, *, requested=500, encode_s=0.0, generator_seconds=None) -> SystemRun:
    questions, runs = [], []
    for i, (ret, rer, tin, tout, cached, _, jin, jout, calls) in enumerate(rows):
        q = Question(f"q{i}", "?", True)
        empty = Ranking(q.qid, (), ())
        seconds = 0.0 if generator_seconds is None else generator_seconds[i]
        gen = Generation("{}", tokens_in=tin, tokens_out=tout, cached=cached, seconds=0.0 if cached else seconds,
                         original_seconds=seconds if cached else None)
        runs.append(QuestionRun(q, empty, empty, retrieve_ms=ret, rerank_ms=rer, generation=gen, answer=Answer("x"),
                                judge=JudgeResult(calls=calls, tokens_in=jin, tokens_out=jout, seconds=0.1 * calls)))
        questions.append(q)
    return SystemRun(Dataset("d", "", "native", {}, tuple(questions)), [], tuple(runs), generate_s=0.01,
                     embedding=EmbedStats(requested=requested, cache_hits=requested, encoded=0, encode_s=encode_s),
                     judge=JudgeRun("ragas", ("faithfulness",)))


def score(r: SystemRun, p: prices.Prices | None) -> dict:
    settings = Settings(ks=(5,), k=5, prices=p)
    columns = {"qid": [q.qid for q in r.questions], "correct": [row[5] for row in ROWS[:len(r.questions)]]}
    context = ScoringInput(r, settings, Grades((), {}), columns=dict(columns))
    parts = cost.SCORER.score(context)
    declared = [(m, cost.SCORER.name) for m in cost.SCORER.measures(r, settings)]
    metrics = aggregate(columns, declared, parts, settings)
    metrics["warnings"] = [w for p_ in parts for w in p_.warnings]
    metrics["columns"] = {k: v for p_ in parts for k, v in p_.columns.items()}
    return metrics


def test_a_price_table_gives_the_hand_computed_dollars_per_question_and_per_correct_answer():
    c = score(run(), table())["cost"]
    # retrieval: 10+20+30+40 = 100 ms at $0.001/s                        = $0.0001
    # reranker (mmr: our code, its seconds): 5+5+10+10 = 30 ms             = $0.00003
    # generator: 5000 tokens in x $2/1M = $0.01; 400 out x $6/1M = $0.0024  = $0.0124
    #   (the cached answer counts its original 2000 + 200 tokens)
    # judge: 1000 in x $1/1M = $0.001; 100 out x $4/1M = $0.0004           = $0.0014
    # embedder: 500 texts (cache hits included) x $0.02/1k                  = $0.01
    # total $0.02393 over 4 questions; 2 correct answers
    assert c["usd_retrieval"] == pytest.approx(0.0001 / 4)
    assert c["usd_reranker"] == pytest.approx(0.00003 / 4)
    assert c["usd_generator"] == pytest.approx(0.0124 / 4)
    assert c["usd_judge"] == pytest.approx(0.0014 / 4)
    assert c["usd_embedder"] == pytest.approx(0.01 / 4)
    assert c["usd_per_question"] == pytest.approx(0.02393 / 4)  # 0.0059825
    assert c["usd_per_1k_queries"] == pytest.approx(5.9825)
    assert c["usd_per_correct_answer"] == pytest.approx(0.02393 / 2)  # 0.011965
    assert "unpriced" not in c


def test_each_question_carries_its_dollars_for_the_reports_resampling():
    m = score(run(), table())
    usd = m["columns"][cost.USD_COLUMN]
    # q0: retrieval 10 ms + rerank 5 ms = $0.000015; generator 1000 x 2e-6 + 100 x 6e-6 = $0.0026;
    # judge 500 x 1e-6 + 50 x 4e-6 = $0.0007; embedder $0.01 / 4 = $0.0025
    assert usd[0] == pytest.approx(0.000015 + 0.0026 + 0.0007 + 0.0025)
    assert sum(usd) / 4 == pytest.approx(m["cost"]["usd_per_question"])


def test_the_money_measures_say_lower_is_better_in_the_measures_block():
    block = score(run(), table())["measures"]
    for key in ("cost/usd_per_question", "cost/usd_per_correct_answer", "cost/usd_per_1k_queries", "cost/usd_judge"):
        assert block[key]["direction"] == "lower"


def test_an_unknown_model_is_unpriced_absent_and_warned_about_never_zero():
    p = table(models={k: v for k, v in TABLE["models"].items() if k != "judge-llm"})
    m = score(run(), p)
    c = m["cost"]
    for key in ("usd_per_question", "usd_per_correct_answer", "usd_per_1k_queries", "usd_judge"):
        assert key not in c
    assert c["usd_generator"] == pytest.approx(0.0124 / 4)  # the priced shares stay
    assert "judge model 'judge-llm'" in c["unpriced"] and "prices.models.judge-llm" in c["unpriced"]
    (warning,) = m["warnings"]
    assert "unpriced" in warning and "judge-llm" in warning and "prices.models.judge-llm" in warning
    assert cost.USD_COLUMN not in m["columns"]


def test_local_compute_without_an_hourly_price_is_unpriced_naming_the_key():
    c = score(run(), table(usd_per_hour=None))["cost"]
    assert "usd_per_question" not in c and "usd_retrieval" not in c and "usd_reranker" not in c
    assert "prices.usd_per_hour" in c["unpriced"]
    assert c["usd_embedder"] == pytest.approx(0.01 / 4)


def test_a_model_priced_by_tokens_needs_both_token_prices():
    p = table(models={**TABLE["models"], "api-llm": {"usd_per_1m_input_tokens": 2.0}})
    c = score(run(), p)["cost"]
    assert "usd_generator" not in c and "usd_per_question" not in c
    assert "prices.models.api-llm.usd_per_1m_output_tokens" in c["unpriced"]


def test_a_local_model_is_priced_on_its_seconds_and_a_cached_answer_on_its_original_seconds():
    p = table(models={**TABLE["models"], "api-llm": {}})  # runs on our machine at prices.usd_per_hour
    seconds = [1.0, 2.0, 0.5, 0.5]  # q1's answer is cached: its 2 s are the time it took when produced
    c = score(run(generator_seconds=seconds), p)["cost"]
    assert c["usd_generator"] == pytest.approx(4.0 * 0.001 / 4)  # 4 s at $0.001/s over 4 questions
    own = table(models={**TABLE["models"], "api-llm": {"usd_per_hour": 7.2}})  # the model's own machine
    assert score(run(generator_seconds=seconds), own)["cost"]["usd_generator"] == pytest.approx(4.0 * 0.002 / 4)


def test_the_generation_cache_keeps_the_seconds_an_answer_took_for_its_price():
    stored = _decode(_encode(Generation("{}", tokens_in=3, tokens_out=2, seconds=1.25)))
    assert stored.cached and stored.seconds == 0.0  # no time in this run: left out of the latencies
    assert stored.original_seconds == 1.25 and prices.spent_seconds(stored) == 1.25
    assert prices.spent_seconds(Generation("{}", seconds=0.5)) == 0.5


def test_no_price_table_gives_no_money_and_no_warning():
    assert table(usd_per_hour=None, models={}) is None
    m = score(run(), None)
    assert not any(k.startswith("usd_") for k in m["cost"]) and m["warnings"] == []
    assert "cost/usd_per_question" not in m["measures"]


def test_no_correct_answer_leaves_the_dollars_per_correct_answer_undefined():
    assert prices.per_correct(1.0, [0.0, np.nan]) is None
    assert prices.per_correct(1.0, [1.0, 0.0, 1.0]) == pytest.approx(0.5)
    assert prices.per_correct(None, [1.0]) is None


def test_a_stage_is_priced_by_its_model_else_by_its_options_name():
    p = prices.from_config(OmegaConf.create({"prices": {"usd_per_hour": 1.0},
                                             "generator": {"name": "extractive", "threshold": 0.5},
                                             "embedder": {"name": "minilm", "model": "all-MiniLM-L6-v2"}}))
    assert p is not None
    assert p.of("generator") == prices.StageModel("generator", "extractive", False)  # our code: no entry needed
    assert p.of("embedder") == prices.StageModel("embedder", "all-MiniLM-L6-v2", True)  # needs prices.models.<it>
    assert p.of("judge") is None


def test_an_unused_embedder_needs_no_price():
    p = table(models={k: v for k, v in TABLE["models"].items() if k != "emb"})
    c = score(run(requested=0), p)["cost"]
    assert "usd_embedder" not in c and "usd_per_question" in c


def test_judgements_from_the_judge_cache_are_said_to_make_the_judge_share_a_lower_bound():
    r = run()
    cached = replace(r.questions[1], judge=JudgeResult(scores={"faithfulness": 1.0}, calls=0))
    m = score(replace(r, questions=(r.questions[0], cached, *r.questions[2:])), table())
    assert m["cost"]["usd_judge"] == pytest.approx(0.0014 / 4)  # the two calls made in this run
    assert any("1 judgement(s) came from the judge cache" in w and "lower bound" in w for w in m["warnings"])
    assert score(run(), table())["warnings"] == []  # not judged at all (q1, q3): nothing to say


def test_an_external_systems_run_prices_only_the_judge_and_says_the_rest_is_unpriced():
    external = replace(run(), latency="system")
    m = score(external, table())
    c = m["cost"]
    assert c["usd_judge"] == pytest.approx(0.0014 / 4)
    assert not any(k in c for k in ("usd_generator", "usd_retrieval", "usd_embedder", "usd_per_question"))
    assert "external system" in c["unpriced"] and any("external system" in w for w in m["warnings"])
