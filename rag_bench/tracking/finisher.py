"""The child process of :mod:`rag_bench.tracking.background` (``python -m rag_bench.tracking.finisher``):
reads each cell's :class:`~rag_bench.tracking.background.LogJob` from standard input, writes the
cell's folder (and stores the cell in the cell cache, :mod:`rag_bench.cell_cache`), logs its MLflow
run, marks it DONE and reports the cell on its report pipe.

A module of its own, apart from the calling side: the finisher uses the cell folder
(:mod:`rag_bench.cells`) and the tracker (:mod:`rag_bench.tracking.mlflow_tracker`), which hands
the calling side its jobs, so the calling side imports neither.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import queue
import signal
import sys
import threading
import traceback
from pathlib import Path
from typing import Any

from rag_bench import faults, heap
from rag_bench.errors import OutputError
from rag_bench.tracking.background import HEADER, LogJob

log = logging.getLogger(__name__)


def _die_with_parent(parent: int) -> None:
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)


def _read_jobs(stream: Any, jobs: queue.Queue[tuple[int, LogJob] | None]) -> None:
    """Reader thread: jobs as they arrive (so the parent never waits on a full pipe); standard
    input closing without the end message (the parent died) ends this process at once."""
    while True:
        head = stream.read(HEADER.size)
        if len(head) < HEADER.size:
            os._exit(1)
        (size,) = HEADER.unpack(head)
        if size == 0:
            jobs.put(None)
            return
        jobs.put(pickle.loads(stream.read(size)))


def _rendered(cell_id: str, result: Any) -> Any:
    """The cell's result with its deferred files rendered (the stored run: rendered here, off the sweep's
    thread); a file that cannot be rendered fails the cell as an output error naming it, never as
    MLflow's, and nothing of the cell is written."""
    try:
        return result.rendered()
    except Exception as exc:
        log.error("rendering cell %s's files failed:\n%s", cell_id, traceback.format_exc())
        raise OutputError(f"cell {cell_id}: its files could not be rendered ({type(exc).__name__}: {exc}); nothing "
                          "of the cell was written -- fix: a component returned a value rag_bench cannot store "
                          "(the traceback is in the experiment's .hydra/rag_bench.log)") from exc


def _serve(parent: int, reports: int, log_file: str | None) -> int:
    _die_with_parent(parent)
    with contextlib.suppress(OSError):  # the sweep's own cells first: this work waits for a free core
        os.nice(10)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's: it waits for us to finish
    # Reading starts before the imports below (~1-2 s): the parent's first hand-over does not wait on a full pipe.
    jobs: queue.Queue[tuple[int, LogJob] | None] = queue.Queue()
    threading.Thread(target=_read_jobs, args=(sys.stdin.buffer, jobs), daemon=True).start()
    from rag_bench.logs import quiet_libraries

    faults.ALSO_KILL.append(parent)
    handler: logging.Handler = logging.FileHandler(log_file, encoding="utf-8") if log_file \
        else logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("[%(asctime)s][%(name)s][%(levelname)s] %(message)s"))
    logging.basicConfig(level=logging.INFO, handlers=[handler])
    quiet_libraries()
    out = os.fdopen(reports, "wb")
    with heap.tuned():  # the collector tuned as in the sweep's batch, until the last job is reported
        return _finish_jobs(jobs, out)


def _finish_jobs(jobs: queue.Queue[tuple[int, LogJob] | None], out: Any) -> int:
    """Each job as it comes (the cell written, stored, logged, DONE) and reported on ``out``."""
    from rag_bench import cell_cache
    from rag_bench.cells import mark_done, write_cell_or_fail
    from rag_bench.tracking.mlflow_tracker import MlflowTracker

    trackers: dict[str, MlflowTracker] = {}
    first = True
    while (item := jobs.get()) is not None:
        seq, job = item
        cell_dir = Path(job.cell_dir)
        written = None
        try:
            if job.write is not None:
                plain, written = job.write
                written = _rendered(job.cell_id, written)
                if job.keep is not None:  # stored for reuse, its records encoded once for both
                    written = cell_cache.keep(job.keep, written)
                write_cell_or_fail(cell_dir, plain, written)
                faults.failpoint("cell_written")
            if job.after_write is not None:
                job.after_write()
            done, parent_run = job.done, ""
            if job.tracker is not None and job.log_cell is not None:
                key = repr((sorted(job.tracker.items()), sorted(job.bind.items())))
                tracker = trackers.get(key)
                if tracker is None:
                    tracker = trackers[key] = MlflowTracker(**job.tracker)
                    tracker.bind(**job.bind)
                # the result just written: its traces are built from it, not read back from the folder
                run_id = tracker.log_cell(**job.log_cell, written=written)
                described = tracker.describe()
                done = {**done, "mlflow_run_id": run_id, **described}
                parent_run = described.get("parent_run_id") or ""
            faults.failpoint("before_done")
            mark_done(cell_dir, done)
            out.write(f"ok {seq} {parent_run}\n".encode())
        except Exception as exc:  # noqa: BLE001 -- reported to the parent, which raises it
            log.error("finishing cell %s failed:\n%s", cell_dir, traceback.format_exc())
            what = "output" if isinstance(exc, OutputError) else "tracking"
            message = (str(exc) if what == "output" else f"{type(exc).__name__}: {exc}").replace("\n", " ")
            out.write(f"error {seq} {what} {message}\n".encode())
        out.flush()
        if first:  # MLflow, SQLAlchemy and pyarrow are loaded now: later collections skip them (rag_bench.heap)
            heap.freeze_loaded()
            first = False
    return 0


if __name__ == "__main__":
    from rag_bench import switches

    switches.configure(switches.Switches.from_environment())  # this child process's entry point
    code = _serve(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] if len(sys.argv) > 3 else None)
    # Every cell is written, logged (its MLflow run ended) and reported, and the log flushed: exit
    # without the interpreter's teardown of pandas, pyarrow and MLflow (~0.3 s the sweep waited
    # for), as multiprocessing's children do.
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
