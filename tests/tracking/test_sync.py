"""Tracking outage: results kept in cell folders, uploaded later by `rag-bench sync` without duplicates."""

from __future__ import annotations

import json

from mlflow.tracking import MlflowClient

from rag_bench.cli import main as cli
from tests.conftest import TINY


def test_sync_uploads_once(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    out = tmp_path / "out"
    assert cli(["run", "-m", "chunker=fixed,section", f"dataset.path={TINY}", f"output.root={out}", "tracking=none",
                "experiment.name=offline"]) == 0
    assert not (out / "mlflow.db").exists()
    assert cli(["sync", str(out / "offline")]) == 0
    assert "2 cell(s) uploaded, 0 already tracked" in capsys.readouterr().out
    assert cli(["sync", str(out / "offline")]) == 0
    assert "0 cell(s) uploaded, 2 already tracked" in capsys.readouterr().out
    client = MlflowClient(tracking_uri=f"sqlite:///{out / 'mlflow.db'}")
    exp = client.get_experiment_by_name("offline")
    cells = [r for r in client.search_runs([exp.experiment_id]) if r.data.tags.get("rag_bench.role") == "cell"]
    assert len(cells) == 2 and all(r.info.status == "FINISHED" for r in cells)
    for done in (out / "offline").glob("*/DONE"):
        info = json.loads(done.read_text())
        assert info["mlflow_run_id"] in {r.info.run_id for r in cells}
        run = next(r for r in cells if r.info.run_id == info["mlflow_run_id"])
        metrics = json.loads((done.parent / "metrics.json").read_text())
        assert run.data.metrics["retrieval.hit_at_5"] == metrics["retrieval"]["hit@5"]
    assert cli(["sync", str(tmp_path / "missing")]) == 2


def test_synced_cells_are_ranked_in_mlflow_as_a_sweeps_end_ranks_them(tmp_path, capsys, monkeypatch):
    """Cells run with tracking=none and synced later get what a sweep's end gives them: rank,
    primary and its CI on each cell run, the experiment's view, the verdict on the sync's parent."""
    from rag_bench.decision.verdict import of_experiment
    from rag_bench.tracking.view import VIEW_ID, VIEW_TAG_PREFIX

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    out = tmp_path / "out"
    assert cli(["run", "-m", "chunker=fixed,section", f"dataset.path={TINY}", f"output.root={out}", "tracking=none",
                "experiment.name=later"]) == 0
    assert cli(["sync", str(out / "later")]) == 0
    client = MlflowClient(tracking_uri=f"sqlite:///{out / 'mlflow.db'}")
    exp = client.get_experiment_by_name("later")
    runs = client.search_runs([exp.experiment_id])
    cells = {r.data.tags["cell_id"]: r for r in runs if r.data.tags.get("rag_bench.role") == "cell"}
    found = of_experiment(out / "later")
    assert cells[found.best].data.metrics["rank"] == 1.0
    assert sorted(r.data.metrics["rank"] for r in cells.values()) == [1.0, 2.0]
    assert all(r.data.tags["rag_bench.primary"] == found.measure for r in cells.values())
    assert VIEW_TAG_PREFIX + VIEW_ID in client.get_experiment(exp.experiment_id).tags
    (parent,) = [r for r in runs if r.data.tags.get("rag_bench.role") == "sweep"]
    assert found.text() in parent.data.tags["mlflow.note.content"]
