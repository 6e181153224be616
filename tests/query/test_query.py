"""The query stage (issue 53 items 3, 4, 6): transforms without a model, the model-written ones
against a fake OpenAI-compatible endpoint (prompts from their files, cache keys, retries, the
budget, fallbacks counted), the rankings' shared-work key, the measures and the failure label,
and ``--plan`` counting the transform's calls exactly."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from rag_bench import budget
from rag_bench.budget import BudgetReached
from rag_bench.cli import main as cli
from rag_bench.data.loader import load_dataset
from rag_bench.domain import Question, Ranking, Turn
from rag_bench.errors import ConfigError
from rag_bench.evaluation.grade import Graded
from rag_bench.evaluation.run import QuestionRun
from rag_bench.evaluation.scorers import query as measures
from rag_bench.generation.base import GenerationCache, cache_key, generator_identity
from rag_bench.generation.extractive import ExtractiveGenerator
from rag_bench.generation.openai_compat import OpenAICompatibleGenerator
from rag_bench.memo import SharedWork
from rag_bench.pipeline import pipeline
from rag_bench.query.base import Transformed
from rag_bench.query.decompose import DecomposeTransform
from rag_bench.query.history import HistoryTransform
from rag_bench.query.hyde import HydeTransform
from rag_bench.query.llm import instructions
from rag_bench.query.multi_query import MultiQueryTransform
from rag_bench.query.rewrite import RewriteTransform
from rag_bench.query.step_back import StepBackTransform
from rag_bench.runner.config import build_cell, cell_id
from tests.conftest import TINY, compose_config
from tests.servers import JsonEndpoint, serving

TALK = (Turn("user", "My Kettleby D5 dishwasher shows E21."), Turn("assistant", "E21 means a drain fault."),
        Turn("user", "I cleaned the filter."))
FOLLOW_UP = Question("f1", "How do I reset it?", True, history=TALK, standalone="How do I reset the Kettleby D5 dishwasher?")
FIRST = Question("f2", "What does error E21 mean?", True)
# What the fake model writes, by the transform its instructions name.
REPLIES = {"rewrite": "How do I reset the Kettleby D5 dishwasher after an E21 error?",
           "hyde": "To reset the Kettleby D5, hold Start for three seconds. E21 clears after the drain is cleaned.",
           "multi_query": "1. reset Kettleby D5 dishwasher\n2. - Kettleby D5 E21 reset\nclear E21 error D5",
           "decompose": "What is E21 on the Kettleby D5?\nHow is the D5 reset?",
           "step_back": "How does the Kettleby D5 dishwasher handle drain faults?"}


class Model(JsonEndpoint):
    """A chat endpoint writing :data:`REPLIES` under the answer contract; ``server.broken``: the
    replies it sends as they are (not JSON), ``server.status``: the HTTP status it fails with."""

    def answer(self, body: Any) -> tuple[int, bytes]:
        if self.server.status != 200:  # type: ignore[attr-defined]
            return self.server.status, b'{"error": "down"}'  # type: ignore[attr-defined]
        last = body["messages"][0]["content"].splitlines()[-1]
        kind = next((k for k in REPLIES if instructions(k).splitlines()[-1] == last), None)
        reply = REPLIES[kind] if kind else "As the sources say [1]."  # the generator's answers
        content = "not json at all" if self.server.broken else json.dumps(  # type: ignore[attr-defined]
            {"answer": reply, "sources": [] if kind else [1], "clarify": ""})
        return 200, json.dumps({"choices": [{"message": {"content": content}}],
                                "usage": {"prompt_tokens": 50, "completion_tokens": 9}}).encode()


@pytest.fixture
def model(tmp_path, monkeypatch):
    monkeypatch.setenv("RAG_BENCH_CACHE", str(tmp_path / "cache"))
    with serving(Model, broken=False, status=200) as server:
        yield server


def client(server: Any) -> OpenAICompatibleGenerator:
    return OpenAICompatibleGenerator(base_url=f"http://127.0.0.1:{server.server_port}/v1", backoff_s=0.01,
                                     max_retries=1, concurrency=1)


def test_history_searches_the_question_with_the_user_turns_before_it():
    (follow, first) = HistoryTransform(turns=1).transform([FOLLOW_UP, FIRST])
    assert follow.queries == ("I cleaned the filter.\nHow do I reset it?",) and follow.calls == 0
    assert first == Transformed(("What does error E21 mean?",))  # no history: the question as it is
    (both,) = HistoryTransform(turns=5).transform([FOLLOW_UP])
    assert both.queries[0].splitlines() == ["My Kettleby D5 dishwasher shows E21.", "I cleaned the filter.",
                                            "How do I reset it?"]  # user turns only, oldest first
    with pytest.raises(ConfigError, match="query.turns"):
        HistoryTransform(turns=0)


def test_a_rewrite_reads_its_prompt_file_and_the_conversation_and_is_cached(model):
    gen = client(model)
    rewrite = RewriteTransform(gen, history_turns=2)
    (got, alone) = rewrite.transform([FOLLOW_UP, FIRST])
    assert got.queries == (REPLIES["rewrite"],) and got.fallback is None and got.output == REPLIES["rewrite"]
    assert (got.calls, got.tokens_in, got.tokens_out, got.cached) == (1, 50, 9, False)
    first, second = model.requests
    assert first["messages"][0] == {"role": "system", "content": instructions("rewrite")}
    user = first["messages"][1]["content"]
    # the last two turns only, then the question; the single-turn question has no conversation
    assert user.startswith("Conversation so far:\nassistant: E21 means a drain fault.\nuser: I cleaned the filter.\n\n"
                           "Question: How do I reset it?")
    assert "My Kettleby" not in user and "Conversation" not in second["messages"][1]["content"]
    # the cache key is the generator's own (identity + prompt): asked again, nothing is sent
    keys = [cache_key(generator_identity(gen), rewrite.prompt(q)) for q in (FOLLOW_UP, FIRST)]
    cache = GenerationCache(Path(os.environ["RAG_BENCH_CACHE"]) / "generations.sqlite")
    assert set(cache.get_bytes(keys)) == set(keys)
    (again, _) = RewriteTransform(gen, history_turns=2).transform([FOLLOW_UP, FIRST])
    assert len(model.requests) == 2 and again.cached and again.queries == got.queries and again.calls == 1
    # another window is another prompt: asked anew
    RewriteTransform(gen, history_turns=1).transform([FOLLOW_UP])
    assert len(model.requests) == 3


def test_each_transform_searches_what_it_wrote(model):
    gen = client(model)
    q = [FOLLOW_UP]
    (hyde,) = HydeTransform(gen).transform(q)
    assert hyde.queries == (FOLLOW_UP.question, REPLIES["hyde"])
    (alone,) = HydeTransform(gen, with_question=False).transform(q)
    assert alone.queries == (REPLIES["hyde"],)
    (multi,) = MultiQueryTransform(gen, n=2).transform(q)  # numbering and bullets removed, at most n
    assert multi.queries == (FOLLOW_UP.question, "reset Kettleby D5 dishwasher", "Kettleby D5 E21 reset")
    assert "2 different search queries" in model.requests[-1]["messages"][0]["content"]
    (parts,) = DecomposeTransform(gen).transform(q)
    assert parts.queries == (FOLLOW_UP.question, "What is E21 on the Kettleby D5?", "How is the D5 reset?")
    (back,) = StepBackTransform(gen).transform(q)
    assert back.queries == (FOLLOW_UP.question, REPLIES["step_back"])


def test_a_reply_that_does_not_parse_or_a_failed_call_falls_back_and_says_why(model):
    model.broken = True
    (got,) = RewriteTransform(client(model)).transform([FOLLOW_UP])
    assert got.queries == (FOLLOW_UP.question,) and got.fallback.startswith("the reply does not parse: not JSON")
    assert got.output == "not json at all" and got.calls == 1
    model.broken, model.status = False, 503
    (failed,) = RewriteTransform(client(model)).transform([FIRST])
    assert failed.queries == (FIRST.question,) and failed.fallback.startswith("the model call failed")
    assert len(model.requests) == 1 + 2  # the failed call retried once (max_retries=1), never cached
    model.status = 200
    (later,) = RewriteTransform(client(model)).transform([FIRST])
    assert later.fallback is None and len(model.requests) == 4


def test_the_transforms_calls_count_against_the_budget(model):
    budget.start(1, None)
    try:
        with pytest.raises(BudgetReached):
            RewriteTransform(client(model)).transform([FOLLOW_UP, FIRST])  # 2 calls > 1: none is made
        assert model.requests == []
        budget.start(2, None)
        RewriteTransform(client(model)).transform([FOLLOW_UP, FIRST])
        assert budget.current().llm_calls == 2 and len(model.requests) == 2
    finally:
        budget.stop()


def test_a_model_written_transform_without_a_model_is_refused(tmp_path, capsys):
    with pytest.raises(ConfigError, match="fix: generator=xllamacpp"):
        RewriteTransform(ExtractiveGenerator())
    out = tmp_path / "out"
    code = cli(["run", f"dataset.path={TINY}", "query=hyde", "generator=none", f"output.root={out}",
                "tracking=none"])
    err = capsys.readouterr().err
    assert code == 2 and "query=hyde is written by a model" in err and "generator=none" in err
    assert not out.exists() or not list(out.rglob("metrics.json"))


def test_cells_with_one_transform_share_rankings_and_never_with_another():
    dataset = load_dataset(TINY)
    work = SharedWork()

    def key(*overrides: str) -> str | None:
        cfg = compose_config(["tracking=none", f"dataset.path={TINY}", "generator=none", *overrides])
        return pipeline.run(build_cell(cfg, work), dataset, work).ranking_key

    none, history = key("query=none"), key("query=history")
    assert none != history and history != key("query=history", "query.turns=3")
    assert key("query=history", "pipeline.k=3") == history and key("pipeline.k=3") == none
    # none is no group in the cell id: the cells of before keep their ids
    plain = compose_config(["tracking=none", f"dataset.path={TINY}"])
    assert cell_id(plain, "f") == cell_id(compose_config(["tracking=none", f"dataset.path={TINY}", "query=none"]), "f")
    assert cell_id(plain, "f") != cell_id(compose_config(["tracking=none", f"dataset.path={TINY}", "query=history"]), "f")


def _graded(relevant: dict[int, int], first: int | None) -> Graded:
    return Graded(np.zeros(0), float(len(relevant)), [], relevant, np.ones(1, bool), True, first)


def test_lift_kept_terms_gold_overlap_and_the_failure_label():
    from rag_bench.evaluation.scorers.attribution import CellView, lost_before_generation
    from tests.evaluation.test_failure_order import CHUNKS

    q = Question("q", "Is error E21 on the Kettleby D5 covered?", True, standalone="Is E21 covered for the D5?")
    transformed = Ranking("q", (3, 4, 0), (3.0, 2.0, 1.0))  # relevant passage 0 at rank 3
    plain = Ranking("q", (0, 3, 4), (3.0, 2.0, 1.0))  # at rank 1
    t = Transformed(("Is the dishwasher covered?",), "Is the dishwasher covered?")
    qr = QuestionRun(q, transformed, transformed, query=t, untransformed=plain)
    g = _graded({0: 1}, 3)
    assert measures.query_lost(qr, g, 2, 1) and not measures.query_lost(qr, g, 3, 1)
    assert lost_before_generation("ranking", qr, g, CellView(CHUNKS, {}, 2)) == "query"
    assert lost_before_generation("ranking", QuestionRun(q, transformed, transformed), g, CellView(CHUNKS, {}, 2)) == "ranking"
    # the gold standalone form finds it too: still the transform's loss
    gold = QuestionRun(q, transformed, transformed, query=t, untransformed=transformed, standalone_ranking=plain)
    assert measures.query_lost(gold, g, 2, 1)
    assert measures.kept(q.question, t.queries) == 0.0  # E21, Kettleby, D5 all dropped
    assert measures.kept(q.question, ("Kettleby D5 E21",)) == 1.0
    assert measures.recall(q.standalone, ("E21 covered",)) == pytest.approx(2 / 3)  # e21, cover of e21, cover, d5


def test_a_run_through_the_cli_records_the_transform_and_plans_its_calls_exactly(model, tmp_path, capsys):
    url = f"http://127.0.0.1:{model.server_port}/v1"
    common = [f"dataset.path={TINY}", "generator=openai", f"generator.base_url={url}", "generator.concurrency=1",
              "generator.model=example-api-llm",
              "tracking=none", f"output.root={tmp_path / 'out'}", "experiment.name=q"]
    questions = len(load_dataset(TINY).questions)
    assert cli(["run", "-m", "query=multi_query,rewrite", *common, "--plan"]) == 0
    plan = capsys.readouterr().out
    assert model.requests == []  # a plan sends nothing
    rows = {r.split()[1]: r.split()[2:4] for r in plan.splitlines() if r.startswith("    openai:example-api-llm (query=")}
    assert rows == {"(query=multi_query)": [str(questions), "0"], "(query=rewrite)": [str(questions), "0"]}, plan
    assert cli(["run", "-m", "query=multi_query", *common, "+prices=example"]) == 0
    transform_calls = [r for r in model.requests if r["messages"][0]["content"] == instructions("multi_query")
                       .format(n=3)]
    assert len(transform_calls) == questions  # one per question, as planned
    (folder,) = [p.parent for p in (tmp_path / "out" / "q").glob("*/DONE")]
    records = pd.read_parquet(folder / "records.parquet")
    assert [list(x) for x in records["query_texts"]][0][1:] == ["reset Kettleby D5 dishwasher", "Kettleby D5 E21 reset",
                                                                 "clear E21 error D5"]
    assert set(records["query_output"]) == {REPLIES["multi_query"]} and records["query_fallback"].isna().all()
    metrics = json.loads((folder / "metrics.json").read_text())
    assert metrics["query"]["fan_out"] == 4.0 and metrics["query"]["calls"] == 1.0
    assert metrics["query"]["fallback_rate"] == 0.0 and "lift@5" in metrics["query"]
    assert metrics["measures"]["query/kept_terms"]["params"] == {"rare_df": "0.05"}
    assert "query" in metrics["failures"]
    # priced as the generator is: the transform's tokens (50 in, 9 out per question) at its prices
    assert metrics["cost"]["usd_query"] == pytest.approx((50 * 0.5 + 9 * 1.5) / 1e6)
    # the drill-down shows what the transform wrote and the texts searched, the leaderboard names the axis
    from rag_bench.cells import load_cell
    from rag_bench.naming import labels
    from rag_bench.reporting import drill

    cell = load_cell(folder)
    row = drill.cell_rows(cell, drill.Passages(), drill.Corpus())[0]
    assert row["query"]["name"] == "multi_query" and row["query"]["output"] == REPLIES["multi_query"]
    assert row["query"]["texts"][1:] == ["reset Kettleby D5 dishwasher", "Kettleby D5 E21 reset", "clear E21 error D5"]
    assert row["query"]["fallback"] is None
    # beside each text, what it retrieved on its own: its first relevant rank and its top k
    assert len(row["query"]["first_relevant"]) == len(row["query"]["top"]) == 4
    assert all(1 <= len(top) <= 5 and all("#" in c for c in top) for top in row["query"]["top"])
    assert records["query_text_first_relevant"].map(len).tolist() == [4] * questions
    assert labels([cell.config, {**cell.config, "query": {"name": "none"}}]) == ["q=multi_query", "q=none"]
    capsys.readouterr()
    assert cli(["leaderboard", str(tmp_path / "out" / "q"), "--format", "csv"]) == 0
    board = pd.read_csv(__import__("io").StringIO(capsys.readouterr().out))
    assert list(board["query"]) == ["multi_query"]
    # planned again, the run's transform prompts are found in the cache under the keys the plan computes
    assert cli(["run", "-m", "query=multi_query", *common[:-1], "experiment.name=other", "--plan"]) == 0
    plan = capsys.readouterr().out
    rows = {r.split()[1]: r.split()[2:4] for r in plan.splitlines() if r.startswith("    openai:example-api-llm (query=")}
    assert rows == {"(query=multi_query)": ["0", str(questions)]}, plan


def test_a_teams_own_transform_plugs_in_by_target(tmp_path):
    """A plugin returning plain lists of strings (the question and its first word): two texts
    searched per question, fused; its source is in the cell id (a plugin edited makes new cells)."""
    out = tmp_path / "out"
    assert cli(["run", "hydra.searchpath=[pkg://tests.bad_inputs.hostile_plugins.conf]", f"dataset.path={TINY}",
                "query=hostile", "generator=none", f"output.root={out}", "tracking=none", "experiment.name=own"]) == 0
    (done,) = (out / "own").glob("*/DONE")
    metrics = json.loads((done.parent / "metrics.json").read_text())
    assert metrics["query"]["fan_out"] == 2.0 and metrics["query"]["calls"] == 0.0
    records = pd.read_parquet(done.parent / "records.parquet")
    assert all(list(t) == [q, q.split()[0]] for t, q in zip(records["query_texts"], records["question"]))


def test_what_the_transform_made_travels_with_the_question_runs():
    """A halving round's question runs (question-runs.jsonl) keep the transform's output and the
    untransformed ranking."""
    from rag_bench.evaluation import run_io

    r = Ranking("f1", (1, 2), (0.5, 0.1))
    qr = QuestionRun(FOLLOW_UP, r, r, query=Transformed(("a", "b"), "a\nb", None, 1, 0.5, 3, 4, True), untransformed=r)
    assert run_io.loads(run_io.dumps([qr])) == (qr,)
