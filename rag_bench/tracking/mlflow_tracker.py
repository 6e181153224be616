"""MLflow tracking: one parent run per sweep, one nested run per cell, artifacts = the cell folder.

Uses ``MlflowClient`` (no fluent global "active run"), so a crash in one cell cannot leave
another cell's run active. Re-running a cell replaces any earlier run of the same cell in the
experiment (an interrupted RUNNING run is first marked FAILED), so resumed sweeps never hold
duplicates.

Concurrency: every find-or-create against the store runs under an exclusive file lock
(``fcntl.flock``), so processes started at the same moment (two ``rag-bench run`` of the same
command, launcher workers, ``rag-bench sync``) neither crash nor duplicate anything:

- store lock: creating the client (which creates and migrates a new SQLite store) and finding or
  creating the experiment;
- sweep lock, keyed on (store, experiment, sweep id): finding or creating the sweep's parent run;
- cell lock, keyed on (store, experiment, cell id): the whole find / delete / create / log /
  terminate sequence of a cell's run, so a cell ends with exactly one live run, FINISHED.
  Inside it the store lock is taken once more, briefly, to log the dataset input (whose row is
  shared by every run of the experiment); no code waits for a cell lock while holding the store
  lock, so the nesting cannot deadlock.

For a ``sqlite:///`` store the lock files sit next to the database (``<db>.lock`` for the store,
``.<db>.<kind>-<digest>.lock`` for the others), so every process writing that file shares them
whatever its output root. For any other URI (an HTTP server) they sit in the output root
(``.mlflow-<kind>-<digest>.lock``): processes sharing that folder are covered (on another machine
too, if its file system honours ``flock``, as local disks and NFSv4 do), but processes with
different output roots -- or on machines that share only the server -- are not; for those
``create_experiment`` still recovers from losing the race, but two runs of one cell can then exist.
Lock files are removed when released.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import logging
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from rag_bench.errors import ConfigError, TrackingError
from rag_bench.evaluation.scorer import mlflow_name
from rag_bench.faults import failpoint
from rag_bench.locking import file_lock
from rag_bench.tracking import wal
from rag_bench.tracking.base import DatasetInfo
from rag_bench.tracking.batches import log_batches
from rag_bench.tracking.parents import PARENT_RUNS as _PARENTS  # (uri, experiment, sweep_id) -> parent run id
from rag_bench.tracking.server import unreachable
from rag_bench.tracking.store_seed import keep_template, seed_store
from rag_bench.tracking.traces import delete_run_traces, log_traces, missing, question_traces, sample
from rag_bench.tracking.wal import use_wal

log = logging.getLogger(__name__)

# (uri, experiment) -> id of each experiment this process created: a run that fails before it
# logs a cell (a dataset folder that does not exist, a bad config) removes it again (finish_all).
_CREATED: dict[tuple[str, str], str] = {}
# Experiment tag of an experiment finish_all deleted (on a store where it cannot be erased): the
# next run of that name restores it rather than calling it deleted by someone.
DELETED_BY_US = "rag_bench.deleted"

# MLflow's tag listing a run's table artifacts (what the UI's artifact and evaluation views read).
LOGGED_ARTIFACTS = "mlflow.loggedArtifacts"
# The experiment tag MLflow 3's UI reads to choose its default view (runs, or GenAI traces).
EXPERIMENT_KIND = "mlflow.experimentKind"
# Run tag: how many per-question traces the run has (tracking.traces), or why they failed.
TRACES_TAG = "rag_bench.traces"
# Run tag: how many of the cell's questions have no trace yet (a sampled cell: `rag-bench traces` writes them).
UNTRACED_TAG = "rag_bench.traces_missing"
TRACE_SAMPLE = 10  # tracking.trace_sample's default (conf/tracking/mlflow.yaml)
QUESTIONS_TABLE = "questions.json"
LEADERBOARD_TABLE = "leaderboard.json"


def _log_dataset(client: Any, run_id: str, info: DatasetInfo) -> None:
    from mlflow.entities import Dataset, DatasetInput, InputTag

    entity = Dataset(name=info.name[:500], digest=info.digest[:36], source_type="local",
                     source=json.dumps({"uri": info.source}), schema=json.dumps(info.schema),
                     profile=json.dumps(info.profile))
    client.log_inputs(run_id, datasets=[DatasetInput(dataset=entity, tags=[InputTag("mlflow.data.context", "eval")])])


def tracking_uri(output_root: Path, setting: str | None = None) -> str:
    """The tracking URI: ``setting``, else ``$MLFLOW_TRACKING_URI``, else the local SQLite file
    ``<output_root>/mlflow.db`` (no server needed). Every reader and writer resolves it here."""
    return setting or os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{output_root.resolve() / 'mlflow.db'}"


class MlflowTracker:
    """Parameters
    ----------
    uri:
        Tracking URI. None = ``$MLFLOW_TRACKING_URI`` if set, else a local SQLite file
        ``<output.root>/mlflow.db`` (no server needed).
    required:
        When False and the server is unreachable, the run goes on and results stay in the cell
        folders only (a warning says so).
    background:
        In a sweep of ``rag-bench run -m``, log each cell from a child process while the next
        cell runs (:mod:`rag_bench.tracking.background`; a cell is still DONE only once its run
        is FINISHED). False: log in the sweep's process.
    traces:
        Log the cell's questions as MLflow traces linked to the cell's run, with their stage
        spans and assessments (:mod:`rag_bench.tracking.traces`). False: none.
    trace_sample:
        How many questions of each cell are traced when the cell is logged (the same questions in
        every cell: :func:`rag_bench.tracking.traces.sample`); None: every question. The run's
        tag ``rag_bench.traces_missing`` counts the others, which ``rag-bench traces CELL``
        writes on demand (:meth:`complete_traces`).
    """

    def __init__(self, uri: str | None = None, required: bool = True, background: bool = True,
                 traces: bool = True, trace_sample: int | None = TRACE_SAMPLE) -> None:
        self.uri_setting = uri
        self.required = bool(required)
        self.background = bool(background)
        self.traces = bool(traces)
        if trace_sample is not None and (isinstance(trace_sample, bool) or not isinstance(trace_sample, int)
                                         or trace_sample < 1):
            raise ConfigError(f"tracking.trace_sample={trace_sample!r}: must be a whole number of questions >= 1, "
                              "or null for every question -- fix: tracking.trace_sample=10, "
                              "tracking.trace_sample=null (every question traced during the sweep) or "
                              "tracking.traces=false (none)")
        self.trace_sample = trace_sample
        self.uri = ""
        self.experiment = "default"
        self.sweep_id = ""
        self.parent_run: str | None = None
        self.output_root = Path("experiments")
        self._client: Any = None
        self._exp_id: str | None = None
        self._disabled = False

    def bind(self, *, output_root: Path, experiment: str, sweep_id: str, parent_run: str | None = None) -> None:
        """Resolve the URI and remember the experiment, the sweep and its parent run (when the
        launching process opened it: :class:`rag_bench.runner.sweep_context.SweepContext`)."""
        self.output_root = output_root.resolve()
        self.experiment = experiment
        self.sweep_id = sweep_id
        self.parent_run = parent_run
        self.uri = tracking_uri(self.output_root, self.uri_setting)

    def _sqlite_path(self) -> Path | None:
        return Path(self.uri[len("sqlite:///"):]) if self.uri.startswith("sqlite:///") else None

    def _lock(self, kind: str, key: str = "") -> contextlib.AbstractContextManager[None]:
        """The cross-process lock of ``kind`` ("store", "sweep", "cell") for ``key`` in this store
        and experiment (placement: see the module docstring)."""
        db = self._sqlite_path()
        if kind == "store" and db is not None:
            return file_lock(db.with_name(db.name + ".lock"))
        digest = hashlib.sha256("\0".join((self.uri, self.experiment, kind, key)).encode()).hexdigest()[:16]
        if db is not None:
            return file_lock(db.with_name(f".{db.name}.{kind}-{digest}.lock"))
        return file_lock(self.output_root / f".mlflow-{kind}-{digest}.lock")

    def _get_client(self) -> Any:
        if self._client is None:
            from mlflow.tracking import MlflowClient

            db = self._sqlite_path()
            if db is not None:
                db.parent.mkdir(parents=True, exist_ok=True)
            # Creating the client opens the store: for a new SQLite file that creates the tables and
            # runs the schema migrations, which two processes doing at once break. A new file is
            # first seeded from an empty store kept once per MLflow version (1.5 s -> ~30 ms).
            # A SQLite store is put in WAL mode (:mod:`rag_bench.tracking.wal`: a commit without an
            # fsync), before the client's first connection -- or, for a store MLflow makes itself,
            # once it is kept as the template (whose copy must not leave tables in the log file).
            with self._lock("store"):
                fresh = db is not None and not db.exists() and not seed_store(db)
                if db is not None and not fresh:
                    use_wal(db)
                self._client = MlflowClient(tracking_uri=self.uri)
                if fresh and db is not None:
                    keep_template(db)  # the first store MLflow makes here: the template of the next
                    use_wal(db)
        return self._client

    def check(self) -> None:
        """Probe an HTTP server's /health with a short timeout before any work starts."""
        reason = unreachable(self.uri)
        if reason is None:
            return
        msg = (f"MLflow tracking server {self.uri} is unreachable ({reason}) -- fix: start it, point "
               "MLFLOW_TRACKING_URI elsewhere, or run with tracking.required=false (results stay in "
               "the cell folders) or tracking=none")
        if self.required:
            raise TrackingError(msg)
        log.warning("%s; continuing without MLflow", msg)
        self._disabled = True

    def _experiment_id(self) -> str:
        if self._exp_id is not None:
            return self._exp_id
        from mlflow.exceptions import MlflowException

        client = self._get_client()
        with self._lock("store"):
            exp = client.get_experiment_by_name(self.experiment)
            if exp is not None and exp.lifecycle_stage == "deleted" and exp.tags.get(DELETED_BY_US):
                client.restore_experiment(exp.experiment_id)  # removed by a failed run of ours: back
                client.delete_experiment_tag(exp.experiment_id, DELETED_BY_US)
            elif exp is not None and exp.lifecycle_stage == "deleted":
                raise TrackingError(
                    f"MLflow experiment '{self.experiment}' (id {exp.experiment_id}) at {self.uri} is deleted, "
                    "and its name stays taken -- fix: restore it (`mlflow experiments restore --experiment-id "
                    f"{exp.experiment_id}` with MLFLOW_TRACKING_URI={self.uri}), erase it for good (`mlflow gc`), "
                    "or run under another experiment.name")
            if exp is not None:
                exp_id = str(exp.experiment_id)
            else:
                artifact_location = None
                if self.uri.startswith("sqlite:///"):
                    artifact_location = (self.output_root / "mlartifacts").as_uri()
                try:
                    # The experiment opens on its runs in MLflow 3's UI (the kind the UI would
                    # otherwise infer from an empty experiment is GenAI, an empty Traces page).
                    exp_id = client.create_experiment(self.experiment, artifact_location=artifact_location,
                                                      tags={EXPERIMENT_KIND: "custom_model_development"})
                    _CREATED[(self.uri, self.experiment)] = str(exp_id)
                except MlflowException:
                    # Another process not sharing our lock created it meanwhile (an HTTP server).
                    exp = client.get_experiment_by_name(self.experiment)
                    if exp is None:
                        raise
                    exp_id = str(exp.experiment_id)
            if self._sqlite_path() is not None and self.experiment != DEFAULT_NAME:
                _drop_empty_default(client)
        self._exp_id = exp_id
        return exp_id

    def prepare(self) -> str | None:
        """Create the store, the experiment and the sweep's parent run up front (in the launching
        process), so parallel launcher workers neither race to initialise a SQLite store nor
        create two parents. Its id goes to the workers in the sweep's context (``bind(parent_run=)``)."""
        self.check()
        if self._disabled:
            return None
        return self._parent(self._experiment_id())

    def _parent(self, exp_id: str) -> str:
        key = (self.uri, self.experiment, self.sweep_id)
        if key in _PARENTS:
            return _PARENTS[key]
        if self.parent_run:
            _PARENTS[key] = self.parent_run  # opened by the launching process
            return self.parent_run
        client = self._get_client()
        with self._lock("sweep", self.sweep_id):  # two processes of one sweep: one parent
            found = client.search_runs([exp_id], filter_string=f"tags.sweep_id = '{self.sweep_id}'",
                                       max_results=1)
            if found:
                run_id = found[0].info.run_id
                client.update_run(run_id, status="RUNNING")
            else:
                # Named after the experiment and when the sweep started (its id stays a tag).
                run_id = client.create_run(exp_id, run_name=f"{self.experiment} {time.strftime('%Y-%m-%d %H:%M')}",
                                           tags={"sweep_id": self.sweep_id, "rag_bench.role": "sweep"}).info.run_id
        _PARENTS[key] = run_id
        return run_id

    def log_cell(self, *, cell_id: str, cell_dir: Path, params: dict[str, Any], metrics: dict[str, float],
                 tags: dict[str, str], run_name: str | None = None, dataset: DatasetInfo | None = None,
                 table: Any = None, written: Any = None) -> str | None:
        """Create, fill and finish the cell's nested run (FAILED if anything goes wrong).

        One run holds: ``params`` (the resolved config), ``metrics`` (timestamped now), ``tags``
        (plus ``mlflow.parentRunId``), the dataset as an MLflow input, the cell folder as artifacts
        and ``table`` (per-question results) as ``questions.json``, MLflow's table artifact. It is
        written in as few calls as the store allows: one batch of metrics, params and tags (a
        second only past 100 params), the input, the artifacts, the status. With ``traces``,
        each question is also a trace linked to the run (:mod:`rag_bench.tracking.traces`), and
        an earlier run of the cell is deleted with its traces. ``written``: the
        :class:`~rag_bench.cells.CellResult` just written to ``cell_dir`` when the caller holds it
        (the sweep's background process): the traces are built from its records and metrics
        instead of reading the folder's records.parquet back (~25 ms a squad2-normans cell).

        The whole sequence holds the cell's lock: a process logging the same cell at the same
        moment waits, then replaces this run by its own, so one live run remains, FINISHED."""
        if self._disabled:
            return None
        from mlflow.entities import Metric, Param

        client = self._get_client()
        exp_id = self._experiment_id()
        parent = self._parent(exp_id)  # before the cell lock: locks are always taken store, sweep, cell
        now = int(time.time() * 1000)
        run_tags = {**tags, "cell_id": cell_id, "mlflow.parentRunId": parent, "rag_bench.role": "cell"}
        if table is not None:
            run_tags[LOGGED_ARTIFACTS] = json.dumps([{"path": QUESTIONS_TABLE, "type": "table"}])
        with self._lock("cell", cell_id):
            for old in client.search_runs([exp_id], filter_string=f"tags.cell_id = '{cell_id}'"):
                if old.info.status == "RUNNING":
                    client.set_terminated(old.info.run_id, "FAILED")
                if self.traces:  # the replaced run's traces go with it: one set per cell
                    delete_run_traces(self._tracing(), exp_id, old.info.run_id)
                client.delete_run(old.info.run_id)
            run = client.create_run(exp_id, start_time=now, run_name=run_name or cell_id, tags=run_tags)
            run_id = run.info.run_id
            try:
                failpoint("mlflow_run_created")
                plist = [Param(k, str(v)[:6000]) for k, v in sorted(params.items())]
                mlist = [Metric(mlflow_name(k), float(v), now, 0) for k, v in sorted(metrics.items())]
                # The traces first: the tags counting them go in the run's one batch (a call and a
                # commit fewer per cell)
                counted = self._log_traces(exp_id, run_id, cell_id, cell_dir, written) if self.traces else []
                log_batches(client, run_id, mlist, plist, counted)
                if dataset is not None:
                    self._log_dataset(client, run_id, dataset)
                client.log_artifacts(run_id, str(cell_dir))
                if table is not None:
                    with tempfile.TemporaryDirectory(prefix="rag_bench_table_") as tmp:
                        path = Path(tmp) / QUESTIONS_TABLE
                        table.to_json(path, orient="split", index=False, date_format="iso", default_handler=str)
                        client.log_artifact(run_id, str(path))
            except BaseException:
                client.set_terminated(run_id, "FAILED")
                raise
            client.set_terminated(run_id, "FINISHED", end_time=int(time.time() * 1000))
        return run_id

    def _tracing(self) -> Any:
        from mlflow.tracing.client import TracingClient

        return TracingClient(self.uri)

    def _log_traces(self, exp_id: str, run_id: str, cell_id: str, cell_dir: Path, written: Any = None) -> list[Any]:
        """The traces of the cell's sampled questions (``trace_sample``), from its records.parquet
        and metrics.json (or ``written``, the result they were written from); returned: the run
        tags counting them and the questions left untraced, for the run's batch. Best effort: the
        run holds the cell's results, so a failure here is a warning and a run tag
        (``rag_bench.traces``), the traces logged so far are removed, and the cell is still
        FINISHED and DONE."""
        from mlflow.entities import RunTag

        tracing = self._tracing()
        try:
            records, metrics = (written.records, written.metrics) if written is not None else _cell_records(cell_dir)
            qids = [str(q) for q in records["qid"]]
            # only the sampled questions' traces are built (building all 208 took as long as writing 10)
            ids = log_traces(tracing, exp_id, run_id, cell_id,
                             question_traces(records, metrics, sample(qids, self.trace_sample)),
                             is_local=self._local())
            return [RunTag(TRACES_TAG, str(len(ids))), RunTag(UNTRACED_TAG, str(len(qids) - len(ids)))]
        except Exception as exc:  # noqa: BLE001 -- the traces are a view of the run; the cell is kept
            log.warning("cell %s: its MLflow traces were not logged (%s: %s); the run and the cell are kept",
                        cell_id, type(exc).__name__, exc)
            with contextlib.suppress(Exception):
                delete_run_traces(tracing, exp_id, run_id)
            return [RunTag(TRACES_TAG, f"failed: {type(exc).__name__}: {exc}"[:5000])]

    def _local(self) -> bool:
        return not self.uri.startswith(("http://", "https://"))

    def complete_traces(self, cell_id: str, cell_dir: Path, run_id: str | None = None) -> tuple[int, int]:
        """Write the traces the cell's run lacks (the questions a sweep's sample left out, or
        those of a run logged with ``traces=false``), replacing incomplete ones (a writer killed
        mid-way); return (written, already there). ``run_id``: the cell's run, else its FINISHED
        run in this experiment. Running it twice writes nothing the second time. Raises
        :class:`TrackingError` when the cell has no FINISHED run here."""
        from mlflow.entities import RunTag
        from mlflow.exceptions import MlflowException

        if self._disabled:
            raise TrackingError(f"cell {cell_id}: MLflow is not reachable at {self.uri}, no traces written "
                                "-- fix: start the server or pass --tracking-uri")
        db = self._sqlite_path()
        if db is not None and not db.is_file():  # not made here (and not to be made empty by this call)
            raise TrackingError(f"cell {cell_id} ({cell_dir}): no MLflow store at {db} -- fix: pass the "
                                f"--tracking-uri the sweep logged to, or `rag-bench sync {cell_dir.parent}` to "
                                "upload the cells first")
        client = self._get_client()
        if client.get_experiment_by_name(self.experiment) is None:  # not made here: nothing to complete
            raise TrackingError(f"cell {cell_id} ({cell_dir}): MLflow at {self.uri} has no experiment "
                                f"'{self.experiment}' -- fix: pass the --tracking-uri the sweep logged to, or "
                                f"`rag-bench sync {cell_dir.parent}` to upload the cells first")
        exp_id = self._experiment_id()
        try:
            run = client.get_run(run_id) if run_id else None
        except MlflowException:  # DONE names a run deleted since (the cell re-logged elsewhere): look it up
            run = None
        if run is None or run.info.lifecycle_stage != "active":
            found = self.finished_run(cell_id)
            run = client.get_run(found) if found else None
        if run is None or run.info.status != "FINISHED" or run.info.lifecycle_stage != "active" or \
                str(run.info.experiment_id) != str(exp_id):
            raise TrackingError(f"cell {cell_id} ({cell_dir}) has no FINISHED run in MLflow experiment "
                                f"'{self.experiment}' at {self.uri} -- fix: `rag-bench sync {cell_dir.parent}` "
                                "uploads it first, or pass the --tracking-uri the sweep logged to")
        tracing = self._tracing()
        traces = question_traces(*_cell_records(cell_dir))
        with self._lock("cell", cell_id):  # one writer per cell: a second waits, then finds them written
            todo, stale = missing(tracing, exp_id, run.info.run_id, traces)
            for i in range(0, len(stale), 100):
                tracing.delete_traces(experiment_id=exp_id, trace_ids=stale[i:i + 100])
            written = log_traces(tracing, exp_id, run.info.run_id, cell_id, todo, is_local=self._local()) \
                if todo else []
            client.log_batch(run.info.run_id, tags=[RunTag(TRACES_TAG, str(len(traces))), RunTag(UNTRACED_TAG, "0")])
        return len(written), len(traces) - len(todo)

    def background_job(self, log_cell: dict[str, Any], done: dict[str, Any]) -> Any:
        """The :class:`~rag_bench.tracking.background.LogJob` logging a cell as :meth:`log_cell`
        (``log_cell``: its arguments) and then writing DONE (``done``: the body, without the run
        id and :meth:`describe`); None when this tracker logs in the calling process
        (``background=false``, or MLflow skipped)."""
        if self._disabled or not self.background:
            return None
        from rag_bench.tracking.background import LogJob

        cell_id = str(log_cell["cell_id"])
        tracker = {"uri": self.uri_setting, "required": self.required, "background": False,
                   "traces": self.traces, "trace_sample": self.trace_sample}
        bind = {"output_root": self.output_root, "experiment": self.experiment, "sweep_id": self.sweep_id,
                "parent_run": _PARENTS.get((self.uri, self.experiment, self.sweep_id), self.parent_run)}
        return LogJob(cell_id=cell_id, cell_dir=Path(log_cell["cell_dir"]), done=done, tracker=tracker, bind=bind,
                      log_cell=log_cell, parent_key=(self.uri, self.experiment, self.sweep_id),
                      on_death=functools.partial(_fail_running, tracker, bind, cell_id))

    def _log_dataset(self, client: Any, run_id: str, info: DatasetInfo) -> None:
        """The dataset input, under the store lock: the first run to log a dataset inserts its row
        (unique per experiment, name and digest), so two workers of one sweep doing it at the same
        moment collide (``UNIQUE constraint failed``); one retry finds the row the other made."""
        from mlflow.exceptions import MlflowException

        with self._lock("store"):
            try:
                _log_dataset(client, run_id, info)
            except MlflowException:  # another process not sharing our lock (an HTTP server) won the race
                _log_dataset(client, run_id, info)

    def finished_run(self, cell_id: str) -> str | None:
        """Id of a FINISHED run of ``cell_id`` in this experiment, None when there is none."""
        if self._disabled:
            return None
        found = self._get_client().search_runs(
            [self._experiment_id()], filter_string=f"tags.cell_id = '{cell_id}' and attributes.status = 'FINISHED'",
            max_results=1)
        return str(found[0].info.run_id) if found else None

    def fail_running(self, cell_id: str) -> list[str]:
        """Mark FAILED the runs of ``cell_id`` in this experiment still RUNNING (the process logging
        the cell died between creating its run and finishing it); return their ids."""
        if self._disabled:
            return []
        client = self._get_client()
        exp_id = self._experiment_id()
        with self._lock("cell", cell_id):
            found = client.search_runs([exp_id], filter_string=f"tags.cell_id = '{cell_id}' and "
                                                              "attributes.status = 'RUNNING'")
            for run in found:
                client.set_terminated(run.info.run_id, "FAILED")
        return [str(run.info.run_id) for run in found]

    def describe(self) -> dict[str, str | None]:
        """Tracking URI, experiment and the sweep's parent run id (None when MLflow was skipped)."""
        parent = _PARENTS.get((self.uri, self.experiment, self.sweep_id))
        return {"tracking": "none" if self._disabled else "mlflow", "tracking_uri": self.uri,
                "mlflow_experiment": self.experiment, "parent_run_id": parent}

    def finish_sweep(self, ok: bool) -> None:
        """Mark this sweep's parent run FINISHED (or FAILED)."""
        key = (self.uri, self.experiment, self.sweep_id)
        run_id = _PARENTS.pop(key, None)
        if run_id is not None:
            self._get_client().set_terminated(run_id, "FINISHED" if ok else "FAILED")


def _cell_records(cell_dir: Path) -> tuple[Any, dict[str, Any]]:
    """A cell folder's records.parquet (a DataFrame) and metrics.json (empty when absent)."""
    import pandas as pd

    records = pd.read_parquet(cell_dir / "records.parquet")
    metrics_file = cell_dir / "metrics.json"
    metrics = json.loads(metrics_file.read_text(encoding="utf-8")) if metrics_file.exists() else {}
    return records, metrics


def summarize_sweeps(leaderboard: Any, best: dict[str, float], params: dict[str, Any], note: str, *,
                     key: str | None = None, problem: str | None = None) -> None:
    """Fill the parent run of every sweep this process opened: ``params`` (the sweep's axes and
    size), the best cell's ``best`` metrics, a ``mlflow.note.content`` and the ``leaderboard``
    (a DataFrame) as the table artifact ``leaderboard.json``. With ``key`` (the primary measure
    that ranked the leaderboard, best first, with ``ci_lo``/``ci_hi``) or ``problem`` (why the
    cells are not ranked), each cell's run gets its rank, primary measure and CI, and the
    experiment its ranked view and description (:func:`rag_bench.tracking.view.publish`). Best
    effort: a tracking problem is a warning here, every cell's own run is already FINISHED."""
    if not _PARENTS:
        return
    from mlflow.entities import Metric, Param, RunTag
    from mlflow.tracking import MlflowClient

    from rag_bench.tracking.view import publish

    now = int(time.time() * 1000)
    published: set[tuple[str, str]] = set()
    for (uri, _exp, _sweep), run_id in list(_PARENTS.items()):
        client = MlflowClient(tracking_uri=uri)
        if (key is not None or problem is not None) and (uri, _exp) not in published:
            published.add((uri, _exp))
            try:
                exp_id = client.get_run(run_id).info.experiment_id
                publish(client, exp_id, leaderboard.to_dict("records") if key is not None else
                        [{"cell": c} for c in leaderboard["cell"]], key, problem=problem)
            except Exception as exc:  # noqa: BLE001 -- the cells are tracked; the view is a courtesy
                log.warning("could not label the ranked cells' MLflow runs at %s: %s", uri, exc)
        try:
            fresh, changed = _unchanged_params(client, run_id, [Param(k, str(v)[:6000]) for k, v in sorted(params.items())])
            log_batches(client, run_id, [Metric(mlflow_name(k), float(v), now, 0) for k, v in sorted(best.items())],
                         fresh, [RunTag("mlflow.note.content", note),
                                 RunTag(LOGGED_ARTIFACTS, json.dumps([{"path": LEADERBOARD_TABLE, "type": "table"}])),
                                 *(RunTag(p.key, p.value) for p in changed)])
            with tempfile.TemporaryDirectory(prefix="rag_bench_table_") as tmp:
                path = Path(tmp) / LEADERBOARD_TABLE
                leaderboard.to_json(path, orient="split", index=False, date_format="iso", default_handler=str)
                client.log_artifact(run_id, str(path))
        except Exception as exc:  # noqa: BLE001 -- the cells are tracked; the summary is a courtesy
            log.warning("could not fill the sweep's MLflow run %s at %s: %s", run_id, uri, exc)


def _unchanged_params(client: Any, run_id: str, params: list[Any]) -> tuple[list[Any], list[Any]]:
    """``(params to log, params whose value changed)``: the same command run again reuses its
    sweep's parent run, and MLflow refuses to change a param (the dataset gained a question, another
    cell is best), which lost the whole summary. A changed param keeps its first value; the new one
    goes to the tag of that name (the caller's), with a warning."""
    have = client.get_run(run_id).data.params
    changed = [p for p in params if p.key in have and have[p.key] != p.value]
    if changed:
        log.warning("the sweep's MLflow run %s keeps the params of its first summary (MLflow params cannot change): "
                    "%s; this summary's values are the run's tags of those names", run_id,
                    ", ".join(f"{p.key} {have[p.key]!r} -> {p.value!r}" for p in changed))
    return [p for p in params if p.key not in have], changed


def _fail_running(tracker: dict[str, Any], bind: dict[str, Any], cell_id: str) -> None:
    """:meth:`MlflowTracker.fail_running` of ``cell_id`` by a tracker built from a background job's
    ``tracker`` and ``bind`` arguments (the job's ``on_death``: its process died with the cell pending)."""
    t = MlflowTracker(**tracker)
    t.bind(**bind)
    t.fail_running(cell_id)


def finish_all(ok: bool) -> None:
    """Close every parent run this process opened (called once the sweep ends or fails):
    FINISHED, or FAILED. The parent is opened before the first cell (:meth:`MlflowTracker.prepare`),
    so a sweep that fails before any cell is logged (a bad input, a plugin that raises) would
    leave it empty: such a parent is marked FAILED and deleted, and so is the experiment when this
    process created it and it holds no run (MLflow listed it first, empty, among its "Recent
    experiments"; its name is free again). A failed sweep's parent holding cells (logged now or
    by an earlier run of the same sweep) is kept, FAILED."""
    if not _PARENTS:
        _CREATED.clear()
        return  # nothing opened (tracking=none): do not pay for importing mlflow
    from mlflow.tracking import MlflowClient

    for (uri, name, _sweep), run_id in list(_PARENTS.items()):
        client = MlflowClient(tracking_uri=uri)
        client.set_terminated(run_id, "FINISHED" if ok else "FAILED")
        if not ok:
            try:
                exp_id = client.get_run(run_id).info.experiment_id
                if not client.search_runs([exp_id], filter_string=f"tags.`mlflow.parentRunId` = '{run_id}'",
                                          max_results=1):
                    client.delete_run(run_id)
                    if _CREATED.get((uri, name)) == str(exp_id) and not client.search_runs([exp_id], max_results=1):
                        _remove_experiment(client, uri, exp_id, run_id)
            except Exception as exc:  # noqa: BLE001 -- the sweep's own error is the one to report
                log.warning("could not delete the empty MLflow run %s of a failed sweep at %s: %s", run_id, uri, exc)
    _PARENTS.clear()
    _CREATED.clear()
    wal.release()  # the sweep's store left with no descriptor open in this process


DEFAULT_NAME = "Default"  # MLflow's own experiment (id 0), made with every new store


def _drop_empty_default(client: Any) -> None:
    """Delete MLflow's own ``Default`` experiment from a local store when it holds no run, so
    MLflow's UI lists one default (rag_bench's ``experiment.name`` is ``default``). Soft: MLflow
    makes no new one while a deleted one exists. A Default holding runs is kept."""
    from mlflow.entities import ViewType

    try:
        exp = client.get_experiment_by_name(DEFAULT_NAME)
        if exp is None or exp.lifecycle_stage != "active":
            return
        if not client.search_runs([exp.experiment_id], run_view_type=ViewType.ALL, max_results=1):
            client.delete_experiment(exp.experiment_id)
    except Exception as exc:  # noqa: BLE001 -- a courtesy to the UI; the run goes on
        log.debug("MLflow's Default experiment was not dropped: %s", exc)


def _remove_experiment(client: Any, uri: str, exp_id: str, parent: str) -> None:
    """An experiment this process created for a run that failed before logging a cell: erased
    from a local SQLite store (with its deleted parent run, as ``mlflow gc`` does); on a server,
    deleted and tagged so the next run of that name restores it."""
    client.set_experiment_tag(exp_id, DELETED_BY_US, "a run that failed before its first cell")
    client.delete_experiment(exp_id)
    if not uri.startswith("sqlite:///"):
        return
    store = client._tracking_client.store
    try:
        store._hard_delete_run(parent)
        store._hard_delete_experiment(exp_id)
    except Exception as exc:  # noqa: BLE001 -- still deleted (and restored by the next run of the name)
        log.debug("MLflow experiment %s deleted but not erased: %s", exp_id, exc)
