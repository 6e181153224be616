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
    monkeypatch.setattr(mlflow_tracker, "_CREATED", {})
    t = MlflowTracker()
    t.bind(output_root=tmp_path, experiment="exp", sweep_id="sweep-1")
    t.prepare()  # the parent, opened before the first cell as `run` does
    mlflow_tracker._CREATED.clear()  # an experiment an earlier run made (one this run made: below)
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


def _store(out):
    from mlflow.tracking import MlflowClient

    return MlflowClient(tracking_uri=f"sqlite:///{out / 'mlflow.db'}")


@pytest.mark.parametrize("sweep", [[], ["-m", "pipeline.k=3,5"]], ids=["run", "run -m"])
def test_a_run_that_fails_validation_leaves_no_experiment(tmp_path, capsys, monkeypatch, sweep):
    """A dataset that does not exist fails the run after its experiment was opened: the experiment
    goes with its empty parent (it was listed first in MLflow's "Recent experiments", empty), and
    the name is free for the run that follows."""
    from rag_bench.cli import main as cli
    from tests.conftest import TINY

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    out = tmp_path / "out"
    base = ["run", *sweep, f"output.root={out}", "experiment.name=broken", "generator=none"]
    assert cli([*base, f"dataset.path={tmp_path / 'no-such-folder'}"]) == 2
    assert "dataset folder does not exist" in capsys.readouterr().err
    assert [e.name for e in _store(out).search_experiments()] == []  # active ones: not even MLflow's empty Default
    from mlflow.entities import ViewType

    # erased from the local store (as `mlflow gc` would), not only deleted; Default only deleted
    assert [e.name for e in _store(out).search_experiments(view_type=ViewType.ALL)] == ["Default"]
    assert cli([*base, f"dataset.path={TINY}"]) == 0
    exp = _store(out).get_experiment_by_name("broken")
    assert exp.lifecycle_stage == "active"
    assert _store(out).search_runs([exp.experiment_id], filter_string="tags.`rag_bench.role` = 'cell'")


def test_a_failed_run_keeps_an_experiment_it_did_not_create(tmp_path, capsys, monkeypatch):
    from rag_bench.cli import main as cli
    from tests.conftest import TINY

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    out = tmp_path / "out"
    base = ["run", f"output.root={out}", "experiment.name=kept", "generator=none"]
    assert cli([*base, f"dataset.path={TINY}"]) == 0
    assert cli([*base, f"dataset.path={tmp_path / 'no-such-folder'}", "pipeline.k=3"]) == 2
    exp = _store(out).get_experiment_by_name("kept")
    assert exp.lifecycle_stage == "active"
    assert len(_store(out).search_runs([exp.experiment_id], filter_string="tags.`rag_bench.role` = 'cell'")) == 1


def test_one_default_experiment(tmp_path, capsys, monkeypatch):
    """experiment.name's default is ``default``: MLflow's own empty ``Default`` is dropped from the
    store rag_bench made, so MLflow lists one default; a Default that holds a run stays."""
    from mlflow.entities import ViewType

    from rag_bench.cli import main as cli
    from tests.conftest import TINY

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    out = tmp_path / "out"
    assert cli(["run", f"dataset.path={TINY}", f"output.root={out}", "generator=none"]) == 0
    assert [e.name for e in _store(out).search_experiments()] == ["default"]
    assert _store(out).get_experiment("0").lifecycle_stage == "deleted"  # soft: MLflow does not make another

    used = tmp_path / "used"
    used.mkdir()
    client = _store(used)
    client.set_terminated(client.create_run("0").info.run_id)  # someone's run in MLflow's Default
    assert cli(["run", f"dataset.path={TINY}", f"output.root={used}", "generator=none"]) == 0
    assert sorted(e.name for e in _store(used).search_experiments(view_type=ViewType.ACTIVE_ONLY)) == \
        ["Default", "default"]


def test_a_deleted_experiment_is_named_with_a_fix(tmp_path, capsys, monkeypatch):
    """An experiment deleted in MLflow (its name is still taken) is an error saying how to restore
    it, not MLflow's "must be in the 'active' state"."""
    from rag_bench.cli import main as cli
    from tests.conftest import TINY

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    out = tmp_path / "out"
    base = ["run", f"dataset.path={TINY}", f"output.root={out}", "experiment.name=gone", "generator=none"]
    assert cli(base) == 0
    exp = _store(out).get_experiment_by_name("gone")
    _store(out).delete_experiment(exp.experiment_id)
    capsys.readouterr()
    assert cli([*base, "pipeline.k=3"]) == 2
    err = capsys.readouterr().err
    assert f"MLflow experiment 'gone' (id {exp.experiment_id})" in err and "is deleted" in err
    assert f"mlflow experiments restore --experiment-id {exp.experiment_id}" in err


def test_an_experiment_a_failed_run_could_only_delete_is_restored_by_the_next_run(tmp_path, capsys, monkeypatch):
    """On a server (no erasing) the experiment a failed run made is deleted with a tag saying so:
    the next run of that name restores it instead of calling it deleted by someone."""
    from rag_bench.cli import main as cli
    from tests.conftest import TINY

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    out = tmp_path / "out"
    client = _store(out)
    exp_id = client.create_experiment("served", artifact_location=(out / "mlartifacts").as_uri())
    run_id = client.create_run(exp_id).info.run_id
    client.delete_run(run_id)
    mlflow_tracker._remove_experiment(client, "http://127.0.0.1:5000", exp_id, run_id)  # the server's path
    assert client.get_experiment(exp_id).lifecycle_stage == "deleted"
    assert cli(["run", f"dataset.path={TINY}", f"output.root={out}", "experiment.name=served", "generator=none"]) == 0
    exp = _store(out).get_experiment(exp_id)
    assert exp.lifecycle_stage == "active" and mlflow_tracker.DELETED_BY_US not in exp.tags


def test_a_sweep_summarised_again_with_other_outcomes_still_fills_its_parent(tracker, caplog):
    # The same command run again reuses the sweep's parent run (found by its sweep id); when the
    # outcome differs (the dataset gained a question, another best cell) MLflow refuses to change a
    # param, and the whole summary -- metrics, note, leaderboard -- was lost to that one refusal.
    import pandas as pd

    from rag_bench.tracking.mlflow_tracker import summarize_sweeps

    board = pd.DataFrame({"label": ["a", "b"], "cell": ["c1", "c2"]})
    summarize_sweeps(board, {"primary": 0.5}, {"best.cell": "c1", "sweep.cells": 2}, "first summary")
    with caplog.at_level("WARNING"):
        summarize_sweeps(board, {"primary": 0.7}, {"best.cell": "c2", "sweep.cells": 2}, "second summary")
    assert "could not fill" not in caplog.text
    run = tracker._get_client().get_run(_parent(tracker).run_id)
    assert run.data.params["best.cell"] == "c1"  # a param keeps its first value (MLflow's rule) ...
    assert run.data.tags["best.cell"] == "c2"  # ... the latest summary's value is the tag of that name
    assert run.data.metrics["primary"] == 0.7 and run.data.tags["mlflow.note.content"] == "second summary"
    assert "best.cell" in caplog.text and "params cannot change" in caplog.text


def test_the_local_store_commits_through_a_write_ahead_log(tracker, tmp_path):
    """The sweep's SQLite store is in WAL mode and the connections SQLAlchemy opens to it commit with
    synchronous=NORMAL (no fsync per commit: ~14 ms each on the benchmark machine, a dozen a cell);
    another SQLite database of the same process keeps SQLite's defaults."""
    import sqlite3

    from sqlalchemy import create_engine, text

    db = tmp_path / "mlflow.db"
    assert sqlite3.connect(db).execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    other = tmp_path / "other.db"
    sqlite3.connect(other).close()
    for path, synchronous in ((db, 1), (other, 2)):  # 1 NORMAL, 2 FULL (SQLite's default)
        engine = create_engine(f"sqlite:///{path}")
        with engine.connect() as con:
            assert con.execute(text("PRAGMA synchronous")).scalar() == synchronous, path
        engine.dispose()
    parent = _parent(tracker)
    assert parent.status == "RUNNING"  # the store works as before
    # At exit the log is checkpointed into mlflow.db: the file alone, copied, holds the sweep's run.
    from rag_bench.tracking import wal

    wal.checkpoint()
    assert db.with_name("mlflow.db-wal").stat().st_size == 0
    alone = tmp_path / "copy" / "mlflow.db"
    alone.parent.mkdir()
    alone.write_bytes(db.read_bytes())
    assert sqlite3.connect(alone).execute("SELECT status FROM runs WHERE run_uuid = ?",
                                          (parent.run_id,)).fetchone() == ("RUNNING",)


def test_a_finished_sweep_leaves_no_descriptor_of_its_store_open(tracker, tmp_path):
    """MLflow keeps an engine per store for the life of the process; in WAL mode each pooled connection
    holds mlflow.db, its -wal and its -shm: a test worker running sweep after sweep in process held five
    more descriptors a sweep, past 1024 (select() refused them). Closing the sweep closes them."""
    from pathlib import Path

    fds = Path("/proc/self/fd")
    if not fds.is_dir():
        pytest.skip("no /proc/self/fd on this system")

    def held() -> list[str]:
        found = []
        for fd in fds.iterdir():
            try:
                target = str(fd.readlink())
            except OSError:
                continue
            if target.startswith(str(tmp_path / "mlflow.db")):
                found.append(target)
        return found

    assert held(), "the open sweep holds its store (else this test proves nothing)"
    finish_all(ok=True)
    assert held() == []
    assert _parent(tracker).status == "FINISHED"  # the store is still usable: a new connection opens
