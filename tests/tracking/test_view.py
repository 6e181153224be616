"""What MLflow's UI shows of an experiment once a sweep ends (rag_bench.tracking.view), against a
real SQLite MLflow store: each ranked cell's run labelled with its rank, primary measure and CI;
the experiment's saved view listing the ranked cells best first; its primary-metric tag; a
description linking to the view that never replaces one a user wrote."""

from __future__ import annotations

import json

import pytest

from rag_bench.tracking import mlflow_tracker
from rag_bench.tracking.mlflow_tracker import MlflowTracker
from rag_bench.tracking.view import (
    CI_HI,
    CI_LO,
    NOTE_TAG,
    PRIMARY,
    PRIMARY_METRIC_TAG,
    PRIMARY_TAG,
    RANK,
    RANKING_TAG,
    RUN_TYPE_TAG,
    VIEW_ID,
    VIEW_TAG_PREFIX,
    display,
    publish,
)

KEY = "generation/correct"


@pytest.fixture
def tracker(tmp_path, monkeypatch):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.setattr(mlflow_tracker, "_PARENTS", {})
    monkeypatch.setattr(mlflow_tracker, "_CREATED", {})
    t = MlflowTracker(traces=False)
    t.bind(output_root=tmp_path, experiment="exp", sweep_id="sweep-1")
    t.prepare()
    return t


def _log(t: MlflowTracker, tmp_path, cells: dict[str, float]) -> None:
    for cell_id, value in cells.items():
        folder = tmp_path / cell_id
        folder.mkdir(exist_ok=True)
        (folder / "metrics.json").write_text("{}")
        t.log_cell(cell_id=cell_id, cell_dir=folder, params={}, run_name=f"label {cell_id}", tags={},
                   metrics={KEY: value, "failures/ranking": 3.0 if cell_id == "b" else 0.0, "failures/correct": 1.0,
                            "failures/retrieval_miss": 1.0 if cell_id == "a" else 0.0, "failures/chunking": 0.0,
                            "failures/partial_evidence": 2.0 if cell_id == "b" else 0.0,
                            "failures/unauthorized": 1.0 if cell_id == "c" else 0.0})


def _rows(order: list[tuple[str, float]]) -> list[dict]:
    return [{"cell": c, "label": f"label {c}", KEY: v, "ci_lo": v - 0.1234567, "ci_hi": v + 0.1234567}
            for c, v in order]


def _runs(t: MlflowTracker) -> dict[str, object]:
    runs = t._get_client().search_runs([t._experiment_id()], filter_string="tags.`rag_bench.role` = 'cell'")
    return {r.data.tags["cell_id"]: r for r in runs}


def _view(t: MlflowTracker) -> tuple[dict, dict]:
    tag = t._get_client().get_experiment(t._experiment_id()).tags[VIEW_TAG_PREFIX + VIEW_ID]
    envelope = json.loads(tag)
    return envelope, json.loads(envelope["state"])


def test_ranked_cells_are_labelled_and_listed_best_first(tracker, tmp_path):
    _log(tracker, tmp_path, {"a": 0.25, "b": 0.75, "c": 0.5})
    order = [("b", 0.75), ("c", 0.5), ("a", 0.25)]
    client, exp_id = tracker._get_client(), tracker._experiment_id()
    assert publish(client, exp_id, _rows(order), KEY) == {"labelled": 3, "already": 0}
    runs = _runs(tracker)
    for rank, (cell, value) in enumerate(order, start=1):
        m, tags = runs[cell].data.metrics, runs[cell].data.tags
        assert m[RANK] == rank and m[PRIMARY] == display(value)
        assert (m[CI_LO], m[CI_HI]) == (display(value - 0.1234567), display(value + 0.1234567))
        assert tags[PRIMARY_TAG] == KEY and tags[RUN_TYPE_TAG] == "evaluation"
    envelope, state = _view(tracker)
    assert envelope["name"] == f"Cells by {KEY} (rag_bench)" and isinstance(envelope["createdAt"], int)
    ranking_id = runs["a"].data.tags[RANKING_TAG]
    assert state["searchFilter"] == f"tags.`{RANKING_TAG}` = '{ranking_id}'"
    assert (state["orderByKey"], state["orderByAsc"]) == ("metrics.`rank`", True)
    # the failure labels some cell counted, in attribution order (never a label all cells have 0 of,
    # nor an outcome that loses no question: correct)
    assert state["selectedColumns"][:4] == ["metrics.`rank`", "metrics.`primary`", "metrics.`primary.ci_lo`",
                                            "metrics.`primary.ci_hi`"]
    # (issue 42's labels too: unauthorized before retrieval_miss, partial_evidence after ranking)
    assert state["selectedColumns"][4:] == ["metrics.`failures.unauthorized`", "metrics.`failures.retrieval_miss`",
                                            "metrics.`failures.ranking`", "metrics.`failures.partial_evidence`"]
    assert state["columnOrder"] == state["selectedColumns"]  # else MLflow lists them by name
    # what the view's filter finds is what MLflow's UI lists: the three cells, not the sweep's parent
    found = client.search_runs([exp_id], filter_string=state["searchFilter"], order_by=["metrics.rank ASC"])
    assert [r.data.tags["cell_id"] for r in found] == ["b", "c", "a"]
    exp = client.get_experiment(exp_id)
    assert exp.tags[PRIMARY_METRIC_TAG] == PRIMARY
    note = exp.tags[NOTE_TAG]
    assert "3 cells ranked by `generation/correct`; best: `label b` 0.750" in note
    assert f"](#/experiments/{exp_id}/runs?workflowType=machine_learning&viewStateShareKey={VIEW_ID})" in note


def test_the_same_ranking_again_writes_nothing_and_a_new_one_drops_cells_no_longer_ranked(tracker, tmp_path):
    _log(tracker, tmp_path, {"a": 0.25, "b": 0.75, "c": 0.5})
    client, exp_id = tracker._get_client(), tracker._experiment_id()
    publish(client, exp_id, _rows([("b", 0.75), ("c", 0.5), ("a", 0.25)]), KEY)
    before = client.get_experiment(exp_id).tags
    assert publish(client, exp_id, _rows([("b", 0.75), ("c", 0.5), ("a", 0.25)]), KEY) == {"labelled": 0, "already": 3}
    assert client.get_experiment(exp_id).tags == before
    # cell "a" left the leaderboard (another dataset version): the view no longer lists it
    assert publish(client, exp_id, _rows([("c", 0.5), ("b", 0.25)]), KEY) == {"labelled": 2, "already": 0}
    _, state = _view(tracker)
    found = client.search_runs([exp_id], filter_string=state["searchFilter"], order_by=["metrics.rank ASC"])
    assert [r.data.tags["cell_id"] for r in found] == ["c", "b"]
    assert _runs(tracker)["b"].data.metrics[RANK] == 2


def test_a_description_someone_wrote_is_kept(tracker, tmp_path):
    _log(tracker, tmp_path, {"a": 0.25})
    client, exp_id = tracker._get_client(), tracker._experiment_id()
    publish(client, exp_id, _rows([("a", 0.25)]), KEY)
    client.set_experiment_tag(exp_id, NOTE_TAG, "Our baseline runs, see the wiki.")
    publish(client, exp_id, _rows([("a", 0.5)]), KEY)
    assert client.get_experiment(exp_id).tags[NOTE_TAG] == "Our baseline runs, see the wiki."


def test_unranked_cells_get_no_view(tracker, tmp_path):
    _log(tracker, tmp_path, {"a": 0.25, "b": 0.5})
    client, exp_id = tracker._get_client(), tracker._experiment_id()
    publish(client, exp_id, _rows([("a", 0.25), ("b", 0.5)]), KEY)
    publish(client, exp_id, [{"cell": "a", "label": "a"}, {"cell": "b", "label": "b"}], None,
            problem="no cell has generation/correct")
    tags = client.get_experiment(exp_id).tags
    assert VIEW_TAG_PREFIX + VIEW_ID not in tags
    assert tags[NOTE_TAG].startswith("**rag_bench**: 2 cells, not ranked (`no cell has generation/correct`)")


def test_a_sweep_labels_its_cells_in_the_leaderboards_order(tmp_path, monkeypatch, capsys):
    """Through the CLI: the cells' runs carry the leaderboard's ranks and values, and their failure
    counts (metrics.json's ``failures``)."""
    from mlflow.tracking import MlflowClient

    from rag_bench.cli import main as cli
    from tests.conftest import TINY

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    out = tmp_path / "out"
    assert cli(["run", "-m", f"dataset.path={TINY}", f"output.root={out}", "experiment.name=e",
                "chunker=fixed,section", "pipeline.k=3,5"]) == 0
    capsys.readouterr()
    assert cli(["leaderboard", str(out / "e"), "--format", "json"]) == 0
    board = json.loads(capsys.readouterr().out)
    client = MlflowClient(tracking_uri=f"sqlite:///{out / 'mlflow.db'}")
    exp = client.get_experiment_by_name("e")
    runs = {r.data.tags["cell_id"]: r for r in client.search_runs([exp.experiment_id],
                                                                   filter_string="tags.`rag_bench.role` = 'cell'")}
    assert len(runs) == len(board["rows"]) == 4
    for rank, row in enumerate(board["rows"], start=1):
        run = runs[row["cell"]]
        assert run.data.metrics[RANK] == rank and run.data.tags[PRIMARY_TAG] == board["sort_by"]
        assert run.data.metrics[PRIMARY] == display(row[board["sort_by"]])
        assert run.data.metrics[CI_LO] == display(row["ci_lo"])
        failures = json.loads((out / "e" / row["cell"] / "metrics.json").read_text())["failures"]
        assert {k: v for k, v in run.data.metrics.items() if k.startswith("failures.")} == \
            {f"failures.{k}": float(v) for k, v in failures.items()}
    assert exp.tags[NOTE_TAG].startswith("**rag_bench**: [Open the cells, best first](")
    assert f" -- 4 cells ranked by `{board['sort_by']}`; best: `{board['rows'][0]['label']}`" in exp.tags[NOTE_TAG]
