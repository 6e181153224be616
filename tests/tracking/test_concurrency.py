"""Several processes at the same moment on the same store, experiment or cell: real processes
(``spawn``, or the ``rag-bench`` command) released together by a barrier. Whoever wins, the store
is created once, the experiment and the sweep's parent run exist once, and a cell ends with one
DONE folder and exactly one FINISHED MLflow run (none left RUNNING)."""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from rag_bench.locking import file_lock

BIN = Path(sys.executable).parent
TINY = Path(__file__).resolve().parents[1] / "fixtures" / "tiny"
ENV_DROP = ("MLFLOW_TRACKING_URI", "RAG_BENCH_PARENT_RUN_ID", "RAG_BENCH_SWEEP_ID", "RAG_BENCH_FAILPOINT")


def _worker(out: str, experiment: str, cell_ids: list[str], barrier, rounds: int, report: str) -> None:
    """One process: wait for the others, then log each cell (one per round) through a fresh tracker."""
    try:
        for k in ENV_DROP:
            os.environ.pop(k, None)
        from rag_bench.tracking.mlflow_tracker import MlflowTracker, finish_all

        run_ids = []
        for r in range(rounds):
            cell_id = cell_ids[r % len(cell_ids)]
            cell_dir = Path(out) / experiment / cell_id
            cell_dir.mkdir(parents=True, exist_ok=True)
            (cell_dir / "metrics.json").write_text(json.dumps({"retrieval": {"hit@5": 0.5}}))
            barrier.wait(timeout=120)
            tracker = MlflowTracker()
            tracker.bind(output_root=Path(out), experiment=experiment, sweep_id="race-sweep")
            run_ids.append(tracker.log_cell(cell_id=cell_id, cell_dir=cell_dir, params={"round": r},
                                            metrics={"retrieval/hit@5": 0.5}, tags={"round": str(r)}))
        finish_all(ok=True)
        Path(report).write_text("ok " + " ".join(run_ids))
    except BaseException:  # noqa: BLE001 -- reported to the test, which shows it
        Path(report).write_text(traceback.format_exc())
        raise


def _race(out: Path, experiment: str, cells_of: list[list[str]], rounds: int = 1) -> list[str]:
    """Start one process per entry of ``cells_of`` and release them together; return their reports."""
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(len(cells_of))
    reports = [out.parent / f"{out.name}-report-{i}.txt" for i in range(len(cells_of))]
    procs = [ctx.Process(target=_worker, args=(str(out), experiment, cells, barrier, rounds, str(rep)))
             for cells, rep in zip(cells_of, reports)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=180)
        if p.is_alive():
            p.kill()
    texts = [rep.read_text() if rep.exists() else f"no report (exit code {p.exitcode})"
             for rep, p in zip(reports, procs)]
    failed = [t for t in texts if not t.startswith("ok")]
    assert not failed, "\n\n".join(failed)[-6000:]
    assert all(p.exitcode == 0 for p in procs)
    return texts


def _client(out: Path) -> MlflowClient:
    return MlflowClient(tracking_uri=f"sqlite:///{out / 'mlflow.db'}")


def test_file_lock_excludes_and_leaves_no_file(tmp_path):
    """flock locks separate open()s even within one process, so threads stand in for processes:
    a read-modify-write under the lock loses no update, including when a waiter wakes up on a
    lock file its previous holder already removed; no lock file is left behind."""
    lock, counter = tmp_path / "locks" / "x.lock", tmp_path / "counter"
    counter.write_text("0")
    start = threading.Barrier(6)

    def bump() -> None:
        start.wait(timeout=30)
        for _ in range(25):
            with file_lock(lock):
                n = int(counter.read_text())
                time.sleep(0.0005)
                counter.write_text(str(n + 1))

    threads = [threading.Thread(target=bump) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert counter.read_text() == "150"
    assert not lock.exists()


@pytest.mark.slow
def test_fresh_sqlite_store_created_by_four_processes_at_once(tmp_path):
    """Four processes create the same new SQLite store, experiment and sweep parent at once (this
    crashed one of them in the schema migration) and each logs its own cell."""
    out = tmp_path / "out"
    _race(out, "race", [[f"cell-{i}"] for i in range(4)])
    client = _client(out)
    names = sorted(e.name for e in client.search_experiments())
    assert names.count("race") == 1, names
    runs = client.search_runs([client.get_experiment_by_name("race").experiment_id])
    parents = [r for r in runs if r.data.tags.get("rag_bench.role") == "sweep"]
    cells = [r for r in runs if r.data.tags.get("rag_bench.role") == "cell"]
    assert len(parents) == 1, "one parent run per sweep, whoever created it"
    assert sorted(r.data.tags["cell_id"] for r in cells) == [f"cell-{i}" for i in range(4)]
    assert {r.data.tags["mlflow.parentRunId"] for r in cells} == {parents[0].info.run_id}
    assert all(r.info.status == "FINISHED" for r in runs), [(r.info.run_name, r.info.status) for r in runs]


@pytest.mark.slow
def test_same_cell_logged_by_three_processes_at_once(tmp_path):
    """Three processes log the same cell at the same moment, three times over: after each race
    exactly one live run holds the cell, FINISHED; nothing is left RUNNING."""
    out = tmp_path / "out"
    out.mkdir()
    _client(out).create_experiment("race", artifact_location=(out / "mlartifacts").as_uri())  # only the run is raced for
    _race(out, "race", [["same"]] * 3, rounds=3)
    client = _client(out)
    runs = client.search_runs([client.get_experiment_by_name("race").experiment_id])
    cells = [r for r in runs if r.data.tags.get("cell_id") == "same"]
    assert len(cells) == 1, [(r.info.run_id, r.info.status, r.data.tags.get("round")) for r in cells]
    assert cells[0].info.status == "FINISHED"
    assert cells[0].data.tags["round"] == "2"
    assert len([r for r in runs if r.data.tags.get("rag_bench.role") == "sweep"]) == 1
    assert not [r for r in runs if r.info.status == "RUNNING"]


@pytest.mark.slow
@pytest.mark.parametrize("store", ["fresh", "existing"])
def test_same_cell_run_by_three_commands_at_once(tmp_path, store):
    """Three `rag-bench run` of the same cell started together: all exit 0; one DONE cell folder,
    intact, pointing at the cell's only MLflow run (FINISHED); no temporary folder left behind,
    nothing RUNNING, one sweep parent. "fresh": the three also create the SQLite store. "existing":
    the store exists and each process pauses 3 s once its cell's run is created (failpoint sleep),
    so the others reach the same cell while the first is still logging it."""
    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if k not in ENV_DROP}
    if store == "existing":
        out.mkdir()
        _client(out)  # creates the store's tables
        env["RAG_BENCH_FAILPOINT"] = "mlflow_run_created:sleep=3"
    cmd = [str(BIN / "rag-bench"), "run", f"dataset.path={TINY}", f"output.root={out}"]
    procs = [subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(3)]
    results = [(p.wait(timeout=300), *p.communicate()) for p in procs]
    assert all(rc == 0 for rc, _, _ in results), "\n\n".join(err[-3000:] for rc, _, err in results if rc)

    exp_dir = out / "default"
    assert not [p.name for p in exp_dir.iterdir() if ".tmp-" in p.name], "temporary cell folders left behind"
    assert not list(out.rglob("*.lock")), "lock files are removed once released"
    cells = [p for p in exp_dir.iterdir() if not p.name.startswith(".")]
    assert len(cells) == 1 and (cells[0] / "DONE").is_file(), [p.name for p in exp_dir.iterdir()]
    cell = cells[0]
    metrics = json.loads((cell / "metrics.json").read_text())
    done = json.loads((cell / "DONE").read_text())

    client = _client(out)
    runs = client.search_runs([client.get_experiment_by_name("default").experiment_id])
    mine = [r for r in runs if r.data.tags.get("cell_id") == cell.name]
    assert len(mine) == 1 and mine[0].info.status == "FINISHED", [(r.info.run_id, r.info.status) for r in mine]
    assert done["mlflow_run_id"] == mine[0].info.run_id, "DONE names the cell's surviving run"
    assert mine[0].data.metrics["retrieval.hit_at_5"] == metrics["retrieval"]["hit@5"]
    assert not [r for r in runs if r.info.status == "RUNNING"]
    assert len([r for r in runs if r.data.tags.get("rag_bench.role") == "sweep"]) == 1
