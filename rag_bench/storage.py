"""A persistent key → bytes store in one SQLite file, safe for concurrent writers and kills.

SQLite in WAL mode gives what every rag_bench cache must guarantee: several processes may read
and write at once (writers queue on the lock), and a process killed mid-write leaves either the
whole transaction or nothing. Each row also stores a checksum of its bytes; a row whose bytes do
not match is never returned (it is treated as a miss and deleted), and :meth:`verify` finds them.

A plain checksum catches damage, not a forger: whoever can write the store can recompute it. A
store whose rows are not re-checked downstream (the parse cache: its text becomes the corpus) is
``keyed``: each row's checksum is an HMAC-SHA256 of its key and bytes under the cache folder's
secret (:func:`cache_secret`, ``<cache>/cache.key``: 32 random bytes, made on first use, readable
by its owner only). A row written without the secret -- forged, or copied from another cache or
another key -- is a corrupt row: never served, recomputed, and counted by ``cache verify``. A
secret file owned by another user, readable or writable by others, a link or of the wrong size is
refused (a DataError naming it and the fix), never used.

A cache folder that is not a folder (``RAG_BENCH_CACHE`` naming a file) and a store file SQLite
cannot read (not a database, a damaged page) are refused with a :class:`~rag_bench.errors.DataError`
naming the path and the fix, never a traceback: ``rag-bench cache verify --repair`` removes a
damaged store file (its entries are recomputed on use).
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import hmac
import logging
import os
import secrets
import sqlite3
import stat
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

from rag_bench.errors import DataError, Problem

log = logging.getLogger(__name__)

_BATCH = 500  # SQLite's default limit on host parameters is 999
V = TypeVar("V")


def checksum(data: bytes) -> str:
    """Row checksum: the first 128 bits of sha256."""
    return hashlib.sha256(data).hexdigest()[:32]


SECRET_FILE = "cache.key"  # the secret keyed stores' row checksums are made with (cache_secret)
SECRET_BYTES = 32


def _secret_problem(path: Path, message: str) -> DataError:
    return DataError(Problem(str(path), 0, "cache", message,
                             f"remove it (rm {path}) and make sure only you can write the cache folder (chmod 700 "
                             f"{path.parent}): a new secret is made on next use and the parse cache is recomputed"))


def _read_secret(path: Path) -> bytes | None:
    """The secret in ``path`` (None when there is none); a DataError when it cannot be trusted."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return None
    except OSError as exc:
        why = "is a symbolic link" if path.is_symlink() else f"cannot be read ({exc.strerror})"
        raise _secret_problem(path, f"the cache's secret {why}") from exc
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise _secret_problem(path, "the cache's secret is not a regular file")
        if st.st_uid != os.getuid():
            raise _secret_problem(path, f"the cache's secret belongs to user id {st.st_uid}, not to you "
                                  f"({os.getuid()}): whoever made it can sign cache rows")
        if st.st_mode & 0o077:
            raise _secret_problem(path, f"the cache's secret is open to others (mode {stat.filemode(st.st_mode)}): "
                                  "whoever reads it can sign cache rows")
        data = f.read(SECRET_BYTES + 1)
    if len(data) != SECRET_BYTES:
        raise _secret_problem(path, f"the cache's secret is {len(data)} bytes, not {SECRET_BYTES}")
    return data


def existing_secret(folder: Path) -> bytes | None:
    """The secret of the cache ``folder`` if one was made (None otherwise; nothing is written); a
    DataError when it cannot be trusted. For readers that must not write, such as ``--plan``."""
    return _read_secret(folder / SECRET_FILE)


def keyed_checksum(secret: bytes, key: str, data: bytes) -> str:
    """A keyed store's row checksum: an HMAC-SHA256 of the row's key and bytes under ``secret``."""
    return hmac.new(secret, str(key).encode() + b"\0" + bytes(data), hashlib.sha256).hexdigest()[:32]


def cache_secret(folder: Path) -> bytes:
    """The secret of the cache ``folder`` (``folder/cache.key``), made on first use: 32 random bytes
    written to a private temporary file (mode 0600) and linked into place whole, so no process
    reads a partial one; two processes making it at once agree on the first one linked."""
    path = folder / SECRET_FILE
    found = _read_secret(path)
    if found is not None:
        return found
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f".{SECRET_FILE}.{os.getpid()}.{secrets.token_hex(4)}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(secrets.token_bytes(SECRET_BYTES))
            f.flush()
            os.fsync(f.fileno())
        with contextlib.suppress(FileExistsError):  # another process published one meanwhile: theirs is used
            os.link(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    made = _read_secret(path)
    if made is None:
        raise _secret_problem(path, "the cache's secret could not be made")
    return made


def default_cache_dir() -> Path:
    """``$RAG_BENCH_CACHE`` or ``~/.cache/rag_bench``; a DataError when that path (or the nearest
    part of it that exists) is not a folder."""
    env = os.environ.get("RAG_BENCH_CACHE")
    path = Path(env).expanduser() if env else Path.home() / ".cache" / "rag_bench"
    check_cache_dir(path, "RAG_BENCH_CACHE" if env else "cache folder")
    return path


def check_cache_dir(path: Path, field: str = "cache folder") -> None:
    """Refuse a cache folder that is a file, or lies under one (it cannot be created)."""
    existing = path
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if existing.exists() and not existing.is_dir():
        what = "is a file" if existing == path else f"lies under {existing}, which is a file"
        raise DataError(Problem(str(path), 0, field, f"the cache folder {what}, not a folder",
                                "point RAG_BENCH_CACHE at a folder (it is created when missing), e.g. "
                                "RAG_BENCH_CACHE=~/.cache/rag_bench"))


def damaged(path: Path, exc: BaseException) -> DataError:
    """The error for a store file SQLite cannot read: names the file and the command that repairs it."""
    return DataError(Problem(str(path), 0, "cache", f"damaged cache file: SQLite cannot read it ({exc})",
                             f"run `rag-bench cache verify --repair --dir {path.parent}` (it removes the damaged "
                             "file; its entries are recomputed on use)"))


@contextlib.contextmanager
def readable(path: Path) -> Iterator[None]:
    """Turn SQLite's "not a database" / "malformed" errors on ``path`` into :func:`damaged`'s error.
    Operational errors (a lock held too long, a full disk) pass as they are."""
    try:
        yield
    except sqlite3.DatabaseError as exc:
        if isinstance(exc, sqlite3.OperationalError):
            raise
        raise damaged(path, exc) from exc


_STORES: weakref.WeakSet[BlobStore] = weakref.WeakSet()


def close_all() -> None:
    """Close this thread's connection of every store still open (at exit, also when the CLI leaves
    without the interpreter's teardown): the last connection's close checkpoints the WAL into the
    .sqlite file, so that file alone holds every row (a copy of it misses nothing)."""
    for store in list(_STORES):
        conn = getattr(store._local, "conn", None)
        if conn is not None and getattr(store._local, "pid", None) == os.getpid():
            with contextlib.suppress(sqlite3.Error):
                conn.close()
            store._local.conn = None


atexit.register(close_all)


def _setup(conn: sqlite3.Connection, table: str, attempts: int = 600) -> None:
    """WAL mode and the table, retried while another process sets up the same new file.

    Switching a new file to WAL takes an exclusive lock, and SQLite answers "database is locked"
    at once -- without waiting through the connection's busy timeout -- when two processes make
    that switch at the same moment (seen in the two-writer test: ~1 run in 12). Each attempt
    waits a little longer, up to about a minute in all."""
    for attempt in range(attempts):
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute(f"CREATE TABLE IF NOT EXISTS {table} (key TEXT PRIMARY KEY, data BLOB NOT NULL, "
                         "checksum TEXT NOT NULL)")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc) or attempt == attempts - 1:
                raise
            time.sleep(min(0.2, 0.01 * (attempt + 1)))


class BlobStore:
    """Bytes by key; subclasses add the value encoding and a per-row validity check."""

    table = "blobs"
    keyed = False  # row checksums are HMACs under the cache folder's secret (cache_secret)

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        check_cache_dir(self.path.parent)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self.corrupt = 0
        self._secret: bytes | None = None
        _STORES.add(self)

    def secret(self) -> bytes:
        """The cache folder's secret (:func:`cache_secret`; a DataError when it cannot be trusted)."""
        if self._secret is None:
            self._secret = cache_secret(self.path.parent)
        return self._secret

    def _sum(self, key: str, data: bytes) -> str:
        """A row's checksum: of its bytes, or for a ``keyed`` store an HMAC of its key and bytes."""
        if not self.keyed:
            return checksum(data)
        return keyed_checksum(self.secret(), key, data)

    def _intact(self, key: str, data: bytes, check: str) -> bool:
        return hmac.compare_digest(self._sum(key, data), str(check)) and self._valid(data)

    def _conn(self) -> sqlite3.Connection:
        # One connection per process and thread: SQLite handles must not cross a fork.
        conn = getattr(self._local, "conn", None)
        if conn is None or getattr(self._local, "pid", None) != os.getpid():
            conn = sqlite3.connect(self.path, timeout=120, isolation_level=None)
            try:
                with readable(self.path):
                    _setup(conn, self.table)
            except BaseException:
                conn.close()
                raise
            self._local.conn, self._local.pid = conn, os.getpid()
        return conn

    def close(self) -> None:
        """Close this thread's connection (the next use opens a new one)."""
        conn = getattr(self._local, "conn", None)
        if conn is not None and getattr(self._local, "pid", None) == os.getpid():
            with contextlib.suppress(sqlite3.Error):
                conn.close()
        self._local.conn = None

    def _valid(self, data: bytes) -> bool:
        """Extra per-value check beyond the checksum (e.g. vector length)."""
        return True

    def get_bytes(self, keys: Sequence[str]) -> dict[str, bytes]:
        """Stored bytes for ``keys`` (missing and corrupt keys are absent)."""
        out: dict[str, bytes] = {}
        bad: list[str] = []
        conn = self._conn()
        unique = list(dict.fromkeys(keys))
        with readable(self.path):
            for i in range(0, len(unique), _BATCH):
                part = unique[i:i + _BATCH]
                marks = ",".join("?" * len(part))
                for key, data, check in conn.execute(
                        f"SELECT key, data, checksum FROM {self.table} WHERE key IN ({marks})", part):
                    if not self._intact(key, data, check):
                        bad.append(key)
                    else:
                        out[key] = data
        if bad:
            self.corrupt += len(bad)
            log.warning("cache %s: %d corrupt entr%s dropped and recomputed", self.path, len(bad),
                        "y" if len(bad) == 1 else "ies")
            self._delete(bad)
        return out

    def put_bytes(self, items: Iterable[tuple[str, bytes]]) -> None:
        """Store values in one transaction: a kill leaves all of them or none."""
        rows = [(k, d, self._sum(k, d)) for k, d in items]
        if not rows:
            return
        conn = self._conn()
        with readable(self.path):
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.executemany(f"INSERT OR REPLACE INTO {self.table}(key, data, checksum) VALUES (?, ?, ?)", rows)
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise

    def _delete(self, keys: Sequence[str]) -> None:
        conn = self._conn()
        with readable(self.path):
            for i in range(0, len(keys), _BATCH):
                part = list(keys[i:i + _BATCH])
                conn.execute(f"DELETE FROM {self.table} WHERE key IN ({','.join('?' * len(part))})", part)

    def verify(self, *, repair: bool = False) -> tuple[int, int]:
        """Check every row: ``(ok, corrupt)``; with ``repair`` corrupt rows are deleted. A file
        SQLite cannot read, or whose integrity check fails, raises :func:`damaged`'s DataError."""
        conn = self._conn()
        ok, bad = 0, []
        with readable(self.path):
            found = [str(r[0]) for r in conn.execute("PRAGMA integrity_check(3)")]
            if found != ["ok"]:
                detail = "; ".join(" ".join(x.split()) for x in found)[:300]
                raise damaged(self.path, RuntimeError(f"integrity check failed: {detail}"))
            for key, data, check in conn.execute(f"SELECT key, data, checksum FROM {self.table}"):
                if self._intact(key, data, check):
                    ok += 1
                else:
                    bad.append(key)
        if repair and bad:
            self._delete(bad)
        return ok, len(bad)

    def sizes(self, keys: Sequence[str]) -> dict[str, int]:
        """Byte size of each stored value among ``keys`` (those the store holds; bytes not read)."""
        conn = self._conn()
        out: dict[str, int] = {}
        with readable(self.path):
            for i in range(0, len(keys), _BATCH):
                part = list(keys[i:i + _BATCH])
                out.update((str(k), int(n)) for k, n in conn.execute(
                    f"SELECT key, length(data) FROM {self.table} WHERE key IN ({','.join('?' * len(part))})", part))
        return out

    def __len__(self) -> int:
        conn = self._conn()
        with readable(self.path):
            return int(conn.execute(f"SELECT COUNT(*) FROM {self.table}").fetchone()[0])


def remove_store(path: Path) -> None:
    """Delete a store file with its WAL and shared-memory files (``cache verify --repair`` of a
    damaged file: its entries are recomputed on use). Close every connection to it first."""
    for p in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        p.unlink(missing_ok=True)


@dataclass(frozen=True)
class Lookup(Generic[V]):
    """What :func:`get_or_compute` returns: a value per distinct key (found or computed), and
    which keys the store served."""

    values: dict[str, V]
    found: frozenset[str]


def get_or_compute(store: BlobStore | None, keys: Sequence[str], *,
                   compute: Callable[[list[str]], Iterable[tuple[str, V]]], encode: Callable[[V], bytes],
                   decode: Callable[[bytes], V], keep: Callable[[V], bool] = lambda v: True,
                   each: bool = False) -> Lookup[V]:
    """The one lookup → dedupe → compute → store sequence under every persistent cache.

    Distinct ``keys`` the store holds are decoded; the rest are handed to ``compute`` once each,
    which yields ``(key, value)`` pairs (any order, any subset). Values for which ``keep`` is true
    (successes) are stored: in one transaction at the end, or each as it arrives with ``each``
    (slow calls such as an LLM judge, so a kill keeps the finished ones). ``store=None``: nothing
    is looked up or stored; each distinct key is still computed once.
    """
    unique = list(dict.fromkeys(keys))
    values: dict[str, V] = {k: decode(b) for k, b in store.get_bytes(unique).items()} if store is not None else {}
    found = frozenset(values)
    todo = [k for k in unique if k not in found]
    fresh: list[tuple[str, bytes]] = []
    for k, v in compute(todo) if todo else ():
        values[k] = v
        if store is not None and keep(v):
            if each:
                store.put_bytes([(k, encode(v))])
            else:
                fresh.append((k, encode(v)))
    if store is not None and fresh:
        store.put_bytes(fresh)
    return Lookup(values, found)
