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
