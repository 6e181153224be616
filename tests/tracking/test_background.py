"""MLflow logging from a child process (rag_bench.tracking.background): a real child, a real
SQLite store. DONE only once the run is FINISHED, the cell's lock held until then, errors and a
dead child reported, and a sweep logged this way lands as one logged in its own process."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from rag_bench.errors import TrackingError
from rag_bench.tracking import background
from rag_bench.tracking.mlflow_tracker import _PARENTS, MlflowTracker

BIN = Path(sys.executable).parent
TINY = Path(__file__).resolve().parents[1] / "fixtures" / "tiny"
ENV_DROP = ("MLFLOW_TRACKING_URI", "RAG_BENCH_PARENT_RUN_ID", "RAG_BENCH_SWEEP_ID", "RAG_BENCH_FAILPOINT")


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch):
    for k in ENV_DROP:
        monkeypatch.delenv(k, raising=False)
    yield
    _PARENTS.clear()


def _job(out: Path, cell_id: str, uri: str | None = None) -> background.LogJob:
    cell_dir = out / "exp" / cell_id
    cell_dir.mkdir(parents=True, exist_ok=True)
    (cell_dir / "metrics.json").write_text(json.dumps({"retrieval": {"hit@5": 0.5}}))
    tracker = MlflowTracker(uri=uri)
    tracker.bind(output_root=out, experiment="exp", sweep_id="bg-sweep")
    job = tracker.background_job(dict(cell_id=cell_id, cell_dir=cell_dir, params={"k": 5},
                                      metrics={"retrieval/hit@5": 0.5}, tags={"t": "v"}),
                                 {"cell_id": cell_id, "dataset": "tiny", "git_sha": "x"})
    assert job is not None
    return job


def test_done_only_after_finished_and_lock_released_on_report(tmp_path):
    released: list[str] = []
    logger = background.BackgroundLogger()
    try:
        for cid in ("c1", "c2", "c3"):
            logger.submit(_job(tmp_path, cid), lambda cid=cid: released.append(cid))
        assert logger.pending() == 3 and released == []  # the child is still starting: nothing released
        logger.wait_for(tmp_path / "exp" / "c1")
        assert released[0] == "c1" and (tmp_path / "exp" / "c1" / "DONE").is_file()
        logger.drain()
    finally:
        logger.close()
    assert released == ["c1", "c2", "c3"] and logger.pending() == 0
    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    runs = {r.data.tags["cell_id"]: r for r in client.search_runs([client.get_experiment_by_name("exp").experiment_id])
            if r.data.tags.get("rag_bench.role") == "cell"}
    assert sorted(runs) == ["c1", "c2", "c3"]
    for cid, run in runs.items():
        done = json.loads((tmp_path / "exp" / cid / "DONE").read_text())
        assert run.info.status == "FINISHED" and done["mlflow_run_id"] == run.info.run_id
        assert done["cell_id"] == cid and done["tracking"] == "mlflow" and done["parent_run_id"]
        assert run.data.metrics["retrieval.hit_at_5"] == 0.5 and run.data.params["k"] == "5"
    # the parent run the child created is known here, so the sweep's end closes it
    assert _PARENTS[(f"sqlite:///{tmp_path / 'mlflow.db'}", "exp", "bg-sweep")] == done["parent_run_id"]


def test_a_logging_error_is_raised_named_and_the_cell_is_not_done(tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    released = []
    logger = background.BackgroundLogger()
    try:
        logger.submit(_job(tmp_path, "bad", uri=f"sqlite:///{blocker / 'mlflow.db'}"), lambda: released.append(1))
        with pytest.raises(TrackingError, match="cell bad: MLflow logging failed, the cell is not DONE"):
            logger.drain()
        assert released == [1] and not (tmp_path / "exp" / "bad" / "DONE").exists()
        # the child goes on with the next cell
        logger.submit(_job(tmp_path, "good"), lambda: None)
        logger.drain()
        assert (tmp_path / "exp" / "good" / "DONE").is_file()
    finally:
        logger.close()


def test_a_dead_child_fails_every_pending_cell_and_releases_its_lock(tmp_path):
    released = []
    logger = background.BackgroundLogger()
    try:
        logger.submit(_job(tmp_path, "c1"), lambda: released.append("c1"))
        assert logger._proc is not None
        logger._proc.kill()
        with pytest.raises(TrackingError, match="the process finishing cells .* ended"):
            logger.drain()
        assert released == ["c1"] and not (tmp_path / "exp" / "c1" / "DONE").exists()
    finally:
        logger.close()


def test_the_child_dies_with_its_parent(tmp_path):
    """A parent killed -9 with cells pending: the child does not log them (no DONE appears)."""
    script = f"""
import json, os, sys, time
from pathlib import Path
sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})
from tests.tracking.test_background import _job
from rag_bench.tracking import background
out = Path({str(tmp_path)!r})
logger = background.BackgroundLogger()
logger.submit(_job(out, "c1"), lambda: None)
print(logger._proc.pid, flush=True)
time.sleep(60)
"""
    env = {k: v for k, v in os.environ.items() if k not in ENV_DROP}
    env["RAG_BENCH_FAILPOINT"] = "mlflow_run_created:sleep=20"  # the child is inside the cell's logging
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, env=env)
    child = int(parent.stdout.readline())
    deadline = time.monotonic() + 60
    db = tmp_path / "mlflow.db"
    while not (db.exists() and _cell_runs(db)) and time.monotonic() < deadline:
        time.sleep(0.1)  # until the child has created the cell's run
    assert _cell_runs(db), "the child never reached the cell's logging"
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 10
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child), "the logging process outlived its parent"
    assert not (tmp_path / "exp" / "c1" / "DONE").exists()


def _cell_runs(db: Path) -> bool:
    """The child has created the sweep's parent run and the cell's (read with sqlite3: an MLflow
    client here would race the child's schema migration)."""
    import sqlite3

    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1) as conn:
            return conn.execute("SELECT count(*) FROM runs").fetchone()[0] >= 2
    except sqlite3.Error:
        return False


def _alive(pid: int) -> bool:
    try:
        waited, _ = os.waitpid(pid, os.WNOHANG)  # not our child: ChildProcessError
    except ChildProcessError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/stat")
    return not (status.exists() and status.read_text().split(")")[-1].split()[0] == "Z")


@pytest.mark.slow
def test_a_sweep_logged_in_the_background_lands_as_one_logged_in_process(tmp_path):
    """The same sweep with tracking.background true and false: the same cells, DONE bodies (run
    ids aside) and MLflow runs (metrics, params, tags other than ids and times, artifacts, traces:
    the background process builds them from the result it wrote, the sweep's from the folder)."""
    env = {k: v for k, v in os.environ.items() if k not in ENV_DROP}
    stores = {}
    for flag in ("true", "false"):
        out = tmp_path / flag
        cmd = [str(BIN / "rag-bench"), "run", "-m", "chunker=fixed,section", "pipeline.k=3,5", f"dataset.path={TINY}",
               f"output.root={out}", f"tracking.background={flag}"]
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        # The store is read from a copy of mlflow.db alone: its write-ahead log was checkpointed
        # into it when the sweep ended (rag_bench.tracking.wal), so nothing stays in mlflow.db-wal.
        alone = tmp_path / f"{flag}-copy" / "mlflow.db"
        alone.parent.mkdir()
        shutil.copyfile(out / "mlflow.db", alone)
        stores[flag] = _store(out, alone)
    assert stores["true"] == stores["false"]
    assert len(stores["true"]) == 4


def _store(out: Path, db: Path) -> dict:
    client = MlflowClient(tracking_uri=f"sqlite:///{db}")
    exp = client.get_experiment_by_name("default")
    runs = client.search_runs([exp.experiment_id])
    assert not [r for r in runs if r.info.status != "FINISHED"]
    cells = {}
    volatile = ("mlflow_run_id", "parent_run_id", "tracking_uri")
    for r in runs:
        if r.data.tags.get("rag_bench.role") != "cell":
            continue
        cid = r.data.tags["cell_id"]
        done = json.loads((out / "default" / cid / "DONE").read_text())
        assert done["mlflow_run_id"] == r.info.run_id
        # rank, and the ranking's id made of the ranks: cells tied on the primary measure are ordered
        # by their measured latency, which two sweeps need not measure alike.
        tags = {k: v for k, v in r.data.tags.items()
                if k not in ("mlflow.parentRunId", "mlflow.note.content", "rag_bench.ranking")}
        cells[cid] = {"done": {k: v for k, v in done.items() if k not in volatile},
                      "metrics": {k: v for k, v in r.data.metrics.items()
                                  if not k.startswith(("latency.", "cost.")) and k != "rank"},
                      "params": {k: v for k, v in r.data.params.items() if not k.startswith(("output.", "tracking."))},
                      "tags": tags,
                      "artifacts": sorted(a.path for a in client.list_artifacts(r.info.run_id)),
                      "traces": _traces(client, exp.experiment_id, r.info.run_id)}
    return cells


def _traces(client: MlflowClient, exp_id: str, run_id: str) -> dict:
    """A run's traces by question: each span's name, inputs, outputs and status, and the
    assessments (durations and ids are each sweep's own)."""
    found = {}
    for t in client.search_traces(locations=[exp_id], run_id=run_id, max_results=1000):
        found[t.info.tags["rag_bench.qid"]] = {
            "spans": sorted((s.name, json.dumps(s.inputs, sort_keys=True), json.dumps(s.outputs, sort_keys=True),
                             str(s.status.status_code)) for s in t.data.spans),
            "assessments": sorted((a.name, json.dumps(a.value), a.rationale or "") for a in t.info.assessments)}
    assert found
    return found


def test_a_hand_over_to_a_dead_child_is_a_tracking_error_and_releases_the_lock(tmp_path):
    released = []
    logger = background.BackgroundLogger()
    try:
        logger.submit(_job(tmp_path, "c1"), lambda: released.append("c1"))
        logger._proc.kill()
        logger._proc.wait()
        with pytest.raises(TrackingError, match="the process finishing cells"):
            for cid in ("c2", "c3"):  # the first may still fit the dead pipe's buffer
                logger.submit(_job(tmp_path, cid), lambda cid=cid: released.append(cid))
            logger.drain()
        assert "c1" in released and logger.pending() == 0
    finally:
        logger.close()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pipe sizes are set with Linux's F_SETPIPE_SZ")
def test_the_hand_over_pipe_holds_a_whole_cell(tmp_path):
    """A cell's hand-over (~0.5 MB pickled at 208 questions x 10 passages) fits in the pipe, so the
    sweep does not wait for the child's reader thread to take it 64 KiB at a time."""
    import fcntl

    limit = int(Path("/proc/sys/fs/pipe-max-size").read_text())
    logger = background.BackgroundLogger()
    try:
        proc = logger._start()
        assert proc.stdin is not None
        assert fcntl.fcntl(proc.stdin.fileno(), fcntl.F_GETPIPE_SZ) >= min(limit, 1 << 20)
    finally:
        logger.close()


def test_the_child_runs_its_parents_code_whatever_the_working_directory_holds(tmp_path, monkeypatch):
    # A folder named rag_bench in the working directory (another checkout, an older version) came
    # first on the child's sys.path under `python -m`: the child ran that code -- here a finisher
    # that exits at once -- and every cell failed with "ended (exit code 0) before it was DONE".
    other = tmp_path / "elsewhere" / "rag_bench" / "tracking"
    other.mkdir(parents=True)
    for init in (other.parent / "__init__.py", other / "__init__.py"):
        init.write_text("")
    (other / "finisher.py").write_text("raise SystemExit(0)\n")
    monkeypatch.chdir(other.parents[1])
    logger = background.BackgroundLogger()
    try:
        logger.submit(_job(tmp_path, "c1"), lambda: None)
        logger.drain()
    finally:
        logger.close()
    assert (tmp_path / "exp" / "c1" / "DONE").is_file()


def test_a_child_dying_mid_run_leaves_the_run_failed_not_running(tmp_path):
    """The child killed after creating a cell's run, before finishing it: the cell is not DONE (a
    TrackingError names it) and its run is FAILED, not left RUNNING as if still being logged."""
    from rag_bench.locking import file_lock
    from rag_bench.tracking.base import DatasetInfo

    logger = background.BackgroundLogger()
    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    try:
        job = _job(tmp_path, "c2")  # made first: the same tracker arguments as c1's, so the child reuses c1's client
        logger.submit(_job(tmp_path, "c1"), lambda: None)
        logger.drain()  # the child holds its client: the next cell takes the store lock only for its dataset input
        job = dataclasses.replace(job, log_cell={**job.log_cell, "dataset": DatasetInfo("tiny", "d", "s", {}, {})})
        with file_lock(tmp_path / "mlflow.db.lock"):  # the child waits here, its run created and RUNNING
            logger.submit(job, lambda: None)
            exp_id = client.get_experiment_by_name("exp").experiment_id
            deadline = time.monotonic() + 120
            while not client.search_runs([exp_id], filter_string="tags.cell_id = 'c2'"):
                assert time.monotonic() < deadline
                time.sleep(0.1)
            assert logger._proc is not None
            logger._proc.kill()
        with pytest.raises(TrackingError, match="cell c2: the process finishing cells .* ended"):
            logger.drain()
    finally:
        logger.close()
    (run,) = client.search_runs([exp_id], filter_string="tags.cell_id = 'c2'")
    assert run.info.status == "FAILED" and not (tmp_path / "exp" / "c2" / "DONE").exists()


def test_reports_are_read_from_a_descriptor_numbered_above_1024():
    """A test worker that had run many sweeps in process held descriptors past 1024, and draining the
    background process's reports failed with 'filedescriptor out of range in select()': it is polled."""
    import resource

    from rag_bench.tracking.background import readable

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard <= 1500:
        pytest.skip(f"this process may open at most {hard} files")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 1600), hard))
    r, w = os.pipe()
    high = os.dup2(r, 1500)
    try:
        assert not readable(high, 0)
        os.write(w, b"ok 1 run\n")
        assert readable(high, 0) and os.read(high, 100) == b"ok 1 run\n"
        os.close(w)
        assert readable(high, None)  # the end closed: read gives b"", which says the child is gone
        assert os.read(high, 100) == b""
    finally:
        for fd in (r, high):
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_the_child_waits_for_a_free_core(tmp_path):
    """The background process runs at nice 10 (issue 57): on a 2-core machine its writing and storing
    took cores from the sweep's own torch threads."""
    logger = background.BackgroundLogger()
    try:
        logger.submit(_job(tmp_path, "c1"), lambda: None)
        logger.drain()  # the child has served a job: its priority is set
        assert logger._proc is not None
        child = os.getpriority(os.PRIO_PROCESS, logger._proc.pid)
        assert child == min(os.getpriority(os.PRIO_PROCESS, 0) + 10, 19)
    finally:
        logger.close()


def test_a_file_that_cannot_be_rendered_fails_the_cell_as_an_output_error(tmp_path):
    """The stored run is rendered in the background process (issue 57): a value it cannot store fails
    the cell as an output error naming it (not as MLflow's), nothing written, no DONE."""
    import functools

    import pandas as pd

    from rag_bench.cells import CellResult
    from rag_bench.errors import OutputError

    bad = CellResult(pd.DataFrame({"qid": ["q1"]}), {"n": 1}, "", "",
                     deferred={"question-runs.jsonl": functools.partial(int, [])})  # int([]): a TypeError
    job = background.LogJob(cell_id="c1", cell_dir=tmp_path / "exp" / "c1", done={"cell_id": "c1"},
                            write=({"pipeline": {"k": 3}}, bad))
    logger = background.BackgroundLogger()
    try:
        logger.submit(job, lambda: None)
        with pytest.raises(OutputError, match=r"cell c1: its files could not be rendered \(TypeError"):
            logger.drain()
    finally:
        with contextlib.suppress(Exception):
            logger.close()
    assert not (tmp_path / "exp" / "c1").exists()


def test_the_child_freezes_what_its_first_job_loaded(tmp_path, monkeypatch):
    """Issue 57: once its first job is reported (MLflow, SQLAlchemy and pyarrow loaded) the background
    process freezes its heap (rag_bench.heap): before, a full collection walked them every ~2 s of the
    squad2-normans grid (29 of ~0.2 s each)."""
    import io
    import queue

    import pandas as pd

    from rag_bench import heap
    from rag_bench.cells import CellResult
    from rag_bench.tracking import finisher

    out = io.BytesIO()
    calls: list[str] = []
    monkeypatch.setattr(heap, "freeze_loaded", lambda: calls.append(out.getvalue().decode()))
    jobs: queue.Queue = queue.Queue()
    for seq, cid in enumerate(("c1", "c2"), 1):
        result = CellResult(pd.DataFrame({"qid": ["q1"]}), {"n": 1}, "", "")
        jobs.put((seq, background.LogJob(cell_id=cid, cell_dir=tmp_path / "exp" / cid, done={"cell_id": cid},
                                         write=({"pipeline": {"k": 3}}, result))))
    jobs.put(None)
    assert finisher._finish_jobs(jobs, out) == 0
    assert calls == ["ok 1 \n"]  # once, right after the first job was reported
    assert out.getvalue().decode() == "ok 1 \nok 2 \n"
    assert (tmp_path / "exp" / "c2" / "DONE").is_file()


def test_a_second_child_takes_cells_only_once_the_first_falls_behind(tmp_path, monkeypatch):
    """A session's Finishers (issue 57): with MLflow's traces on two cores the one child was the
    sweep's critical path. A second child starts when the first, its imports done, holds
    MAX_PENDING cells; both log to the same store and every cell ends DONE and FINISHED."""
    monkeypatch.setattr(background, "MAX_PENDING", 2)
    monkeypatch.setenv("RAG_BENCH_FAILPOINT", "before_done:sleep=1")  # each cell takes the child a second
    pool = background.Finishers(size=2)
    try:
        pool.submit(_job(tmp_path, "c1"), lambda: None)
        pool.drain()  # the first child has reported a cell: it is started and keeps up
        assert len(pool.loggers) == 1
        pool.submit(_job(tmp_path, "c2"), lambda: None)
        pool.submit(_job(tmp_path, "c3"), lambda: None)
        assert len(pool.loggers) == 1 and pool.pending() == 2  # not behind yet: no second child
        pool.submit(_job(tmp_path, "c4"), lambda: None)  # the first holds MAX_PENDING cells
        assert len(pool.loggers) == 2 and [logger.pending() for logger in pool.loggers] == [2, 1]
        pool.wait_for(tmp_path / "exp" / "c4")
        assert (tmp_path / "exp" / "c4" / "DONE").is_file()
        pool.drain()
        pids = {logger._proc.pid for logger in pool.loggers if logger._proc is not None}
        assert len(pids) == 2
    finally:
        pool.close()
    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    exp_id = client.get_experiment_by_name("exp").experiment_id
    runs = client.search_runs([exp_id], filter_string="tags.`rag_bench.role` = 'cell'")
    assert sorted(r.data.tags["cell_id"] for r in runs) == ["c1", "c2", "c3", "c4"]
    assert {r.info.status for r in runs} == {"FINISHED"}
    assert len({r.data.tags["mlflow.parentRunId"] for r in runs}) == 1  # one parent run for both children


class _FakeLogger:
    """A child's calling side for Finishers' choice alone: pending cells, reports, errors."""

    made: list[_FakeLogger] = []

    def __init__(self) -> None:
        self.jobs: list[str] = []
        self.reported = 0
        self.error: Exception | None = None
        self.closed = False
        self.waits = background.Waits()
        _FakeLogger.made.append(self)

    def pending(self) -> int:
        return len(self.jobs)

    def poll(self) -> None:
        if self.error is not None:
            error, self.error = self.error, None
            raise error

    def submit(self, job, release) -> None:
        self.jobs.append(job)

    def close(self) -> None:
        self.closed = True
        self.poll()


def test_finishers_choose_the_least_busy_child_and_raise_every_childs_error(monkeypatch):
    _FakeLogger.made.clear()
    monkeypatch.setattr(background, "BackgroundLogger", _FakeLogger)
    monkeypatch.setattr(background, "MAX_PENDING", 2)
    pool = background.Finishers(size=2)
    for cell in ("a", "b", "c"):  # the first child has reported nothing (still importing): no second one
        pool.submit(cell, lambda: None)
    assert len(_FakeLogger.made) == 1
    first = _FakeLogger.made[0]
    first.reported = 1
    pool.submit("d", lambda: None)  # behind, its imports done: a second child takes the cell
    second = _FakeLogger.made[1]
    assert second.jobs == ["d"] and first.jobs == ["a", "b", "c"]
    pool.submit("e", lambda: None)
    assert second.jobs == ["d", "e"]  # the least busy child
    second.error = TrackingError("cell d: MLflow logging failed")
    released = []
    with pytest.raises(TrackingError, match="cell d"):
        pool.submit("f", lambda: released.append("f"))  # another child's error, raised at the next hand-over
    assert released == ["f"] and "f" not in first.jobs + second.jobs
    first.error = TrackingError("cell a: MLflow logging failed")
    with pytest.raises(TrackingError, match="cell a"):
        pool.close()
    assert first.closed and second.closed  # every child stopped, whichever raised


def test_one_core_one_child(monkeypatch):
    monkeypatch.setattr(background, "_cores", lambda: 1)
    assert background.Finishers().size == 1
    monkeypatch.setattr(background, "_cores", lambda: 2)
    assert background.Finishers().size == background.MAX_CHILDREN == 2


def test_a_log_file_whose_folder_was_removed_leaves_the_child_on_stderr(tmp_path):
    """The child logs to the file of the root logger's FileHandler; when that file's folder is gone
    (an earlier experiment removed: the suite's folders are removed once their tests pass) the
    child is started with standard error instead, and the cell is finished, not failed with
    FileNotFoundError at the hand-over."""
    gone = tmp_path / "gone" / ".hydra"
    gone.mkdir(parents=True)
    stale = logging.FileHandler(gone / "rag_bench.log", delay=True)
    root = logging.getLogger()
    root.handlers.insert(0, stale)  # the first FileHandler (pytest's own, /dev/null, comes later)
    try:
        shutil.rmtree(tmp_path / "gone")
        assert background._log_file() == str(gone / "rag_bench.log")
        logger = background.BackgroundLogger()
        try:
            logger.submit(_job(tmp_path, "c1"), lambda: None)  # raised FileNotFoundError before
            logger.drain()
        finally:
            logger.close()
        assert (tmp_path / "exp" / "c1" / "DONE").is_file() and not (tmp_path / "gone").exists()
    finally:
        root.removeHandler(stale)
        stale.close()


def test_the_wait_line_says_what_the_sweep_spent_on_its_children_and_the_console_hears_only_a_long_wait():
    line = background.wait_line(background.Waits(7.6, 1.7, 1.8, 180, 180), 2, 61.0)
    assert line == ("finishing cells in the background: the sweep waited 9.3 s of 61.0 s for them (7.6 s with "
                    f"{background.MAX_PENDING} cells pending, 1.7 s at the end) and spent 1.8 s handing them over; "
                    "180 cells, 180 logged to MLflow, 2 processes")
    assert background.wait_line(background.Waits(0.0, 0.1, 1.7, 180, 0), 1, 39.0).endswith(
        "180 cells, 0 logged to MLflow, 1 process")
    hint = background.wait_hint(background.Waits(7.6, 1.7, 1.8, 180, 180), 61.0)
    assert hint is not None and "9.3 s of 61.0 s for MLflow" in hint and "tracking.traces=false" in hint
    long_hint = background.wait_hint(background.Waits(7000.6, 1.7, 1.8, 9, 9), 19999.0)
    assert long_hint is not None and len(long_hint) <= 120  # the console's width (tests/test_demo_console.py)
    assert "written" in (background.wait_hint(background.Waits(5.0, 0.0, 1.0, 9, 0), 40.0) or "")
    assert background.wait_hint(background.Waits(2.0, 1.0, 1.0, 10, 10), 31.0) is None  # under a tenth
    assert background.wait_hint(background.Waits(0.5, 0.4, 0.1, 3, 3), 2.0) is None  # under a second
    total = background.Waits.total([background.Waits(1.0, 0.5, 0.25, 3, 2), background.Waits(2.0, 0.0, 0.5, 4, 4)])
    assert total == background.Waits(3.0, 0.5, 0.75, 7, 6)


def test_a_session_writes_how_long_the_sweep_waited_for_its_cells_to_the_log_file_only(tmp_path, caplog):
    """The 180-cell squad2-normans grid with MLflow's defaults waited seconds for its two children
    (measured with a temporary timer): the session now writes the figures to the log file when it
    closes (benchmarks/sweep.py reads them there), and the console passes the line by."""
    from rag_bench.logs import OwnRecords

    with caplog.at_level(logging.INFO, logger=background.__name__), background.session() as pool:
        for cid in ("w1", "w2", "w3"):
            pool.submit(_job(tmp_path, cid), lambda: None)
    said = [r for r in caplog.records if r.getMessage().startswith("finishing cells in the background")]
    assert len(said) == 1 and "3 cells, 3 logged to MLflow, 1 process" in said[0].getMessage()
    waited = float(said[0].getMessage().split("the sweep waited ")[1].split(" s")[0])
    assert waited > 0  # the child was still importing MLflow when the session closed: the end was waited for
    assert not OwnRecords().filter(said[0])  # the console's filter: the file's line only
    assert all((tmp_path / "exp" / cid / "DONE").is_file() for cid in ("w1", "w2", "w3"))
