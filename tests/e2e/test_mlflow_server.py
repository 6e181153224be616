"""End to end: a real `mlflow server` (SQLite, one worker), a 2-cell Hydra sweep through the CLI,
then what landed on the server: nested runs, params, metrics, tags, artifacts. Re-running the
same command adds nothing; an unreachable server fails before any work."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
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


def _table(client, run, name: str, tmp_path: Path):
    """A table artifact as MLflow's UI finds it: listed in the run's mlflow.loggedArtifacts tag, stored
    in its split-orient JSON. (MlflowClient.load_table searches the fluent API's default store,
    not the client's server, so it is read here the same way.)"""
    import pandas as pd

    assert {"path": name, "type": "table"} in json.loads(run.data.tags["mlflow.loggedArtifacts"])
    local = client.download_artifacts(run.info.run_id, name, str(tmp_path / "tables" / run.info.run_id))
    return pd.read_json(local, orient="split")


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
    started = time.time() * 1000
    for run in cells:
        assert run.info.status == "FINISHED"
        tags = run.data.tags
        assert tags["mlflow.parentRunId"] == parents[0].info.run_id
        assert tags["cell_id"] in cell_dirs and tags["dataset_fingerprint"] and tags["git_sha"]
        # MLflow's own tags: the commit its UI links, a one-line summary as the run's note.
        assert tags["mlflow.source.git.commit"] == tags["git_sha"]
        assert "hit@5=" in tags["mlflow.note.content"] and "chunker=" in tags["mlflow.note.content"]
        assert run.data.params["chunker.name"] in ("fixed", "section")
        # Named by the swept parameter, not by a hash.
        assert run.info.run_name == run.data.params["chunker.name"]
        folder = cell_dirs[tags["cell_id"]]
        metrics = json.loads((folder / "metrics.json").read_text())
        assert run.data.metrics["retrieval.hit_at_5"] == pytest.approx(metrics["retrieval"]["hit@5"])
        assert run.data.metrics["generation.correct"] == pytest.approx(metrics["generation"]["correct"])
        for tag, values in metrics["by_tag"].items():  # a tag of unanswerable questions has no ndcg@10
            for name in ("ndcg@10", "correct_refusal_rate"):
                if name in values:
                    key = f"tag.{tag}.{name.replace('@', '_at_')}"
                    assert run.data.metrics[key] == pytest.approx(values[name])
        assert "tag.internal_only.correct_refusal_rate" in run.data.metrics
        # Measures, and the failure tallies (columns of the experiment's landing view); intervals, n
        # and counts stay in metrics.json.
        assert not [m for m in run.data.metrics if m.split(".")[0] in ("ci", "n", "counts")]
        assert {m.split(".", 1)[1]: v for m, v in run.data.metrics.items() if m.startswith("failures.")} == \
            {label: float(n) for label, n in metrics["failures"].items()}
        history = client.get_metric_history(run.info.run_id, "retrieval.hit_at_5")
        assert len(history) == 1 and abs(history[0].timestamp - started) < 3600_000  # real time, not 1970
        assert run.info.start_time <= history[0].timestamp <= run.info.end_time
        # The dataset as an MLflow input: name, digest = fingerprint, source, schema.
        (inp,) = run.inputs.dataset_inputs
        assert inp.dataset.name == "tiny" and inp.dataset.digest == tags["dataset_fingerprint"]
        assert json.loads(inp.dataset.source)["uri"] == str(TINY.resolve())
        assert {c["name"] for c in json.loads(inp.dataset.schema)["mlflow_colspec"]} >= {"qid", "question"}
        assert json.loads(inp.dataset.profile)["questions"] == 6
        names = {a.path for a in client.list_artifacts(run.info.run_id)}
        assert {"config.yaml", "metrics.json", "records.parquet", "run.trec", "qrels.trec", "questions.json"} <= names
        local = client.download_artifacts(run.info.run_id, "metrics.json", str(tmp_path / "dl" / run.info.run_id))
        assert json.loads(Path(local).read_text()) == metrics
        questions = _table(client, run, "questions.json", tmp_path)
        assert len(questions) == 6 and {"qid", "failure", "hit@5"} <= set(questions.columns)

    # The parent: the sweep's axes, the best cell's measures, the leaderboard as a table.
    parent = client.get_run(parents[0].info.run_id)
    assert parent.data.params["sweep.axes"] == "chunker" and parent.data.params["sweep.cells"] == "2"
    # ranked by the primary measure (auto: the extractive stand-in answered, so all evidence in the
    # context or a refusal); a tie goes to the cheaper cell
    assert parent.data.params["sweep.primary"] == "answer/context_all"
    best = next(r for r in cells if r.data.tags["cell_id"] == parent.data.params["best.cell"])
    assert best.data.metrics["answer.context_all"] == max(r.data.metrics["answer.context_all"] for r in cells)
    assert parent.data.metrics["primary"] == pytest.approx(best.data.metrics["answer.context_all"])
    assert parent.data.params["best.label"] == best.info.run_name
    note = parent.data.tags["mlflow.note.content"]
    assert f"Best: {best.info.run_name} (answer/context_all" in note, note
    assert "2 of 2 cells not significantly worse" in note or "every other of the 2 cells significantly worse" in note
    board = _table(client, parent, "leaderboard.json", tmp_path)
    assert sorted(board["cell"]) == sorted(cell_dirs) and list(board["label"]) != list(board["cell"])

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
