"""End to end: a real `mlflow server` (SQLite, one worker), a 2-cell Hydra sweep through the CLI,
then what landed on the server: nested runs, params, metrics, tags, artifacts. Re-running the
same command adds nothing; an unreachable server fails before any work."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import TINY
from tests.servers import free_port, running

pytestmark = pytest.mark.slow
BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def mlflow_server(tmp_path_factory):
    root = tmp_path_factory.mktemp("mlflow")
    uri = f"http://127.0.0.1:{free_port()}"
    cmd = [str(BIN / "mlflow"), "server", "--backend-store-uri", f"sqlite:///{root}/mlflow.db", "--host", "127.0.0.1",
           "--port", uri.rsplit(":", 1)[1], "--workers", "1"]
    env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
    with running(cmd, uri + "/health", root / "server.log", cwd=root, env=env):
        yield uri


def rag_bench(args: list[str], uri: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "MLFLOW_TRACKING_URI": uri}
    return subprocess.run([str(BIN / "rag-bench"), *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=600)


def test_sweep_lands_on_server(mlflow_server, tmp_path):
    from mlflow.tracking import MlflowClient

    args = ["run", "-m", "chunker=fixed,section", f"dataset.path={TINY}", f"output.root={tmp_path / 'exp'}",
            "experiment.name=e2e"]
    done = rag_bench(args, mlflow_server, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Leaderboard" in done.stdout

    client = MlflowClient(tracking_uri=mlflow_server)
    exp = client.get_experiment_by_name("e2e")
    runs = client.search_runs([exp.experiment_id])
    parents = [r for r in runs if r.data.tags.get("rag_bench.role") == "sweep"]
    cells = [r for r in runs if r.data.tags.get("rag_bench.role") == "cell"]
    assert len(parents) == 1 and len(cells) == 2 and len(runs) == 3
    assert parents[0].info.status == "FINISHED"
    cell_dirs = {p.name: p for p in (tmp_path / "exp" / "e2e").iterdir() if (p / "DONE").exists()}
    assert len(cell_dirs) == 2
    for run in cells:
        assert run.info.status == "FINISHED"
        tags = run.data.tags
        assert tags["mlflow.parentRunId"] == parents[0].info.run_id
        assert tags["cell_id"] in cell_dirs and tags["dataset_fingerprint"] and tags["git_sha"]
        assert run.data.params["chunker.name"] in ("fixed", "section")
        folder = cell_dirs[tags["cell_id"]]
        metrics = json.loads((folder / "metrics.json").read_text())
        assert run.data.metrics["retrieval.hit_at_5"] == pytest.approx(metrics["retrieval"]["hit@5"])
        assert run.data.metrics["counts.questions"] == 6
        assert "ci.retrieval.ndcg_at_10.lo" in run.data.metrics
        names = {a.path for a in client.list_artifacts(run.info.run_id)}
        assert {"config.yaml", "metrics.json", "records.parquet", "run.trec", "qrels.trec"} <= names
        local = client.download_artifacts(run.info.run_id, "metrics.json", str(tmp_path / "dl" / run.info.run_id))
        assert json.loads(Path(local).read_text()) == metrics

    # The report's charts land as artifacts of the sweep's parent run.
    report = rag_bench(["report", str(tmp_path / "exp" / "e2e"), "--out", str(tmp_path / "reports")],
                       mlflow_server, tmp_path)
    assert report.returncode == 0, report.stderr[-2000:]
    logged = {a.path for a in client.list_artifacts(parents[0].info.run_id, "report")}
    assert {"report/index.html", "report/leaderboard.png", "report/failures.png"} <= logged

    # Cells can be named by their MLflow run id: compare downloads them from the server.
    ids = [r.info.run_id for r in cells]
    cmp = rag_bench(["compare", ids[0], ids[1], "--json"], mlflow_server, tmp_path)
    assert cmp.returncode == 0, cmp.stderr[-2000:]
    assert json.loads(cmp.stdout)["questions"] == 6

    again = rag_bench(args, mlflow_server, tmp_path)
    assert again.returncode == 0, again.stderr[-3000:]
    assert again.stderr.count("already done, skipping") + again.stdout.count("already done, skipping") == 2
    runs = client.search_runs([exp.experiment_id])
    assert len([r for r in runs if r.data.tags.get("rag_bench.role") == "cell"]) == 2


def test_unreachable_server_fails_before_work(tmp_path):
    dead = f"http://127.0.0.1:{free_port()}"
    done = rag_bench(["run", f"dataset.path={TINY}", f"output.root={tmp_path / 'exp'}"], dead, tmp_path)
    assert done.returncode == 2
    assert "unreachable" in done.stderr and "tracking.required=false" in done.stderr
    assert not any((tmp_path / "exp").glob("*/*/DONE"))
    assert not any(p for p in (tmp_path / "exp").glob("*/*") if not p.name.startswith("."))


def test_tracking_not_required_keeps_results_locally(tmp_path):
    dead = f"http://127.0.0.1:{free_port()}"
    done = rag_bench(["run", f"dataset.path={TINY}", f"output.root={tmp_path / 'exp'}",
                      "tracking.required=false"], dead, tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert len(list((tmp_path / "exp").glob("default/*/DONE"))) == 1
