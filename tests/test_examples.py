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

