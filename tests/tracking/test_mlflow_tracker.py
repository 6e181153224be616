"""Closing a sweep's parent run: FINISHED, or FAILED -- and a failed sweep's parent that holds no
cell run deleted, so a sweep that failed before its first cell leaves no empty run behind."""

from __future__ import annotations

import pytest

from rag_bench.tracking import mlflow_tracker
from rag_bench.tracking.mlflow_tracker import MlflowTracker, finish_all


@pytest.fixture
def tracker(tmp_path, monkeypatch):
    for name in ("MLFLOW_TRACKING_URI", mlflow_tracker.PARENT_ENV):
        monkeypatch.delenv(name, raising=False)
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
