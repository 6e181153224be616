"""The end of each cell off the sweep's path: a child process writes the cell's folder, logs its
MLflow run and marks it DONE while the next cell runs.

Writing a cell (parquet, JSON, YAML, CSV: ~0.05 s) and logging it to MLflow (~0.1-0.2 s of Python
in MLflow's SQLAlchemy store: one batch of ~200 metrics, the dataset input, the artifacts, the
status; with ``tracking.traces`` a trace per sampled question besides, ~11-50 ms each into
SQLite on two cores: :mod:`rag_bench.tracking.traces`) are paid by every cell of a sweep. In a sweep run by ``rag-bench run -m``
(``hydra/launcher=rag_bench``, jobs one after the other in this process) the launcher opens a
:func:`session`; within it ``rag_bench.runner.main`` hands each computed cell to the session's
:class:`Finishers`, which passes it to a child process (``python -m rag_bench.tracking.finisher``,
through a :class:`BackgroundLogger`) and returns; on two cores that work overlaps the next cell's.
Outside a session (a single ``rag-bench run``, launcher workers, ``evaluate``), with
``tracking.background=false`` and for a tracker of the user's, the cell is finished in the
calling process, as before.

What does not change, and how:

* **DONE still comes last, and means FINISHED.** The child writes the folder (through a
  temporary folder and a rename, as before), logs the run, sets it FINISHED, then writes DONE
  with the body the calling process would have written. A cell not finished has no DONE: a
  crash leaves it to be redone, as before.
* **The cell's lock is held until then.** The cell lock (``cells.cell_lock``) is taken by the
  calling process, handed over with the job and released when the child reports the cell:
  another process running the same cell waits, then finds DONE. A cell of the same id met again
  in this sweep waits for its pending job first (:meth:`BackgroundLogger.wait_for`).
* **A crash is a crash of both.** The child dies with its parent (``PR_SET_PDEATHSIG`` on Linux;
  everywhere, standard input closing without the end message makes it exit at once, finishing
  nothing more). A fault-injection point reached in the child (``cell_written``,
  ``mlflow_run_created``, ``before_done``) kills the parent first
  (:data:`rag_bench.faults.ALSO_KILL`), so crash tests see the whole run die where they asked.
* **Errors are not lost.** A cell that cannot be written (disk full: nothing half-written is
  kept) or logged (its run FAILED) is not DONE, and the error is raised in the calling process
  at its next hand-over or when the session ends, as the same
  :class:`~rag_bench.errors.OutputError` or as :class:`~rag_bench.errors.TrackingError`
  naming the cell: exit code 2, as before. A child that dies on its own (killed, out of memory)
  fails every pending cell so, and the run it had created for one of them is marked FAILED, not
  left RUNNING (:func:`_fail_runs`).
* **Bounded.** At most :data:`MAX_PENDING` cells wait for a child; the next hand-over waits
  for the oldest. The session waits for every cell before the launcher returns, so the sweep's
  closing (leaderboard, parent run) sees every cell DONE.
* **A second child when the first falls behind.** A session's :class:`Finishers` hands each cell
  to the child with the fewest cells pending, and starts another (up to :data:`MAX_CHILDREN`)
  only when the sweep would otherwise wait: every child it has reported a cell already (its
  imports are done) and holds :data:`MAX_PENDING` cells. That is MLflow's logging of each cell
  (its traces above all), not the folder's writing: with ``tracking=none`` one child keeps up.
  Each child is a :class:`BackgroundLogger` of its own, with everything said above; two children
  write to the MLflow store and the cell cache as two processes of a cluster sweep do (their
  locks, SQLite's WAL).

* **What it cost the sweep is said.** When the session closes it logs one line
  (:func:`wait_line`): how long the calling thread waited for its children (with
  :data:`MAX_PENDING` cells pending, or at the end) of how long the session lasted, and how long it
  spent handing cells over (pickling and writing them), to the log file only
  (``benchmarks/sweep.py --full-grid`` prints it per run); the console gets a line only when the
  sweep waited a tenth of the session or more (:func:`wait_hint`: with MLflow, the setting that
  waits less).

The child's log lines (MLflow, alembic) go to the file of the calling process's root
``FileHandler`` (``.hydra/rag_bench.log``), else to stderr.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import select
import struct
import subprocess
import sys
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from rag_bench.errors import OutputError, RagBenchError, TrackingError
from rag_bench.logs import FILE_ONLY
from rag_bench.tracking.parents import PARENT_RUNS

log = logging.getLogger(__name__)

MAX_PENDING = 8
# Children finishing cells at once in a session (:class:`Finishers`), on a machine with two cores or
# more. The 180-cell squad2-normans grid with MLflow's defaults on 2 cores: 68.6 and 74.3 s with one,
# 58.4 and 62.0 s with two (one run each, turn about).
MAX_CHILDREN = 2
PIPE_BYTES = 4 << 20  # the hand-over pipe's size asked for (:func:`_widen_pipe`)
HEADER = struct.Struct("<Q")  # each job on the pipe: its pickled size, then the pickle (size 0: the end)
_CURRENT: Finishers | None = None


def _child_env() -> dict[str, str]:
    """The child's environment: this process's, with the folder this ``rag_bench`` was imported
    from first on ``PYTHONPATH``. With ``-P`` (no working directory on ``sys.path``) the child runs
    the same code as its parent: under plain ``python -m`` a folder named ``rag_bench`` in the
    working directory (another checkout, an older version) came first, and the child ran that."""
    root = str(Path(os.path.abspath(__file__)).parents[2])
    rest = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": os.pathsep.join([root, rest] if rest else [root])}


@dataclass(frozen=True)
class LogJob:
    """The end of one cell: ``write`` (the resolved config as a plain container, the
    :class:`~rag_bench.runner.results.CellResult`) written to ``cell_dir`` when given; its run
    logged when ``tracker`` is given (``MlflowTracker`` constructor arguments; ``bind``: its
    ``bind`` values; ``log_cell``: ``log_cell``'s arguments); then DONE written with the body
    ``done`` (plus, when logged, the run id and the tracker's ``describe()``). With ``keep``, the
    written cell is stored in the cell cache too (:func:`rag_bench.cell_cache.keep`), before DONE;
    with ``after_write``, that call is made once the folder is written (the cell's throughput sample
    added to ``--plan``'s history), before DONE."""

    cell_id: str
    cell_dir: Path
    done: dict[str, Any]
    write: tuple[dict[str, Any], Any] | None = None
    tracker: dict[str, Any] | None = None
    bind: dict[str, Any] = field(default_factory=dict)
    log_cell: dict[str, Any] | None = None
    parent_key: tuple[str, str, str] | None = None  # (uri, experiment, sweep id): where the parent run id goes
    # Called in this process when the child dies with the cell pending: its run, if the child had
    # created it, marked FAILED (the tracker's own rule, handed over: this module knows no tracker).
    on_death: Callable[[], Any] | None = None
    # Where the child stores the written cell for reuse (a rag_bench.cell_cache.Keep), None: not stored.
    keep: Any = None
    # Called in the child once the folder is written (picklable; it must not raise): the calling side's
    # bookkeeping, handed over like on_death (this module and the child know no runner). None: nothing.
    after_write: Callable[[], Any] | None = None


def current() -> Finishers | None:
    """The logger of the open :func:`session`, None outside one."""
    return _CURRENT


@contextlib.contextmanager
def session() -> Iterator[Finishers]:
    """Cells tracked inside are logged by a child process; on leaving, every pending cell is
    waited for (its error raised) and the child stopped. Nested sessions share the outer one."""
    global _CURRENT
    if _CURRENT is not None:
        yield _CURRENT
        return
    logger = _CURRENT = Finishers()
    try:
        yield logger
    except BaseException:
        _CURRENT = None
        with contextlib.suppress(Exception):  # the first error is the one to report
            logger.close()
        raise
    _CURRENT = None
    logger.close()


def _log_file() -> str | None:
    for handler in logging.getLogger().handlers:
        if isinstance(handler, logging.FileHandler):
            return handler.baseFilename
    return None


def readable(fd: int, timeout: float | None) -> bool:
    """Whether ``fd`` has something to read, or its end closed, within ``timeout`` seconds (None:
    wait). By poll, not select: select refuses a descriptor numbered FD_SETSIZE (1024) or above,
    which a process that has opened many files (a long session, a notebook, a test worker) hands out."""
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLPRI)
    return bool(poller.poll(None if timeout is None else int(timeout * 1000)))


class BackgroundLogger:
    """The calling side: hands jobs to the child, releases each cell's lock when it is reported."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen[bytes] | None = None
        # seq -> (cell folder, cell id, the lock's release, parent key, the job's on_death)
        self._pending: OrderedDict[int, tuple[str, str, Callable[[], None], tuple[str, str, str] | None,
                                              Callable[[], Any] | None]] = OrderedDict()
        self._seq = 0
        self._reports = -1  # the read end of the child's report pipe
        self._buffer = b""
        self._errors: list[RagBenchError] = []
        self.reported = 0  # cells the child has reported (finished or failed)
        self.waits = Waits()  # what the calling thread spent on this child (:func:`wait_line`)

    # -- the calling process's API ---------------------------------------------------------

    def submit(self, job: LogJob, release: Callable[[], None]) -> None:
        """Hand ``job`` over; ``release`` (the cell lock's exit) is called once the child reports
        the cell, logged or not. Raises the error of an earlier cell's logging first."""
        try:
            self._raise_errors()
            self._collect(block=False)
            started = time.perf_counter()
            while len(self._pending) >= MAX_PENDING:
                self._collect(block=True)
            handing = time.perf_counter()
            self.waits.bound += handing - started
            self._raise_errors()
            proc = self._start()
            self._seq += 1
            data = pickle.dumps((self._seq, job), protocol=pickle.HIGHEST_PROTOCOL)
            assert proc.stdin is not None
            try:
                proc.stdin.write(HEADER.pack(len(data)) + data)
                proc.stdin.flush()
                self.waits.handing += time.perf_counter() - handing
                self.waits.cells += 1
                self.waits.tracked += job.log_cell is not None
            except OSError as exc:  # the child is gone (BrokenPipeError): its pending cells fail with it
                while self._pending:
                    self._collect(block=True)
                if self._proc is proc:  # nothing was pending: forget the dead child here
                    self._proc = None
                    proc.wait()
                    os.close(self._reports)
                self._raise_errors()
                raise TrackingError(f"cell {job.cell_id}: the process finishing cells (writing, MLflow logging) "
                                    f"is gone ({exc}) -- fix: see the log, run again") from exc
        except BaseException:
            release()
            raise
        self._pending[self._seq] = (str(job.cell_dir), job.cell_id, release, job.parent_key, job.on_death)

    def pending(self) -> int:
        """Cells handed over and not reported yet."""
        return len(self._pending)

    def poll(self) -> None:
        """Read the reports that have come, without waiting; raise the first logging error."""
        self._collect(block=False)
        self._raise_errors()

    def wait_for(self, cell_dir: Path) -> None:
        """Return once ``cell_dir``'s job (if any is pending) has been reported."""
        started = time.perf_counter()
        while any(entry[0] == str(cell_dir) for entry in self._pending.values()):
            self._collect(block=True)
        self.waits.bound += time.perf_counter() - started

    def drain(self) -> None:
        """Wait for every pending cell; raise the first logging error."""
        started = time.perf_counter()
        while self._pending:
            self._collect(block=True)
        self.waits.end += time.perf_counter() - started
        self._raise_errors()

    def close(self) -> None:
        """:meth:`drain`, then stop the child."""
        try:
            self.drain()
        finally:
            proc, self._proc = self._proc, None
            if proc is not None:
                assert proc.stdin is not None
                with contextlib.suppress(OSError):
                    proc.stdin.write(HEADER.pack(0))  # the end message
                    proc.stdin.close()
                try:
                    proc.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
                os.close(self._reports)

    # -- internals ---------------------------------------------------------------------------

    def _start(self) -> subprocess.Popen[bytes]:
        """The child, started on the first job. Its reports come on a pipe of their own (what
        libraries print, e.g. MLflow's "View run" line, goes to the log file, else to stderr)."""
        if self._proc is None:
            read, write = os.pipe()
            try:
                with contextlib.ExitStack() as stack:
                    log_file = _log_file()
                    out: int | BinaryIO = 2  # fd 2: stderr
                    if log_file:
                        try:
                            out = stack.enter_context(open(log_file, "ab"))
                        except OSError:  # its folder is gone (removed meanwhile): the child logs to stderr
                            log_file = None
                    args = [sys.executable, "-P", "-m", "rag_bench.tracking.finisher", str(os.getpid()), str(write),
                            *([log_file] if log_file else [])]
                    self._proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=out, pass_fds=(write,),
                                                  env=_child_env())
                assert self._proc.stdin is not None
                _widen_pipe(self._proc.stdin.fileno())
            except BaseException:
                os.close(read)
                raise
            finally:
                os.close(write)
            self._reports = read
        return self._proc

    def _raise_errors(self) -> None:
        if self._errors:
            errors, self._errors = self._errors, []
            if len(errors) == 1:
                raise errors[0]
            raise type(errors[0])("; ".join(str(e) for e in errors))

    def _collect(self, block: bool) -> None:
        """Read the child's reports (one line each: ``ok <seq> <parent run id>`` or ``error <seq>
        <output|tracking> <message>``); when ``block``, wait for at least one. The child gone: every pending cell
        fails."""
        proc = self._proc
        if proc is None or not self._pending:
            return
        fd = self._reports
        while True:
            if not readable(fd, None if block else 0):
                return
            chunk = os.read(fd, 65536)
            if not chunk:
                code = proc.wait()
                for seq, (cell_dir, cell_id, release, _, on_death) in list(self._pending.items()):
                    self._errors.append(TrackingError(
                        f"cell {cell_id}: the process finishing cells (writing, MLflow logging) ended (exit code "
                        f"{code}) before it was DONE ({cell_dir}) -- fix: see the log, run again"))
                    del self._pending[seq]
                    _fail_runs(cell_id, on_death)  # before the lock goes: no one else logs the cell meanwhile
                    release()
                self._proc = None
                os.close(fd)
                return
            self._buffer += chunk
            *lines, self._buffer = self._buffer.split(b"\n")
            for line in lines:
                self._report(line.decode("utf-8", "replace"))
            if lines:
                return

    def _report(self, line: str) -> None:
        kind, _, rest = line.partition(" ")
        seq, _, message = rest.partition(" ")
        _, cell_id, release, parent_key, _ = self._pending.pop(int(seq))
        self.reported += 1
        release()
        if kind == "ok" and message and parent_key is not None:
            PARENT_RUNS.setdefault(parent_key, message)  # closed by finish_all with the sweep
        elif kind != "ok":
            what, _, message = message.partition(" ")
            self._errors.append(OutputError(message) if what == "output" else
                                TrackingError(f"cell {cell_id}: MLflow logging failed, the cell is not DONE: {message}"))


class Finishers:
    """A session's children (:class:`BackgroundLogger` each): a cell goes to the one with the fewest
    cells pending; a second is started only when the sweep would wait for the first (module docstring)."""

    def __init__(self, size: int | None = None) -> None:
        self.size = size if size is not None else (MAX_CHILDREN if _cores() >= 2 else 1)
        self.loggers: list[BackgroundLogger] = []
        self.started = time.perf_counter()

    def submit(self, job: LogJob, release: Callable[[], None]) -> None:
        """:meth:`BackgroundLogger.submit` to the chosen child; an earlier cell's error, whichever
        child logged it, is raised first (``release`` called)."""
        try:
            for logger in self.loggers:
                logger.poll()
        except BaseException:
            release()
            raise
        self._choose().submit(job, release)

    def _choose(self) -> BackgroundLogger:
        if not self.loggers:
            self.loggers.append(BackgroundLogger())
        free = min(self.loggers, key=BackgroundLogger.pending)
        if free.pending() >= MAX_PENDING and len(self.loggers) < self.size and all(
                logger.reported for logger in self.loggers):
            log.info("a second process finishes cells: the first has %d cells waiting", free.pending())
            free = BackgroundLogger()
            self.loggers.append(free)
        return free

    def pending(self) -> int:
        """Cells handed over and not reported yet, by every child."""
        return sum(logger.pending() for logger in self.loggers)

    def wait_for(self, cell_dir: Path) -> None:
        """Return once ``cell_dir``'s job (if any is pending, with any child) has been reported."""
        for logger in self.loggers:
            logger.wait_for(cell_dir)

    def drain(self) -> None:
        """Wait for every pending cell of every child; raise the first logging error."""
        self._each(BackgroundLogger.drain)

    def close(self) -> None:
        """:meth:`drain`, then stop the children; then log what the sweep spent on them (:func:`wait_line`)."""
        self._each(BackgroundLogger.close)
        if self.loggers:
            waits = Waits.total([logger.waits for logger in self.loggers])
            seconds = time.perf_counter() - self.started
            log.info("%s", wait_line(waits, len(self.loggers), seconds), extra=FILE_ONLY)
            hint = wait_hint(waits, seconds)
            if hint:
                log.info("%s", hint)

    def _each(self, step: Callable[[BackgroundLogger], None]) -> None:
        """``step`` for every child, all of them whatever one raises; then the first error."""
        errors: list[BaseException] = []
        for logger in self.loggers:
            try:
                step(logger)
            except BaseException as exc:  # noqa: BLE001 -- raised below, after the other children
                errors.append(exc)
        for extra in errors[1:]:  # the first is raised; the others are not lost
            log.error("another process finishing cells failed too: %s", extra)
        if errors:
            raise errors[0]


@dataclass
class Waits:
    """What the calling thread spent on a child: seconds waiting for it with :data:`MAX_PENDING`
    cells pending or for a cell met again (``bound``), seconds waiting at the end (``end``: the
    session's close), seconds pickling and writing the jobs (``handing``), the cells handed over and
    those of them logged to MLflow (``tracked``)."""

    bound: float = 0.0
    end: float = 0.0
    handing: float = 0.0
    cells: int = 0
    tracked: int = 0

    @staticmethod
    def total(waits: list[Waits]) -> Waits:
        """The sum over children."""
        return Waits(sum(w.bound for w in waits), sum(w.end for w in waits), sum(w.handing for w in waits),
                     sum(w.cells for w in waits), sum(w.tracked for w in waits))


def wait_line(waits: Waits, processes: int, seconds: float) -> str:
    """The line a session writes to the log file when it closes (``benchmarks/sweep.py`` reads it):
    how long the sweep waited for its cells to be written and logged, of the ``seconds`` the session
    lasted, and how long it spent handing them over."""
    return (f"finishing cells in the background: the sweep waited {waits.bound + waits.end:.1f} s of {seconds:.1f} s "
            f"for them ({waits.bound:.1f} s with {MAX_PENDING} cells pending, {waits.end:.1f} s at the end) and spent "
            f"{waits.handing:.1f} s handing them over; {waits.cells} cells, {waits.tracked} logged to MLflow, "
            f"{processes} process{'es' if processes != 1 else ''}")


def wait_hint(waits: Waits, seconds: float) -> str | None:
    """The console's line when the sweep waited a tenth of the session or more (and a second) for its
    cells: what for, and with MLflow's logging the setting that waits less; None otherwise.

    >>> wait_hint(Waits(7.6, 1.7, 1.8, 180, 180), 61.2)
    'the sweep waited 9.3 s of 61.2 s for MLflow -- to wait less: tracking.traces=false or tracking.trace_sample=3'
    >>> wait_hint(Waits(0.0, 0.1, 1.7, 180, 0), 39.0) is None
    True
    """
    waited = waits.bound + waits.end
    if waited < max(1.0, 0.1 * seconds):
        return None
    if waits.tracked:
        return (f"the sweep waited {waited:.1f} s of {seconds:.1f} s for MLflow -- to wait less: tracking.traces=false "
                "or tracking.trace_sample=3")
    return f"the sweep waited {waited:.1f} s of {seconds:.1f} s for its cells to be written (.hydra/rag_bench.log)"


def _cores() -> int:
    """The cores this process may run on."""
    getter = getattr(os, "sched_getaffinity", None)
    return len(getter(0)) if getter is not None else (os.cpu_count() or 1)


def _fail_runs(cell_id: str, on_death: Callable[[], Any] | None) -> None:
    """The MLflow run the child was logging for ``cell_id`` when it died (RUNNING: created, not
    finished) marked FAILED by the job's ``on_death``, so the store holds no run that looks in
    progress; best effort (the next run of the cell replaces it anyway)."""
    if on_death is None:
        return
    try:
        on_death()
    except Exception as exc:  # noqa: BLE001 -- the child's death is the error reported
        log.warning("cell %s: its MLflow run left RUNNING by the process that died was not marked FAILED: %s",
                    cell_id, exc)


def _widen_pipe(fd: int) -> None:
    """Let the hand-over pipe hold a whole cell (~0.5 MB pickled for 208 questions at k=10) where
    the system allows it (Linux: up to ``/proc/sys/fs/pipe-max-size``, 1 MiB by default): with the
    default 64 KiB the calling process waited on every hand-over while the child's reader thread,
    competing for the GIL with the child's writing, took the job 64 KiB at a time."""
    try:
        import fcntl
    except ImportError:  # not a POSIX system: the pipe keeps its size
        return
    setter = getattr(fcntl, "F_SETPIPE_SZ", None)
    if setter is None:
        return
    for size in (PIPE_BYTES, 1 << 20):
        with contextlib.suppress(OSError):
            fcntl.fcntl(fd, setter, size)
            return
