"""A new SQLite MLflow store seeded from an empty one is the store MLflow would have created."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from rag_bench import switches
from rag_bench.tracking.store_seed import keep_template, seed_store, template_path

# Columns a store made at another moment differs in (milliseconds since the epoch).
TIMES = {"creation_time", "last_update_time"}


def _rows(db: Path) -> dict[str, list[dict]]:
    con = sqlite3.connect(db)
    try:
        tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        out = {}
        for t in tables:
            cur = con.execute(f"SELECT * FROM {t}")  # noqa: S608 -- table names from sqlite_master
            names = [d[0] for d in cur.description]
            out[t] = [{n: v for n, v in zip(names, row) if n not in TIMES} for row in cur.fetchall()]
        # MLflow's own migrations write a table's constraints in an order that varies between two
        # fresh stores (alembic's batch copies): each statement as the sorted set of its lines.
        out["schema"] = sorted((kind, name, tuple(sorted(line.strip().rstrip(",") for line in (sql or "").splitlines())))
                               for kind, name, sql in con.execute("SELECT type, name, sql FROM sqlite_master"))
        return out
    finally:
        con.close()


def _fresh(db: Path) -> None:
    from mlflow.tracking import MlflowClient

    MlflowClient(tracking_uri=f"sqlite:///{db}").search_experiments()


def test_a_seeded_store_equals_a_fresh_one_and_mlflow_logs_into_it(tmp_path, monkeypatch):
    from mlflow.tracking import MlflowClient

    cache = tmp_path / "cache"
    first_cwd, cwd = tmp_path / "first", tmp_path / "cwd"
    first_cwd.mkdir(), cwd.mkdir()
    monkeypatch.chdir(first_cwd)
    assert not seed_store(tmp_path / "first.db", root=cache)  # no template yet: MLflow makes the store
    _fresh(tmp_path / "first.db")
    assert keep_template(tmp_path / "first.db", root=cache)
    assert not keep_template(tmp_path / "first.db", root=cache)  # one template per MLflow version
    monkeypatch.chdir(cwd)
    fresh, seeded = tmp_path / "fresh.db", tmp_path / "seeded.db"
    _fresh(fresh)
    assert seed_store(seeded, root=cache)
    assert _rows(seeded) == _rows(fresh)  # tables, indexes, alembic version, Default experiment, workspace
    assert _rows(seeded)["experiments"][0]["artifact_location"] == str(cwd / "mlruns" / "0")
    client = MlflowClient(tracking_uri=f"sqlite:///{seeded}")
    run = client.create_run(client.create_experiment("e"))
    client.log_metric(run.info.run_id, "m", 0.5)
    assert client.get_run(run.info.run_id).data.metrics == {"m": 0.5}
    assert not seed_store(seeded, root=cache)  # an existing store is never replaced
    assert not keep_template(seeded, root=cache)
    assert list(tmp_path.rglob(".*.part")) == []


def test_an_unexpected_store_or_template_or_sharing_off_leaves_stores_to_mlflow(tmp_path, monkeypatch):
    import mlflow
    from mlflow.tracking import MlflowClient

    cache = tmp_path / "cache"
    monkeypatch.chdir(tmp_path)
    used = tmp_path / "used.db"
    _fresh(used)
    MlflowClient(tracking_uri=f"sqlite:///{used}").create_experiment("e")
    assert not keep_template(used, root=cache)  # something logged already: not an empty store
    fresh = tmp_path / "fresh.db"
    _fresh(fresh)
    assert keep_template(fresh, root=cache)
    template = template_path(mlflow.__version__, cache)
    con = sqlite3.connect(template)
    with con:
        con.execute("UPDATE experiments SET artifact_location = '/elsewhere/0'")
    con.close()
    assert not seed_store(tmp_path / "b.db", root=cache)
    assert not (tmp_path / "b.db").exists() and list(tmp_path.rglob(".*.part")) == []
    template.unlink()
    monkeypatch.setattr(switches, "_CONFIGURED", switches.Switches(share=False))
    assert not keep_template(fresh, root=cache) and not template.exists()


@pytest.mark.parametrize("bad", ["file", "broken-template"])
def test_a_bad_cache_folder_or_template_falls_back(tmp_path, bad):
    import mlflow

    root = tmp_path / "cache"
    if bad == "file":
        root.write_text("not a folder")
    else:
        template = template_path(mlflow.__version__, root)
        template.parent.mkdir(parents=True)
        template.write_bytes(b"not a database")
    assert not seed_store(tmp_path / "x.db", root=root)
    assert not (tmp_path / "x.db").exists()
    if bad == "file":
        _fresh(tmp_path / "y.db")
        assert not keep_template(tmp_path / "y.db", root=root)


def test_the_tracker_seeds_every_store_after_its_first(tmp_path, monkeypatch):
    # Through MlflowTracker: the first output folder's store is made by MLflow and kept; the second
    # is a copy, and the sweep's parent run opens in it as in the first.
    import mlflow
    from mlflow.tracking import MlflowClient

    from rag_bench.tracking import mlflow_tracker

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.setattr(mlflow_tracker, "_PARENTS", {})
    monkeypatch.setenv("RAG_BENCH_CACHE", str(tmp_path / "cache"))
    template = template_path(mlflow.__version__, tmp_path / "cache")
    parents = []
    for name in ("a", "b"):
        t = mlflow_tracker.MlflowTracker()
        t.bind(output_root=tmp_path / name, experiment="exp", sweep_id=f"sweep-{name}")
        parents.append(t.prepare())
        assert template.is_file()  # kept from a's store, a copy of it is b's
    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'b' / 'mlflow.db'}")
    run = client.get_run(parents[1])
    assert run.info.experiment_id == client.get_experiment_by_name("exp").experiment_id
    assert _rows(tmp_path / "b" / "mlflow.db")["experiments"][0]["artifact_location"] == str(Path.cwd() / "mlruns" / "0")
    # Both stores commit through a write-ahead log (rag_bench.tracking.wal); the template is kept
    # before its store is switched, so it holds every table in its one file, in rollback mode.
    modes = {db: sqlite3.connect(db).execute("PRAGMA journal_mode").fetchone()[0]
             for db in (tmp_path / "a" / "mlflow.db", tmp_path / "b" / "mlflow.db", template)}
    assert list(modes.values()) == ["wal", "wal", "delete"]
