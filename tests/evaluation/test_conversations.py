"""Conversation questions end to end (issue 53 items 1 and 5): a question's history reaches the
generator's prompt (within its window) and the judge, records.parquet, the drill-down, the label page
and the traces; by_tag breaks the outcomes, intervals and failures down by tag in metrics.json, the
report and the sweep's console."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pandas as pd
import pytest

from rag_bench.cli import main as cli
from rag_bench.domain import Chunk, Question, Ranking, Turn
from rag_bench.generation.base import Generation
from rag_bench.generation.prompt import HistoryWindow
from rag_bench.judging.base import JudgeResult
from rag_bench.pipeline import stages
from tests.bad_inputs.test_bad_inputs import copy_tiny, edit_questions

HISTORY = [{"role": "user", "content": "Do you sell annual plans?"},
           {"role": "assistant", "content": "Yes: annual plans cost 20% less than twelve monthly payments."}]


class _Recorder:
    """A generator (and judge) that records what it was given: a fake of our own stage's caller."""

    identity = {"generator": "recorder"}
    max_failure_rate = 0.0
    cacheable = False

    def __init__(self) -> None:
        self.items: list = []

    def generate(self, items):
        self.items += list(items)
        return [Generation('{"answer": "14 days [1].", "sources": [1], "clarify": ""}') for _ in items]

    def judge(self, samples):
        self.items += list(samples)
        return [JudgeResult({}) for _ in samples]


def test_the_prompt_and_the_judge_see_the_window_of_the_history():
    turns = tuple(Turn(t["role"], t["content"]) for t in HISTORY) * 2
    q = Question("c1", "And how long do I have to cancel one?", True, history=turns)
    chunk = Chunk("billing#0", "billing", 0, 20, "Cancel within 14 days.")
    gen, judge = _Recorder(), _Recorder()
    answered = stages.answer(generator=gen, questions=[q], rankings=[Ranking("c1", (0,), (1.0,))], passages=[chunk],
                             context=stages.ContextRule(5, 2000, history=HistoryWindow(turns=2)))
    user = gen.items[0].prompt.user
    assert user.count("Do you sell annual plans?") == 1 and "Question (the user's next turn): And how long" in user
    stages.judge(judge=judge, questions=[q], answered=answered, history=HistoryWindow(turns=2))
    assert judge.items[0].history == turns[-2:] and "Do you sell annual plans?" in judge.items[0].user_input


@pytest.fixture(scope="module")
def conversation_cell(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("conv")
    root = copy_tiny(tmp)

    def conversational(qs: list[dict]) -> None:
        for q in qs:
            q["tags"] = [*q.get("tags", []), "mt:N/A"]
        qs[0].update(history=HISTORY, tags=["mt:Follow-up"])  # q1 follows up on annual plans
        qs[5].update(history=HISTORY, tags=["mt:Follow-up"], standalone="How much cheaper is an annual plan?")

    edit_questions(root, conversational)
    out = tmp / "out"
    console = io.StringIO()
    with contextlib.redirect_stdout(console):
        assert cli(["run", "-m", f"dataset.path={root}", f"output.root={out}", "tracking=none", "experiment.name=c",
                    "generator=extractive"]) == 0
    (out / "console.txt").write_text(console.getvalue())
    (done,) = (out / "c").glob("*/DONE")
    return done.parent


def test_history_is_in_the_records_drill_down_label_page_and_traces(conversation_cell):
    from rag_bench.cells import read_cell
    from rag_bench.reporting import drill, label_page
    from rag_bench.tracking.traces import question_traces

    rec = pd.read_parquet(conversation_cell / "records.parquet").set_index("qid")
    assert [dict(t) for t in rec.loc["q1", "history"]] == HISTORY and len(rec.loc["q2", "history"]) == 0
    cell = read_cell(conversation_cell)
    shown = drill.questions([cell], drill.Corpus())
    assert shown["q1"]["history"] == [[t["role"], t["content"]] for t in HISTORY] and shown["q2"]["history"] == []
    rows = list(cell.records.index[cell.records["qid"].isin(["q1", "q2"])])
    items = {i["qid"]: i for i in label_page.items(cell, rows, {})}
    assert items["q1"]["history"][0] == ["user", "Do you sell annual plans?"] and items["q2"]["history"] == []
    traces = {t.qid: t for t in question_traces(cell.records)}
    assert list(traces["q1"].history) == HISTORY and traces["q2"].history == ()
    generate = next(s for s in traces["q1"].spans if s.name == "generate")
    assert generate.inputs["history"] == HISTORY


def test_by_tag_has_intervals_outcomes_and_failures_in_metrics_console_and_report(conversation_cell, capsys,
                                                                                tmp_path):
    tags = json.loads((conversation_cell / "metrics.json").read_text())["by_tag"]
    follow, first = tags["mt:Follow-up"], tags["mt:N/A"]
    assert follow["n"] == 2 and follow["outcomes"] == {"answer": 2, "refuse": 0, "clarify": 0}
    assert first["outcomes"]["refuse"] == 2 and sum(first["failures"].values()) == first["n"]
    for key in ("hit@5", "ndcg@10", "correct_all"):
        lo, hi = follow["ci"][key]
        assert lo <= follow[key] <= hi, key
    assert sum(follow["failures"].values()) == 2 and follow["n_by"]["hit@5"] == 2
    assert cli(["report", str(conversation_cell.parent), "--out", str(tmp_path / "reports"), "--no-mlflow"]) == 0
    page = next((tmp_path / "reports").rglob("index.html")).read_text()
    table = page.split("id='tag-outcomes'", 1)[1].split("</table>", 1)[0]
    assert "mt:Follow-up" in table and "mt:N/A" in table and "a/r/c" in table


def test_the_sweep_console_prints_the_tag_table(conversation_cell, capsys):
    from rag_bench.cells import read_cell
    from rag_bench.reporting.leaderboard import format_tags

    printed = (conversation_cell.parent.parent / "console.txt").read_text()
    assert "By question tag, best cell" in printed and max(map(len, printed.splitlines())) <= 120
    table = printed.split("By question tag", 1)[1].split("\n\n", 2)[1]
    assert any(line.startswith("mt:Follow-up") for line in table.splitlines())

    text = format_tags(read_cell(conversation_cell, records=False).metrics, width=100)
    lines = text.splitlines()
    assert lines[0].split()[:4] == ["tag", "n", "a/r/c", "hit@5"] and max(map(len, lines)) <= 100
    follow = next(line for line in lines if line.startswith("mt:Follow-up"))
    assert "2/0/0" in follow and "[" in follow
