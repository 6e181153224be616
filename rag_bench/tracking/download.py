"""A cell named by MLflow run id: its FINISHED run's artifacts downloaded as a cell folder (in the
temporary folder, removed when the process exits).

The run is read only when its status is FINISHED; its downloaded artifacts lack ``DONE`` (the run
was logged before DONE was written), so the download is marked done here, with the run id, once
that status has been checked. Reading the folder is :func:`rag_bench.cells.load_cell`'s.
"""

from __future__ import annotations

import atexit
import json
import os
import re
import shutil
import sys
import tempfile
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from rag_bench.cells import DEFAULT_OUTPUT_ROOT, Cell, load_cell
from rag_bench.errors import DataError, Problem

_RUN_ID = re.compile(r"^[0-9a-f]{32}$")


def load_cell_or_run(ref: str | Path, *, tracking_uri: str | None = None, records: bool = True) -> Cell:
    """A cell folder with DONE, or an MLflow run id whose run FINISHED (its artifacts are downloaded).

    ``records=False`` defers reading records.parquet to the first use of :attr:`Cell.records`
    (listing many cells for a leaderboard); by default it is read, and checked, now.
    """
    if not Path(ref).exists() and _RUN_ID.match(str(ref)):
        ref = _download(str(ref), tracking_uri)
    return load_cell(ref, records=records)


def _download(run_id: str, tracking_uri: str | None) -> Path:
    """Download a FINISHED run's artifacts (the cell folder) and mark the copy done."""
    from mlflow.tracking import MlflowClient

    from rag_bench.tracking.mlflow_tracker import tracking_uri as resolve_uri
    from rag_bench.tracking.server import bounded_requests, unreachable

    uri = resolve_uri(Path(DEFAULT_OUTPUT_ROOT), tracking_uri)
    # A server that is down must not read as "run not found" after minutes of MLflow's retries.
    why = unreachable(uri)
    if why is not None:
        raise DataError(Problem(run_id, 0, "tracking_uri", f"MLflow tracking server {uri} is unreachable ({why}): "
                                "cannot look up the run", "start the server, point MLFLOW_TRACKING_URI (or "
                                "--tracking-uri) at the one that holds the run, or pass the cell folder"))
    store = local_store(uri)
    if store is not None and not store.exists():
        # MLflow creates a store it is asked to read from: a lookup must leave the folder as it was.
        raise DataError(Problem(run_id, 0, "tracking_uri", f"no MLflow store at {store}: the run cannot be there",
                                "run the command where the sweep's output.root is ./experiments, set "
                                "MLFLOW_TRACKING_URI (or --tracking-uri) to the store that holds the run, or pass "
                                "the cell folder"))
    client = MlflowClient(tracking_uri=uri)
    with bounded_requests():
        try:
            run = client.get_run(run_id)
        except Exception as exc:  # MlflowException for unknown ids, connection errors
            missing = getattr(exc, "error_code", "") == "RESOURCE_DOES_NOT_EXIST"
            msg = f"MLflow run not found at {uri}" if missing else f"MLflow at {uri} could not return the run"
            raise DataError(Problem(run_id, 0, "run_id", f"{msg}: {' '.join(str(exc).split())[:300]}",
                                    "set MLFLOW_TRACKING_URI to the server that holds the run")) from exc
        if run.info.status != "FINISHED":
            raise DataError(Problem(run_id, 0, "status", f"MLflow run is {run.info.status}, not FINISHED: the cell "
                                    "is unfinished or failed", "re-run the sweep command; unfinished cells are redone"))
        name = re.sub(r"[^\w.-]", "_", str(run.data.tags.get("cell_id") or run_id)).strip(".") or run_id
        copy = Path(tempfile.mkdtemp(prefix="rag_bench_cell_"))
        # The copy lives as long as this process (a cell listed with records=False reads them late),
        # then goes: each `rag-bench gate RUN_ID` used to leave one behind in the temp folder.
        atexit.register(shutil.rmtree, copy, ignore_errors=True)
        dest = copy / name  # a tag never leads outside the temp folder
        dest.mkdir(parents=True)
        with artifact_bars_on_terminals_only():
            client.download_artifacts(run_id, "", str(dest))
    if not (dest / "DONE").exists():
        # The run's name is the cell's name in its sweep (its values on the swept axes): kept, so
        # compare and gate name a downloaded cell as the leaderboard and MLflow do.
        info = {"cell_id": dest.name, "mlflow_run_id": run_id, "tracking_uri": uri, "source": "mlflow",
                "mlflow_run_name": str(run.info.run_name or "")}
        (dest / "DONE").write_text(json.dumps(info, sort_keys=True) + "\n", encoding="utf-8")
    return dest


PROGRESS_BAR_SWITCH = "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR"


@contextmanager
def artifact_bars_on_terminals_only() -> Iterator[None]:
    """MLflow's "Downloading artifacts" progress bar (tqdm, on standard error) only when standard
    error is a terminal: in a CI log or a file it is a wall of carriage returns. A value the user
    set for MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR wins."""
    if PROGRESS_BAR_SWITCH in os.environ or sys.stderr.isatty():
        yield
        return
    os.environ[PROGRESS_BAR_SWITCH] = "false"
    try:
        yield
    finally:
        os.environ.pop(PROGRESS_BAR_SWITCH, None)


def local_store(uri: str) -> Path | None:
    """The file or folder of a local MLflow store URI (``sqlite:///...``, ``file:...``, a bare
    path); None for a server or a database of another kind."""
    parsed = urllib.parse.urlparse(uri)
    if parsed.scheme == "sqlite":
        path = uri[len("sqlite:///"):].split("?")[0] if uri.startswith("sqlite:///") else ""
        return Path(path) if path and path != ":memory:" else None
    if parsed.scheme == "file":
        return Path(urllib.parse.unquote(parsed.path))
    return Path(uri) if parsed.scheme == "" or len(parsed.scheme) == 1 else None  # a bare path (C:\ on Windows)
