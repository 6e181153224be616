"""rag_bench.api: the public Python interface the notebook and a team's scripts use (issue 41). It
states the same verdict as the command line, names cells as the tables do, and says what a folder
is when it is not an experiment."""

from __future__ import annotations

import pytest

import rag_bench.api as rb
from rag_bench.decision.verdict import of_experiment
from rag_bench.errors import RagBenchError
from tests.conftest import REPO
from tests.runner.test_run_cell import run


@pytest.fixture(scope="module")
def experiment(tmp_path_factory):
    root = tmp_path_factory.mktemp("api")
    for overrides in ([], ["chunker=fixed", "chunker.size=100", "chunker.overlap=0"], ["pipeline.k=3"]):
        run(root, "experiment.name=api", *overrides, dataset=None)  # the demo set, BM25: seconds
    return root / "api"


def test_load_and_the_verdict_are_the_command_lines(experiment):
    exp = rb.load(experiment)
    assert len(exp.cells) == 3
    v = exp.verdict()
    assert v.text() == of_experiment(experiment).text()
    assert v.measure == exp.primary == "answer/context_all"  # the extractive stand-in answered
    assert exp.cell("best").cell_id == v.best and exp.names[v.best] == v.best_name


def test_cells_by_role_label_and_id(experiment):
    exp = rb.load(experiment)
    base = exp.cell("baseline")
    assert exp.cell(exp.names[base.cell_id]) is base and exp.cell(base.cell_id) is base
    with pytest.raises(RagBenchError, match="names no cell of this experiment") as info:
        exp.cell("no such cell")
    assert "give best or baseline, a cell id or a name as" in str(info.value)
    # the CLI's picker (issue 51, item 3): a unique id prefix, and did-you-mean for a misspelt name
    assert exp.cell(base.cell_id[:6]) is base
    with pytest.raises(RagBenchError, match=f"did you mean {exp.names[base.cell_id]!r}"):
        exp.cell(exp.names[base.cell_id][:-1] + "x")


def test_leaderboard_losses_next_steps_compare_gate(experiment):
    exp = rb.load(experiment)
    v = exp.verdict()
    board = exp.leaderboard()
    assert list(board["cell"])[0] == v.best and board[v.measure].is_monotonic_decreasing
    assert set(board.loc[board["not_worse"], "cell"]) == set(v.close)
    lost = exp.losses()
    assert (lost > 0).all() and "correct" not in lost.index
    assert int(lost.sum()) <= exp.cell("best").metrics["counts"]["questions"]
    steps = exp.next_steps(top=2)
    assert 1 <= len(steps) <= 2 and steps[0].startswith(f"{lost.idxmax()}: {lost.max()} of the {lost.sum()}")
    other = next(c for c in exp.cells if c.cell_id != v.best)
    result = exp.compare(exp.names[other.cell_id], "best")
    assert result["metrics"] and all("p_holm" in r for r in result["metrics"])
    results = exp.gate(REPO / "conf" / "gate" / "release.yaml")
    assert results and {r.status for r in results} <= {"pass", "fail", "error"}
    assert any(r.name == "retrieval/hit@5" or r.name.startswith("retrieval") for r in results)


@pytest.mark.parametrize("where, says", [("cell", "is a cell folder"), ("missing", "does not exist"),
                                         ("root", "is an output root")])
def test_load_says_what_the_folder_is(experiment, tmp_path, where, says):
    path = {"cell": lambda: next(p for p in experiment.iterdir() if (p / "DONE").is_file()),
            "missing": lambda: tmp_path / "nope", "root": lambda: experiment.parent}[where]()
    with pytest.raises(RagBenchError, match=says):
        rb.load(path)


def test_every_label_that_loses_a_question_has_advice():
    """``next_steps`` said "see the drill-down" for a label ADVICE did not know: each label of the
    failure order that is a loss (issue 42 added four) says what to try."""
    from rag_bench.failure_labels import GENERATION_CELL_LABELS, NOT_LOST

    lost = [lab for lab in GENERATION_CELL_LABELS if lab not in NOT_LOST]
    assert {"unauthorized", "stale_version", "partial_evidence", "context"} <= set(lost)
    assert [lab for lab in lost if not rb.ADVICE.get(lab)] == []
