"""A new SQLite MLflow store as a copy of an empty one, instead of MLflow creating it table by table.

Opening ``sqlite:///<output.root>/mlflow.db`` for the first time makes MLflow create ~70 tables and
run its schema migrations: 1.5 s (measured: ``MlflowClient(tracking_uri=...)`` on a new file, 2
cores, MLflow imported), paid by every sweep into a new output folder -- the cold and the warm
sweep of ``benchmarks/sweep.py --corpus squad`` each. Copying an empty store made once per MLflow
version takes ~30 ms.

What a fresh store holds besides its empty tables is MLflow's to say, so the template is the first
store MLflow itself creates here (:func:`keep_template`, right after it made the tables, before
anything is logged), and only what depends on where and when a store is created is rewritten in
each copy: the Default experiment's artifact location (``<cwd>/mlruns/0``, resolved by MLflow
from the working directory) and its creation and update times. When a new store's Default row is
not the one this rule predicts (an MLflow setting that moves it), no template is kept, and MLflow
creates every store as before. ``RAG_BENCH_SHARE=0`` (no sharing of any cached work) turns both off.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import sqlite3
import time
import uuid
from pathlib import Path

from rag_bench.errors import DataError
from rag_bench.memo import sharing_enabled
from rag_bench.storage import default_cache_dir

log = logging.getLogger("rag_bench")

# The Default experiment's artifact location in a template: the working directory's part stands
# for the one each copy is made in.
_CWD = "<cwd of the copy>"


def template_path(version: str, root: Path | None = None) -> Path:
    """Where the empty store of MLflow ``version`` is kept (under the rag_bench cache folder)."""
    return (root or default_cache_dir()) / "mlflow-stores" / f"empty-mlflow-{version}.db"


def _default_location(cwd: str) -> str:
    return str(Path(cwd) / "mlruns" / "0")


def _copy(source: Path, target: Path, *, found: str, put: str, stamp: bool) -> bool:
    """Copy the store ``source`` to ``target`` (atomically, through a part file beside it) when its
    one experiment is the Default one at ``found``, rewritten to ``put`` (and, with ``stamp``, its
    creation and update times to now). False, nothing written, otherwise."""
    part = target.with_name(f".{target.name}.{uuid.uuid4().hex}.part")
    try:
        shutil.copyfile(source, part)
        with contextlib.closing(sqlite3.connect(part)) as con, con:
            # An empty store: SQLite's check of every page takes milliseconds.
            check = con.execute("PRAGMA quick_check").fetchall()
            rows = con.execute("SELECT experiment_id, artifact_location FROM experiments").fetchall()
            if check != [("ok",)] or rows != [(0, found)]:
                log.debug("MLflow store %s: check %r, experiments %r, not the Default one alone at %r; not copied",
                          source, check, rows, found)
                return False
            con.execute("UPDATE experiments SET artifact_location = ? WHERE experiment_id = 0", (put,))
            if stamp:
                now = int(time.time() * 1000)
                con.execute("UPDATE experiments SET creation_time = ?, last_update_time = ? WHERE experiment_id = 0",
                            (now, now))
        os.replace(part, target)  # atomic: a concurrent writer's copy is as good as ours
        return True
    finally:
        part.unlink(missing_ok=True)


def keep_template(db: Path, *, root: Path | None = None) -> bool:
    """Keep ``db``, a store MLflow has just created in this working directory (nothing logged
    yet), as the template of the installed MLflow's stores, unless one is kept already. Returns
    whether it did. The caller holds the store's lock."""
    if not sharing_enabled():
        return False
    try:
        import mlflow

        template = template_path(mlflow.__version__, root)
        if template.is_file():
            return False
        template.parent.mkdir(parents=True, exist_ok=True)
        return _copy(db, template, found=_default_location(os.getcwd()), put=_default_location(_CWD), stamp=False)
    except (OSError, sqlite3.Error, DataError) as exc:  # DataError: a bad cache folder
        log.debug("MLflow store %s not kept as a template (%s)", db, exc)
        return False


def seed_store(db: Path, *, root: Path | None = None) -> bool:
    """Create ``db`` (absent) as a copy of the template of the installed MLflow's stores, with the
    Default experiment's artifact location and times a fresh store made here and now would have.
    Returns False, leaving ``db`` absent, when it cannot: no template yet, or one not as expected
    (MLflow then creates the store itself). The caller holds the store's lock."""
    if db.exists() or not sharing_enabled():
        return False
    try:
        import mlflow

        template = template_path(mlflow.__version__, root)
        if not template.is_file():
            return False
        return _copy(template, db, found=_default_location(_CWD), put=_default_location(os.getcwd()), stamp=True)
    except (OSError, sqlite3.Error, DataError) as exc:  # DataError: a bad cache folder
        log.debug("MLflow store %s not seeded from a template (%s); MLflow creates it", db, exc)
        return False


__all__ = ["keep_template", "seed_store", "template_path"]
