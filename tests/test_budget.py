"""Budgets (rag_bench/budget.py, docs/search.md "Budgets"): the counting rule on its own,
then ``budget.max_llm_calls`` / ``budget.usd`` / ``budget.seconds`` through the real CLI -- the
openai generator (and the ragas judge) against a local fake OpenAI-compatible endpoint
(tests/servers.py), so every call is an HTTP request the test counts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from rag_bench import budget
from rag_bench.budget import Budget, BudgetReached, Hold
from rag_bench.evaluation import prices
from tests.conftest import REPO, TINY
from tests.servers import JsonEndpoint, good_reply, serving

GRID = ["chunker=section", "retriever=bm25", "pipeline.k=1,2,3"]


def test_calls_that_do_not_all_fit_are_not_made():
    b = Budget(max_llm_calls=5)
    b.spend_llm_calls(3)
    with pytest.raises(BudgetReached):
        b.spend_llm_calls(3)  # 6 > 5: none of the three is counted (none is made)
    assert b.llm_calls == 3 and "max_llm_calls=5" in b.reached
    with pytest.raises(BudgetReached):
        b.spend_llm_calls(1)  # reached: nothing more, even what would fit
    with pytest.raises(BudgetReached):
        b.before_cell()


def test_exactly_the_budget_fits():
    b = Budget(max_llm_calls=4)
    b.spend_llm_calls(4)
    b.before_cell()
    assert b.llm_calls == 4 and b.reached is None


def test_seconds_stop_only_new_cells():
    b = Budget(budget_s=10.0, started=time.monotonic() - 11.0)  # started 11 s ago
    b.spend_llm_calls(7)  # no call limit: a running cell finishes
    with pytest.raises(BudgetReached):
        b.before_cell()
    assert "budget.seconds=10" in b.reached


def test_without_a_budget_nothing_is_counted():
    budget.stop()
    budget.spend_llm_calls(10 ** 9)
    budget.before_cell()
    assert budget.hold("generator", 5) is None


def test_without_a_limit_the_invocation_only_counts():
    b = budget.start(None, None)
    try:
        assert not b.limited
        budget.spend_llm_calls(10 ** 9)  # no limit: never refused, counted for the invocation's record
        held = budget.hold("judge", 2)
        budget.charge(held, 3, 10, 2, 0.5)  # the judge made 3 calls (one counted after its batch)
        budget.before_cell()
        assert b.llm_calls == 10 ** 9 + 3 and b.judge_calls == 3 and b.reached is None
        assert b.unpriced == ["judge"] and b.summary()["usd"] is None  # no price table: unpriced, never $0
    finally:
        budget.stop()


def test_a_dollar_batch_that_may_not_fit_is_refused_whole():
    b = Budget(budget_usd=1.0)
    first = b.hold("generator", 3, 0.6)  # bounded at $0.60: fits
    b.charge(first, 3, 0.25)  # the replies' real cost replaces the bound
    assert b.usd == pytest.approx(0.25) and b.llm_calls == 3
    b.hold("generator", 2, 0.75)  # 0.25 + 0.75 = 1.00: exactly the budget fits
    with pytest.raises(BudgetReached):
        b.hold("generator", 1, 1e-9)  # nothing more
    assert b.usd == pytest.approx(1.0) and "budget.usd=1" in b.reached


def test_a_batch_bounded_past_the_budget_makes_no_call():
    b = Budget(budget_usd=1.0)
    b.charge(b.hold("generator", 4, 0.5), 4, 0.5)
    with pytest.raises(BudgetReached):
        b.hold("generator", 4, 0.51)  # 0.5 + 0.51 > 1: none of the four is made
    assert b.llm_calls == 4 and b.usd == pytest.approx(0.5)
    assert "may cost up to $0.510000" in b.reached and "more than the whole budget" not in b.reached


def test_a_cell_past_the_whole_budget_says_no_rerun_can_finish_it():
    b = Budget(budget_usd=0.3)
    with pytest.raises(BudgetReached):
        b.hold("generator", 208, 0.438686)
    assert "no re-run with it can finish that cell -- fix: budget.usd=0.44 or more" in b.reached
    calls = Budget(max_llm_calls=100)
    with pytest.raises(BudgetReached):
        calls.hold("generator", 208)
    assert "fix: budget.max_llm_calls=208 or more" in calls.reached


def test_what_cannot_be_bounded_is_charged_after_and_stops_the_sweep():
    b = Budget(budget_usd=1.0, max_llm_calls=10)
    held = b.hold("judge", 2)  # two calls known before; money unknown (ragas writes the prompts)
    assert held == Hold("judge", 2, None)
    b.charge(held, 5, 1.2)  # 5 calls made, $1.20: past both, after the fact
    assert b.llm_calls == 5 and b.judge_calls == 5 and b.usd == pytest.approx(1.2)
    assert "budget.usd=1" in b.reached
    with pytest.raises(BudgetReached):
        b.before_cell()


def test_the_budget_charges_the_cost_scorers_prices():
    table = prices.Prices(0.36, (("api", prices.ModelPrice(2.0, 8.0)), ("local", prices.ModelPrice())),
                          (prices.StageModel("generator", "api", True), prices.StageModel("judge", "local", True)))
    gen, missing = prices.rate(table, "generator")
    assert missing is None and gen is not None and gen.by_tokens
    assert gen.usd(1000, 100, 99.0) == pytest.approx((1000 * 2.0 + 100 * 8.0) / 1e6)  # tokens, not seconds
    judge, _ = prices.rate(table, "judge")
    assert judge is not None and not judge.by_tokens and judge.usd(0, 0, 10.0) == pytest.approx(0.001)  # 10 s at $0.36/h


@pytest.mark.parametrize(("models", "hourly", "key"), [
    ((), None, "prices.models.mystery"),
    ((("mystery", prices.ModelPrice(usd_per_1m_input_tokens=1.0)),), None, "prices.models.mystery.usd_per_1m_output_tokens"),
    ((("mystery", prices.ModelPrice()),), None, "prices.usd_per_hour (or prices.models.mystery.usd_per_hour)"),
])
def test_an_unpriced_model_names_the_key_to_set(models, hourly, key):
    table = prices.Prices(hourly, models, (prices.StageModel("generator", "mystery", True),))
    got, missing = prices.rate(table, "generator")
    assert got is None and missing is not None and "'mystery'" in missing and f"fix: set {key}" in missing


def test_a_prompts_bound_is_its_requests_bytes():
    messages = [{"role": "system", "content": "Answer."}, {"role": "user", "content": "Qu'est-ce que c'est ?"}]
    # every message's content bytes, plus its JSON framing (more than a chat template's role tokens)
    assert budget.request_bytes(messages) >= sum(len(m["content"].encode()) + 30 for m in messages)


class Chat(JsonEndpoint):
    def answer(self, body: Any) -> tuple[int, bytes]:
        return 200, json.dumps(good_reply(self.path, body)).encode()


def run(out: Path, cache: Path, *extra: str, grid: list[str] = GRID) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("MLFLOW_TRACKING_URI", "RAG_BENCH_FAILPOINT")}
    env["RAG_BENCH_CACHE"] = str(cache)
    return subprocess.run([sys.executable, "-m", "rag_bench.cli", "run", "-m", f"dataset.path={TINY}", *grid,
                           "tracking=none", f"output.root={out}", "experiment.name=b", *extra], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600)


def done_cells(exp: Path) -> dict[str, float]:
    return {p.parent.name: (p.parent / "metrics.json").stat().st_mtime_ns for p in exp.glob("*/DONE")}


@pytest.mark.slow
def test_max_llm_calls_stops_between_cells_and_the_same_command_resumes(tmp_path):
    with serving(Chat) as server:
        url = f"http://127.0.0.1:{server.server_port}/v1"
        gen = ["generator=openai", f"generator.base_url={url}", "generator.concurrency=1"]
        questions = sum(1 for line in (TINY / "questions.jsonl").read_text().splitlines() if line.strip())
        limit = questions + questions // 2  # one cell's calls fit, two do not
        exp, seen, invocations = tmp_path / "out" / "b", 0, 0
        kept: dict[str, float] = {}
        while invocations < 4:
            done = run(tmp_path / "out", tmp_path / "cache", *gen, f"budget.max_llm_calls={limit}")
            invocations += 1
            assert done.returncode == 0, done.stderr[-3000:]
            made = len(server.requests) - seen
            seen = len(server.requests)
            assert made <= limit, f"{made} calls past budget.max_llm_calls={limit}"
            now = done_cells(exp)
            assert all(now[c] == t for c, t in kept.items()), "a finished cell was recomputed"
            (log,) = (exp / ".hydra").glob("budget-*.jsonl")  # one line per invocation of the same sweep
            lines = [json.loads(line) for line in log.read_text().splitlines()]
            assert len(lines) == invocations and lines[-1]["llm_calls"] == made  # the counter is what the server saw
            if len(now) == 3:
                assert "budget not reached" in done.stdout or "0 left" in done.stdout, done.stdout
                break
            assert "budget reached (budget.max_llm_calls=" in done.stdout, done.stdout
            assert "left: " in done.stdout and "re-run the same command" in done.stdout
            assert len(now) > len(kept), "no progress"
            # the stopped cell holds no DONE (it is recomputed later), and nothing half-written is read
            kept = now
        assert len(done_cells(exp)) == 3
        assert invocations >= 2  # the budget did stop the first run
        prompts = [json.dumps(r["messages"], sort_keys=True) for r in server.requests]
        assert len(prompts) == len(set(prompts)), "a prompt was sent twice: work lost to the budget"


@pytest.mark.slow
def test_budget_s_zero_starts_no_cell_and_exits_0(tmp_path):
    done = run(tmp_path / "out", tmp_path / "cache", "budget.seconds=0")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "budget reached (budget.seconds=0" in done.stdout and "0 cells finished, 3 left" in done.stdout
    assert not list((tmp_path / "out").glob("**/DONE"))
    again = run(tmp_path / "out", tmp_path / "cache")  # no budget: the same grid runs to completion
    assert again.returncode == 0, again.stderr[-3000:]
    assert len(list((tmp_path / "out" / "b").glob("*/DONE"))) == 3


@pytest.mark.parametrize("limit", ["budget.usd=nan", "budget.seconds=nan", "search.budget_s=nan", "budget.usd=inf",
                                   "budget.seconds=-1"])
def test_a_budget_of_nan_or_inf_is_refused_before_anything_is_written(tmp_path, limit):
    """nan compares false with everything: a "< 0" check let budget.usd=nan through as no cap at all."""
    done = run(tmp_path / "out", tmp_path / "cache", limit)
    assert done.returncode == 2, done.stderr[-3000:]
    assert "each must be a number >= 0" in done.stderr and "fix: budget.max_llm_calls=<calls>" in done.stderr
    assert not list((tmp_path / "out").rglob("progress-*.log")) and not list((tmp_path / "out").rglob("DONE"))
    assert not list((tmp_path / "out").rglob("sweep-*.json"))


@pytest.mark.slow
def test_a_budget_with_halving_is_refused_with_the_fix(tmp_path):
    done = run(tmp_path / "out", tmp_path / "cache", "search=halving", "budget.max_llm_calls=5")
    assert done.returncode == 2, done.stderr[-3000:]
    assert "apply to search=grid only" in done.stderr and "fix:" in done.stderr
    # refused before the sweep wrote anything: no progress file, no sweep context left behind
    assert not list((tmp_path / "out").rglob("progress-*.log")) and not list((tmp_path / "out").rglob("sweep-*.json"))


# conf/prices/example.yaml's made-up API model: $0.50 per 1M input tokens, $1.50 per 1M output tokens
PRICED = ["+prices=example", "generator.model=example-api-llm"]
USD_IN, USD_OUT = 0.50, 1.50


class Spender(JsonEndpoint):
    """An endpoint that spends all a request allows: it reports the request's message bytes as its
    prompt tokens and ``max_tokens`` completion tokens (the worst case the budget's bound admits)."""

    def answer(self, body: Any) -> tuple[int, bytes]:
        reply = good_reply(self.path, body)
        reply["usage"] = {"prompt_tokens": sum(len(m["content"].encode()) for m in body["messages"]),
                          "completion_tokens": body["max_tokens"]}
        return 200, json.dumps(reply).encode()


def usd(request: dict[str, Any]) -> float:
    """What one request cost, by hand from the price table and the tokens the endpoint reported."""
    tokens_in = sum(len(m["content"].encode()) for m in request["messages"])
    return (tokens_in * USD_IN + request["max_tokens"] * USD_OUT) / 1e6


@pytest.mark.slow
def test_budget_usd_stops_within_the_budget_and_the_same_command_resumes(tmp_path):
    questions = sum(1 for line in (TINY / "questions.jsonl").read_text().splitlines() if line.strip())
    max_tokens = 20000  # each call may cost $0.03 in output: a cell's bound ~ questions x $0.03
    limit = round(questions * max_tokens * USD_OUT / 1e6 * 1.5, 6)  # one cell fits, two do not
    with serving(Spender) as server:
        url = f"http://127.0.0.1:{server.server_port}/v1"
        gen = ["generator=openai", f"generator.base_url={url}", "generator.concurrency=1",
               f"generator.max_tokens={max_tokens}", *PRICED]
        exp, seen, invocations = tmp_path / "out" / "b", 0, 0
        kept: dict[str, float] = {}
        while invocations < 5:
            done = run(tmp_path / "out", tmp_path / "cache", *gen, f"budget.usd={limit}")
            invocations += 1
            assert done.returncode == 0, done.stderr[-3000:]
            made, seen = server.requests[seen:], len(server.requests)
            spent = sum(usd(r) for r in made)
            assert spent <= limit, f"${spent} spent past budget.usd={limit}"
            (log,) = (exp / ".hydra").glob("budget-*.jsonl")
            line = json.loads(log.read_text().splitlines()[-1])
            assert line["llm_calls"] == len(made) and line["usd"] == pytest.approx(spent, abs=1e-9)
            assert line["budget_usd"] == limit and line["unpriced"] == []
            now = done_cells(exp)
            assert all(now[c] == t for c, t in kept.items()), "a finished cell was recomputed"
            if len(now) == 3:
                assert "budget not reached" in done.stdout, done.stdout
                break
            # the next cell's batch was refused whole: what was spent + its bound is past the budget
            assert f"budget reached (budget.usd={limit:g}: ${spent:.6f} spent, the next cell's {questions} " \
                   "generator calls may cost up to $" in done.stdout, done.stdout
            bound = float(done.stdout.split("may cost up to $")[1].split(")")[0])
            assert spent + bound > limit and bound >= questions * max_tokens * USD_OUT / 1e6
            assert len(now) == len(kept) + 1, "one cell's calls fit, two do not"
            kept = now
        assert len(done_cells(exp)) == 3 and invocations == 3
        prompts = [json.dumps(r["messages"], sort_keys=True) for r in server.requests]
        assert len(prompts) == len(set(prompts)) == 3 * questions, "a prompt was sent twice: work lost to the budget"


@pytest.mark.slow
@pytest.mark.parametrize(("extra", "key"), [
    (["+prices=example", "generator.model=mystery-llm"], "prices.models.mystery-llm"),
    (["generator.model=example-api-llm"], "+prices=example"),  # no price table at all
])
def test_an_unpriced_model_under_budget_usd_exits_2_before_any_cell(tmp_path, extra, key):
    done = run(tmp_path / "out", tmp_path / "cache", "generator=openai", "generator.base_url=http://127.0.0.1:9/v1",
               *extra, "budget.usd=1")
    assert done.returncode == 2, done.stderr[-3000:]
    model = extra[-1].split("=")[1]
    assert f"generator model {model!r} has no price" in done.stderr and "fix: " in done.stderr and key in done.stderr
    assert not list((tmp_path / "out").glob("**/metrics.json"))  # no cell ran


ANSWER = json.dumps({"answer": "Rollo led the Normans into Normandy. The treaty was signed in the year 911.",
                     "sources": []})


class ChatAndJudge(JsonEndpoint):
    """The generator's answers (two claims, no citation: the claim judge shows each claim every
    passage of the cell's context) and the claim judge's verdicts (1)."""

    def answer(self, body: Any) -> tuple[int, bytes]:
        judged = "Statement: " in body["messages"][-1]["content"]
        content = json.dumps({"verdict": 1}) if judged else ANSWER
        return 200, json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": "fake",
                                "choices": [{"index": 0, "finish_reason": "stop",
                                             "message": {"role": "assistant", "content": content}}],
                                "usage": {"prompt_tokens": 100, "completion_tokens": 10}}).encode()


def judge_requests(requests: list[dict[str, Any]]) -> int:
    return sum("Statement: " in r["messages"][-1]["content"] for r in requests)


@pytest.mark.slow
def test_the_judges_calls_count_against_max_llm_calls(tmp_path):
    pytest.importorskip("ragas.metrics.collections", reason="the judge extra installs ragas")
    questions = sum(1 for line in (TINY / "questions.jsonl").read_text().splitlines() if line.strip())
    limit = 4 * questions  # a cell: its questions' answers and their two claims judged (3 x questions)
    with serving(ChatAndJudge) as server:
        url = f"http://127.0.0.1:{server.server_port}/v1"
        gen = ["generator=openai", f"generator.base_url={url}", "generator.concurrency=1", "judge=ragas",
               f"judge.base_url={url}", "judge.metrics=[claim_faithfulness]", "judge.max_retries=0"]
        exp, seen, invocations, judged = tmp_path / "out" / "b", 0, 0, 0
        while invocations < 5:
            done = run(tmp_path / "out", tmp_path / "cache", *gen, f"budget.max_llm_calls={limit}")
            invocations += 1
            assert done.returncode == 0, done.stderr[-3000:]
            made, seen = server.requests[seen:], len(server.requests)
            assert len(made) <= limit, f"{len(made)} calls past budget.max_llm_calls={limit}"
            (log,) = (exp / ".hydra").glob("budget-*.jsonl")
            line = json.loads(log.read_text().splitlines()[-1])
            assert line["llm_calls"] == len(made) and line["judge_calls"] == judge_requests(made)
            judged += line["judge_calls"]
            if len(done_cells(exp)) == 3:
                break
            assert "budget reached (budget.max_llm_calls=" in done.stdout, done.stdout
        assert len(done_cells(exp)) == 3 and invocations >= 2
        assert judged == judge_requests(server.requests) > 0
        # the judge's calls alone would have fit: the budget stopped because they were counted
        assert len(server.requests) - judged <= limit < len(server.requests)


@pytest.mark.slow
def test_an_api_embedders_texts_are_priced_before_they_are_sent(tmp_path):
    per_text = 0.002 / 1000  # conf/prices/example.yaml: example-api-embedder, $0.002 per 1k texts
    grid = ["chunker=section", "retriever=dense", "generator=none", "pipeline.k=1,2,3"]
    with serving(Chat) as server:
        url = f"http://127.0.0.1:{server.server_port}/v1"
        emb = ["embedder=openai", f"embedder.base_url={url}", "embedder.model=example-api-embedder", "+prices=example"]
        tiny = run(tmp_path / "out", tmp_path / "cache", *emb, "budget.usd=1e-9", grid=grid)
        assert tiny.returncode == 0, tiny.stderr[-3000:]
        assert "budget reached (budget.usd=1e-09: $0.000000 spent, the next cell's embedder batch may cost " \
               "up to $" in tiny.stdout, tiny.stdout
        assert server.requests == [] and not list((tmp_path / "out").glob("**/DONE"))  # refused whole: nothing sent
        enough = run(tmp_path / "out", tmp_path / "cache", *emb, "search.budget_usd=1", grid=grid)  # the old spelling
        assert enough.returncode == 0, enough.stderr[-3000:]
        assert "note: search.budget_usd=1 is spelled budget.usd=1 now" in enough.stderr  # accepted for one release
        assert len(list((tmp_path / "out" / "b").glob("*/DONE"))) == 3
        texts = sum(len(r["input"]) for r in server.requests)  # chunks and questions, each once (one index)
        assert texts > 0
        # the two commands differ (budget.usd), so each has its own sweep id and record: the second's
        log = max((tmp_path / "out" / "b" / ".hydra").glob("budget-*.jsonl"), key=lambda p: p.stat().st_mtime_ns)
        line = json.loads(log.read_text().splitlines()[-1])
        assert line["usd"] == pytest.approx(texts * per_text, abs=1e-9) and line["llm_calls"] == 0


@pytest.mark.slow
def test_a_sweep_without_a_budget_records_its_calls_and_dollars(tmp_path):
    with serving(Chat) as server:  # 100 prompt + 10 completion tokens a call: $0.000065 at example-api-llm's prices
        gen = ["generator=openai", f"generator.base_url=http://127.0.0.1:{server.server_port}/v1", *PRICED]
        done = run(tmp_path / "out", tmp_path / "cache", *gen)
        assert done.returncode == 0, done.stderr[-3000:]
        assert "budget " not in done.stdout  # no budget: nothing to report on the terminal
        (log,) = (tmp_path / "out" / "b" / ".hydra").glob("budget-*.jsonl")
        line = json.loads(log.read_text())
        assert line["llm_calls"] == len(server.requests) > 0 and line["reached"] is None
        assert line["usd"] == pytest.approx(len(server.requests) * (100 * USD_IN + 10 * USD_OUT) / 1e6, abs=1e-9)
        warm = run(tmp_path / "out", tmp_path / "cache", *gen)  # every cell DONE: no call, no line
        assert warm.returncode == 0 and len(log.read_text().splitlines()) == 1
