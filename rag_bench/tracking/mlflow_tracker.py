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
import hashlib
import logging
import os
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from rag_bench.errors import TrackingError
from rag_bench.faults import failpoint
from rag_bench.locking import file_lock
from rag_bench.metrics.measures import mlflow_name

log = logging.getLogger(__name__)

_PARENTS: dict[tuple[str, str, str], str] = {}  # (uri, experiment, sweep_id) -> parent run id
PARENT_ENV = "RAG_BENCH_PARENT_RUN_ID"


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
    """

    def __init__(self, uri: str | None = None, required: bool = True) -> None:
        self.uri_setting = uri
        self.required = bool(required)
        self.uri = ""
        self.experiment = "default"
        self.sweep_id = ""
        self.output_root = Path("experiments")
        self._client: Any = None
        self._exp_id: str | None = None
        self._disabled = False

    def bind(self, *, output_root: Path, experiment: str, sweep_id: str) -> None:
        """Resolve the URI and remember the experiment and sweep."""
        self.output_root = output_root.resolve()
        self.experiment = experiment
        self.sweep_id = sweep_id
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
            # runs the schema migrations, which two processes doing at once break.
            with self._lock("store"):
                self._client = MlflowClient(tracking_uri=self.uri)
        return self._client

    def check(self) -> None:
        """Probe an HTTP server's /health with a short timeout before any work starts."""
        if not self.uri.startswith(("http://", "https://")):
            return
        try:
            with urllib.request.urlopen(self.uri.rstrip("/") + "/health", timeout=5) as resp:
                if resp.status == 200:
                    return
                reason = f"HTTP {resp.status}"
        except (urllib.error.URLError, OSError) as exc:
            reason = str(getattr(exc, "reason", exc))
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
            if exp is not None:
                exp_id = str(exp.experiment_id)
            else:
                artifact_location = None
                if self.uri.startswith("sqlite:///"):
                    artifact_location = (self.output_root / "mlartifacts").as_uri()
                try:
                    exp_id = client.create_experiment(self.experiment, artifact_location=artifact_location)
                except MlflowException:
                    # Another process not sharing our lock created it meanwhile (an HTTP server).
                    exp = client.get_experiment_by_name(self.experiment)
                    if exp is None:
                        raise
                    exp_id = str(exp.experiment_id)
        self._exp_id = exp_id
        return exp_id

    def prepare(self) -> str | None:
        """Create the store, the experiment and the sweep's parent run up front (in the launching
        process), so parallel launcher workers neither race to initialise a SQLite store nor
        create two parents. Workers find the parent through ``RAG_BENCH_PARENT_RUN_ID``."""
        self.check()
        if self._disabled:
            return None
        parent = self._parent(self._experiment_id())
        os.environ[PARENT_ENV] = f"{self.uri}|{self.experiment}|{self.sweep_id}|{parent}"
        return parent

    def _parent(self, exp_id: str) -> str:
        key = (self.uri, self.experiment, self.sweep_id)
        if key in _PARENTS:
            return _PARENTS[key]
        uri, exp, sweep, run_id = (os.environ.get(PARENT_ENV, "").split("|") + ["", "", "", ""])[:4]
        if (uri, exp, sweep) == key and run_id:
            _PARENTS[key] = run_id  # created by the launching process
            return run_id
        client = self._get_client()
        with self._lock("sweep", self.sweep_id):  # two processes of one sweep: one parent
            found = client.search_runs([exp_id], filter_string=f"tags.sweep_id = '{self.sweep_id}'",
                                       max_results=1)
            if found:
                run_id = found[0].info.run_id
                client.update_run(run_id, status="RUNNING")
            else:
                run_id = client.create_run(exp_id, run_name=f"sweep-{self.sweep_id[:8]}",
                                           tags={"sweep_id": self.sweep_id, "rag_bench.role": "sweep"}).info.run_id
        _PARENTS[key] = run_id
        return run_id

    def log_cell(self, *, cell_id: str, cell_dir: Path, params: dict[str, Any], metrics: dict[str, float],
                 tags: dict[str, str]) -> str | None:
        """Create, fill and finish the cell's nested run (FAILED if anything goes wrong).

        The whole sequence holds the cell's lock: a process logging the same cell at the same
        moment waits, then replaces this run by its own, so one live run remains, FINISHED."""
        if self._disabled:
            return None
        from mlflow.entities import Metric, Param, RunTag

        client = self._get_client()
        exp_id = self._experiment_id()
        parent = self._parent(exp_id)  # before the cell lock: locks are always taken store, sweep, cell
        with self._lock("cell", cell_id):
            for old in client.search_runs([exp_id], filter_string=f"tags.cell_id = '{cell_id}'"):
                if old.info.status == "RUNNING":
                    client.set_terminated(old.info.run_id, "FAILED")
                client.delete_run(old.info.run_id)
            run = client.create_run(exp_id, run_name=cell_id,
                                    tags={**tags, "cell_id": cell_id, "mlflow.parentRunId": parent})
            run_id = run.info.run_id
            try:
                failpoint("mlflow_run_created")
                plist = [Param(k, str(v)[:6000]) for k, v in sorted(params.items())]
                mlist = [Metric(mlflow_name(k), float(v), 0, 0) for k, v in sorted(metrics.items())]
                for i in range(0, len(plist), 100):
                    client.log_batch(run_id, params=plist[i:i + 100])
                for i in range(0, len(mlist), 1000):
                    client.log_batch(run_id, metrics=mlist[i:i + 1000])
                client.log_batch(run_id, tags=[RunTag("rag_bench.role", "cell")])
                client.log_artifacts(run_id, str(cell_dir))
            except BaseException:
                client.set_terminated(run_id, "FAILED")
                raise
            client.set_terminated(run_id, "FINISHED")
        return run_id

    def finished_run(self, cell_id: str) -> str | None:
        """Id of a FINISHED run of ``cell_id`` in this experiment, None when there is none."""
        if self._disabled:
            return None
        found = self._get_client().search_runs(
            [self._experiment_id()], filter_string=f"tags.cell_id = '{cell_id}' and attributes.status = 'FINISHED'",
            max_results=1)
        return str(found[0].info.run_id) if found else None

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


def finish_all(ok: bool) -> None:
    """Close every parent run this process opened (called once the sweep ends or fails)."""
    if not _PARENTS:
        return  # nothing opened (tracking=none): do not pay for importing mlflow
    from mlflow.tracking import MlflowClient

    for (uri, _exp, _sweep), run_id in list(_PARENTS.items()):
        MlflowClient(tracking_uri=uri).set_terminated(run_id, "FINISHED" if ok else "FAILED")
    _PARENTS.clear()
