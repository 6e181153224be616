"""A local SQLite MLflow store in write-ahead-log mode: a commit without an fsync of its own.

MLflow's SQLAlchemy store commits a transaction per call, and a cell's run takes about a dozen
calls besides one per traced question (create, the batch of metrics, params and tags -- itself
four commits --, the input, the status, each ``start_trace``, the spans). In SQLite's default
rollback-journal mode each commit syncs the journal and the database to disk: ~14 ms a commit on
the two-core machine of ``benchmarks/sweep.py``, ~0.4 s a cell, more than MLflow's own Python.
In WAL mode with ``synchronous=NORMAL`` a commit appends to the log and syncs only at a
checkpoint (measured, 20 squad2-normans cells logged in one process: 773 -> 332 ms a cell, the
same CPU time).

What it costs: nothing after a crash of the process (a committed run stays committed); after a
power loss or an OS crash the last commits may be rolled back (the database stays consistent),
so a cell DONE just before it could lack its FINISHED run -- ``rag-bench sync`` uploads such a
cell. WAL needs shared memory between the processes using the file: a store on a network file
system written from several machines is not safe in either mode (docs/cluster.md: use an MLflow
server there).

The journal mode is a property of the file (set once, by :func:`use_wal`, every later connection
of any process uses it); ``synchronous`` is one of each connection, set for the connections
SQLAlchemy opens to a store put in WAL mode here, by a listener on SQLAlchemy's ``connect``
event (MLflow creates the engine; this reaches it through SQLAlchemy's public event API only).

At the exit of a process that put a store in WAL mode (the sweep's, after its background process
ended; ``rag-bench sync``, ``rag-bench traces``) the log is checkpointed into the database file
and emptied (:func:`checkpoint`), so ``mlflow.db`` alone holds every run -- copied or moved without
its ``-wal`` and ``-shm`` files beside it, nothing is lost. A process killed before that leaves
the log, which the next connection to the store reads (and checkpoints) as its own.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import weakref
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

_STORES: set[str] = set()  # real paths of the stores put in WAL mode by this process
_LISTENING: list[bool] = []  # the connect listener is registered (once per process)
_ENGINES: weakref.WeakSet[Any] = weakref.WeakSet()  # SQLAlchemy engines holding connections to those stores


def use_wal(db: Path) -> bool:
    """Put the SQLite store ``db`` (an existing file) in WAL mode and have this process's
    SQLAlchemy connections to it commit with ``synchronous=NORMAL``; whether it is in WAL mode.
    A file that cannot be switched (locked past the timeout, a read-only folder) keeps its mode,
    with a debug line: the store works as before, only slower."""
    try:
        with contextlib.closing(sqlite3.connect(db, timeout=20)) as con:
            mode = str(con.execute("PRAGMA journal_mode=WAL").fetchone()[0]).lower()
    except sqlite3.Error as exc:
        log.debug("MLflow store %s left in its journal mode (%s)", db, exc)
        return False
    if mode != "wal":
        log.debug("MLflow store %s stays in journal mode %s", db, mode)
        return False
    _STORES.add(os.path.realpath(db))
    if not _LISTENING:
        import atexit

        from sqlalchemy import event
        from sqlalchemy.engine import Engine

        event.listen(Engine, "connect", _on_connect)
        event.listen(Engine, "engine_connect", _on_engine_connect)
        atexit.register(checkpoint)
        _LISTENING.append(True)
    return True


def checkpoint() -> None:
    """Copy the log of every store this process put in WAL mode into its database file and empty
    it (``wal_checkpoint(TRUNCATE)``); best effort: a store busy past a few seconds (another
    sweep writing it) keeps its log for the next checkpoint."""
    for db in sorted(_STORES):
        try:
            with contextlib.closing(sqlite3.connect(db, timeout=5)) as con:
                con.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        except sqlite3.Error as exc:
            log.debug("MLflow store %s: its log not checkpointed (%s)", db, exc)


def release() -> None:
    """Close this process's pooled connections to the stores it put in WAL mode, then checkpoint
    them (:func:`checkpoint`). MLflow keeps an engine per store for the life of the process, and
    each pooled connection holds the database, its log and its shared memory open: a process that
    runs sweep after sweep into new folders (a notebook, a test worker) held five more descriptors
    a sweep. The engines stay usable: the next call opens a connection again."""
    for engine in list(_ENGINES):
        with contextlib.suppress(Exception):  # best effort: a store in use elsewhere keeps working
            engine.dispose()
    _ENGINES.clear()
    checkpoint()


def _on_engine_connect(connection: Any) -> None:
    """A connection checked out of an engine: the engine remembered when it opens a store of
    :data:`_STORES` (:func:`release` closes its pool)."""
    database = connection.engine.url.database
    if database and os.path.realpath(database) in _STORES:
        _ENGINES.add(connection.engine)


def _on_connect(dbapi_connection: Any, _record: Any) -> None:
    """A new SQLAlchemy connection: ``synchronous=NORMAL`` when it opens a store of :data:`_STORES`."""
    if not isinstance(dbapi_connection, sqlite3.Connection):
        return
    with contextlib.suppress(sqlite3.Error):
        row = dbapi_connection.execute("PRAGMA database_list").fetchone()
        if row is not None and row[2] and os.path.realpath(row[2]) in _STORES:
            dbapi_connection.execute("PRAGMA synchronous=NORMAL")
