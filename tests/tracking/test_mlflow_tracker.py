"""Closing a sweep's parent run: FINISHED, or FAILED -- and a failed sweep's parent that holds no
cell run deleted, so a sweep that failed before its first cell leaves no empty run behind."""

from __future__ import annotations

import pytest

from rag_bench.tracking import mlflow_tracker
from rag_bench.tracking.mlflow_tracker import MlflowTracker, finish_all


@pytest.fixture
def tracker(tmp_path, monkeypatch):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.setattr(mlflow_tracker, "_PARENTS", {})
    t = MlflowTracker()
    t.bind(output_root=tmp_path, experiment="exp", sweep_id="sweep-1")
    t.prepare()  # the parent, opened before the first cell as `run` does
    return t


def _parent(t: MlflowTracker):
    from mlflow.entities import ViewType

    client = t._get_client()
    (run,) = [r for r in client.search_runs([t._experiment_id()], run_view_type=ViewType.ALL)
              if r.data.tags.get("rag_bench.role") == "sweep"]
    return run.info


@pytest.mark.parametrize(("ok", "status", "stage"), [(True, "FINISHED", "active"), (False, "FAILED", "deleted")])
def test_a_parent_without_cells(tracker, ok, status, stage):
    finish_all(ok=ok)
    info = _parent(tracker)
    assert (info.status, info.lifecycle_stage) == (status, stage)
    assert not mlflow_tracker._PARENTS


def test_a_failed_sweep_keeps_the_parent_of_its_logged_cells(tracker, tmp_path):
    cell = tmp_path / "cell"
    cell.mkdir()
    (cell / "metrics.json").write_text("{}")
    tracker.log_cell(cell_id="c1", cell_dir=cell, params={}, metrics={"retrieval/hit@1": 1.0}, tags={})
    finish_all(ok=False)
    info = _parent(tracker)
    assert (info.status, info.lifecycle_stage) == ("FAILED", "active")


def _parent_of(out, experiment):
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{out / 'mlflow.db'}")
    exp = client.get_experiment_by_name(experiment)
    (parent,) = client.search_runs([exp.experiment_id], filter_string="tags.`rag_bench.role` = 'sweep'")
    return exp, parent


def test_mlflow_opens_on_runs_and_the_parent_is_named_and_holds_ann_only_when_swept(tmp_path, capsys, monkeypatch):
    """MLflow as its users expect (issue 28 item 8): the experiment opens on its runs (not MLflow 3's
    empty GenAI page), the sweep's parent is named after the experiment and its start, and its
    best.ann.* metrics exist only when an approximate index was swept."""
    from rag_bench.cli import main as cli
    from tests.conftest import TINY

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    out = tmp_path / "out"
    base = ["run", "-m", f"dataset.path={TINY}", f"output.root={out}", "generator=none"]
    assert cli([*base, "experiment.name=lexical", "retriever=dense", "pipeline.k=3,5"]) == 0  # the flat index only
    exp, parent = _parent_of(out, "lexical")
    assert exp.tags.get("mlflow.experimentKind") == "custom_model_development"
    assert parent.info.run_name.startswith("lexical 20") and "sweep-" not in parent.info.run_name
    assert [m for m in parent.data.metrics if m.startswith("best")] and \
        not [m for m in parent.data.metrics if m.startswith("best/ann") or m.startswith("best.ann")]
    assert cli([*base, "experiment.name=ann", "retriever=dense", "index=flat,hnsw_m4_ef1"]) == 0
    capsys.readouterr()
    _, parent = _parent_of(out, "ann")
    assert [m for m in parent.data.metrics if "ann" in m.split("_at_")[0]]
