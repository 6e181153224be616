"""The examples in examples/ run as the README says."""

from __future__ import annotations

import json

from rag_bench.cli import main as cli
from rag_bench.runner.config import DEMO_DATASET
from tests.conftest import REPO

OUTPUTS = REPO / "examples" / "app_outputs" / "kettleby_app.jsonl"


def test_the_example_outputs_file_is_scored_as_a_cell(tmp_path, capsys):
    """An application's outputs on the demo set, passages written all three ways (spans, text in a
    named document, text anywhere), with answers, citations, refusals and latencies."""
    assert cli(["evaluate", str(OUTPUTS), "--dataset", str(DEMO_DATASET), "--name", "kettleby_app", "tracking=none",
                f"output.root={tmp_path}", "experiment.name=apps"]) == 0
    (done,) = (tmp_path / "apps").glob("*/DONE")
    metrics = json.loads((done.parent / "metrics.json").read_text())
    assert metrics["counts"]["unlocated_passages"] == 0 and metrics["counts"]["passages_located_by_text"] > 200
    assert metrics["retrieval"]["hit@5"] > 0.8 and metrics["generation"]["correct"] > 0.2
    assert 200 <= metrics["latency"]["system_p50_ms"] <= 260
    capsys.readouterr()
    assert cli(["leaderboard", str(tmp_path / "apps")]) == 0 and "kettleby_app" in capsys.readouterr().out


def test_the_conversation_examples_are_valid_questions_of_the_demo_set(tmp_path, capsys):
    """examples/conversations/kettleby_followups.jsonl: follow-up turns written on the demo corpus,
    appended to a copy of the demo set as its README says; they load with their history."""
    import shutil

    from rag_bench.data.loader import load_dataset

    root = tmp_path / "kettleby"
    shutil.copytree(DEMO_DATASET, root)
    extra = (REPO / "examples" / "conversations" / "kettleby_followups.jsonl").read_text()
    with open(root / "questions.jsonl", "a") as fh:
        fh.write(extra)
    assert cli(["validate", str(root)]) == 0, capsys.readouterr().err
    conv = [q for q in load_dataset(root).questions if "conversation" in q.tags]
    assert len(conv) == 5 and all(q.history and q.history[-1].role == "assistant" for q in conv)
    assert {q.outcome for q in conv} == {"answer", "refuse", "clarify"}
    assert [q.clarify_facts for q in conv if q.outcome == "clarify"] == [()]  # clarify without facts (issue 53)
