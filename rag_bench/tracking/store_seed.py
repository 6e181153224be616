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

The template lives in the cache folder, which a team may share: whoever can write there could plant
a trigger that rewrites every logged metric in every new store, or leave a store of another MLflow
schema that makes every sweep fail. So each copy is compared with what the installed MLflow creates
(:func:`_unexpected`) before it is used -- its tables and their columns (MLflow's table models),
no view, no trigger but MLflow's own (their SQL is in its migration scripts), the schema at
MLflow's head revision, every table empty but the Default experiment and workspace -- and anything
else leaves the store to MLflow, with a warning naming the template.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import shutil
import sqlite3
import time
import uuid
from pathlib import Path
from typing import Any

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


# One entry: what the installed MLflow creates does not change while a process runs (pure in the
# installed package); the result (frozensets and strings) is never mutated.
@functools.lru_cache(maxsize=1)
def _mlflow_schema() -> tuple[dict[str, frozenset[str]], str, str]:
    """What the installed MLflow creates: table -> column names (its table models), its schema's
    head revision, and the text of its migration scripts (whitespace folded), where the SQL of
    every trigger it creates is written."""
    import mlflow.store.db.utils  # noqa: F401 -- imports every table model MLflow creates a store from
    import mlflow.store.db_migrations
    from alembic.script import ScriptDirectory
    from mlflow.store.db.base_sql_model import Base

    migrations = Path(next(iter(mlflow.store.db_migrations.__path__)))
    head = ScriptDirectory(str(migrations)).get_current_head() or ""
    scripts = " ".join(" ".join(p.read_text(errors="replace").split()) for p in sorted(migrations.glob("versions/*.py")))
    tables = {name: frozenset(t.columns.keys()) for name, t in Base.metadata.tables.items()}
    return {**tables, "alembic_version": frozenset({"version_num"})}, head, scripts


def _unexpected(con: sqlite3.Connection, found: str) -> str | None:
    """Why the store on ``con`` is not an empty store as the installed MLflow creates it, whose
    one experiment is the Default one at ``found``; None when it is."""
    tables, head, scripts = _mlflow_schema()
    objects = con.execute("SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'").fetchall()
    other = [f"{kind} {name!r}" for kind, name, _ in objects if kind not in ("table", "index", "trigger")]
    have = {name for kind, name, _ in objects if kind == "table"}
    if other:
        return f"it holds a {other[0]}, which MLflow does not create"
    if have != set(tables):
        missing, extra = sorted(set(tables) - have), sorted(have - set(tables))
        return f"its tables differ from MLflow's (missing {missing or 'none'}, not MLflow's {extra or 'none'})"
    for name, columns in tables.items():
        if {str(r[1]) for r in con.execute(f'PRAGMA table_xinfo("{name}")')} != columns:
            return f"table {name}'s columns differ from MLflow's"
    for kind, name, sql in objects:
        if kind == "trigger" and " ".join(str(sql).split()) not in scripts:
            return f"it holds a trigger {name!r} that is not one of MLflow's"
    version = con.execute("SELECT version_num FROM alembic_version").fetchall()
    if version != [(head,)]:
        return f"its schema revision is {[v[0] for v in version]}, not the installed MLflow's {head!r}"
    for name in sorted(have - {"alembic_version", "experiments", "workspaces"}):
        if con.execute(f'SELECT 1 FROM "{name}" LIMIT 1').fetchone():
            return f"table {name} is not empty"
    experiments = _rows(con, "experiments")
    if [(e.get("experiment_id"), e.get("name"), e.get("artifact_location"), e.get("lifecycle_stage"))
            for e in experiments] != [(0, "Default", found, "active")]:
        return f"its experiments are not the Default one alone at {found!r}"
    if any(w.get("name") != "default" or any(v is not None for k, v in w.items() if k not in ("name", "description"))
           for w in _rows(con, "workspaces")):
        return "its workspaces are not MLflow's default one"
    return None


def _rows(con: sqlite3.Connection, table: str) -> list[dict[str, Any]]:
    cur = con.execute(f'SELECT * FROM "{table}"')  # noqa: S608 -- one of MLflow's table names
    names = [d[0] for d in cur.description]
    return [dict(zip(names, row)) for row in cur.fetchall()]


def _copy(source: Path, target: Path, *, found: str, put: str, stamp: bool) -> str | None:
    """Copy the store ``source`` to ``target`` (atomically, through a part file beside it) when it
    is an empty store as the installed MLflow creates it, its one experiment the Default one at
    ``found``, rewritten to ``put`` (and, with ``stamp``, its creation and update times to now).
    None when copied; otherwise why not (nothing written)."""
    part = target.with_name(f".{target.name}.{uuid.uuid4().hex}.part")
    try:
        shutil.copyfile(source, part)
        with contextlib.closing(sqlite3.connect(part)) as con, con:
            # An empty store: SQLite's check of every page takes milliseconds.
            check = con.execute("PRAGMA quick_check").fetchall()
            why = f"SQLite's check says {check!r}" if check != [("ok",)] else _unexpected(con, found)
            if why is not None:
                return why
            con.execute("UPDATE experiments SET artifact_location = ? WHERE experiment_id = 0", (put,))
            if stamp:
                now = int(time.time() * 1000)
                con.execute("UPDATE experiments SET creation_time = ?, last_update_time = ? WHERE experiment_id = 0",
                            (now, now))
        os.replace(part, target)  # atomic: a concurrent writer's copy is as good as ours
        return None
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
        why = _copy(db, template, found=_default_location(os.getcwd()), put=_default_location(_CWD), stamp=False)
        if why is not None:
            log.debug("MLflow store %s not kept as a template: %s", db, why)
        return why is None
    except (OSError, sqlite3.Error, DataError, ImportError, AttributeError) as exc:  # DataError: a bad cache folder
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
    except (OSError, DataError) as exc:  # DataError: a bad cache folder
        log.debug("MLflow store %s not seeded from a template (%s); MLflow creates it", db, exc)
        return False
    try:
        why = _copy(template, db, found=_default_location(_CWD), put=_default_location(os.getcwd()), stamp=True)
    except (OSError, sqlite3.Error, ImportError, AttributeError) as exc:  # a broken file; an MLflow laid out anew
        why = f"{type(exc).__name__}: {exc}"
    if why is not None:
        log.warning("MLflow store template %s not used: %s; MLflow creates %s itself -- fix: delete the template "
                    "(the next store MLflow creates is kept in its place)", template, why, db)
    return why is None


__all__ = ["keep_template", "seed_store", "template_path"]
