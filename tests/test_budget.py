"""Budgets (rag_bench/budget.py, docs/search.md "Budgets"): the counting rule on its own,
then ``search.max_llm_calls`` / ``search.budget_s`` through the real CLI -- the openai generator
against a local fake OpenAI-compatible endpoint (tests/servers.py), so every call is an HTTP request
the test counts."""

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
from rag_bench.budget import Budget, BudgetReached
from tests.conftest import TINY
from tests.servers import JsonEndpoint, good_reply, serving

REPO = Path(__file__).resolve().parents[2]
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
    assert "budget_s=10" in b.reached


def test_without_a_budget_nothing_is_counted():
    budget.stop()
    budget.spend_llm_calls(10 ** 9)
    budget.before_cell()
    assert budget.start(None, None) is None


class Chat(JsonEndpoint):
    def answer(self, body: Any) -> tuple[int, bytes]:
        return 200, json.dumps(good_reply(self.path, body)).encode()


def run(out: Path, cache: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("MLFLOW_TRACKING_URI", "RAG_BENCH_FAILPOINT")}
    env["RAG_BENCH_CACHE"] = str(cache)
    return subprocess.run([sys.executable, "-m", "rag_bench.cli", "run", "-m", f"dataset.path={TINY}", *GRID,
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
            done = run(tmp_path / "out", tmp_path / "cache", *gen, f"search.max_llm_calls={limit}")
            invocations += 1
            assert done.returncode == 0, done.stderr[-3000:]
            made = len(server.requests) - seen
            seen = len(server.requests)
            assert made <= limit, f"{made} calls past search.max_llm_calls={limit}"
            now = done_cells(exp)
            assert all(now[c] == t for c, t in kept.items()), "a finished cell was recomputed"
            (log,) = (exp / ".hydra").glob("budget-*.jsonl")  # one line per invocation of the same sweep
            lines = [json.loads(line) for line in log.read_text().splitlines()]
            assert len(lines) == invocations and lines[-1]["llm_calls"] == made  # the counter is what the server saw
            if len(now) == 3:
                assert "budget not reached" in done.stdout or "0 left" in done.stdout, done.stdout
                break
            assert "budget reached (search.max_llm_calls=" in done.stdout, done.stdout
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
    done = run(tmp_path / "out", tmp_path / "cache", "search.budget_s=0")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "budget reached (search.budget_s=0" in done.stdout and "0 cells finished, 3 left" in done.stdout
    assert not list((tmp_path / "out").glob("**/DONE"))
    again = run(tmp_path / "out", tmp_path / "cache")  # no budget: the same grid runs to completion
    assert again.returncode == 0, again.stderr[-3000:]
    assert len(list((tmp_path / "out" / "b").glob("*/DONE"))) == 3


@pytest.mark.slow
def test_a_budget_with_halving_is_refused_with_the_fix(tmp_path):
    done = run(tmp_path / "out", tmp_path / "cache", "search.mode=halving", "search.max_llm_calls=5")
    assert done.returncode == 2, done.stderr[-3000:]
    assert "search.mode=grid only" in done.stderr and "fix:" in done.stderr
