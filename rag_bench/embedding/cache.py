"""Persistent, content-addressed embedding cache in one SQLite file.

Key = sha256(model identity, prefix, text). SQLite in WAL mode gives what the cache must
guarantee: several processes may read and write at once (writers queue on the lock), and a
process killed mid-write leaves either the whole transaction or nothing. Each row also stores a
checksum of its vector bytes; a row whose bytes do not match is never returned (it is treated
as a miss, deleted and recomputed), and ``rag-bench cache verify`` finds such rows.
"""

from __future__ import annotations

import hashlib
import logging
import os
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS vectors (
    key TEXT PRIMARY KEY,
    dim INTEGER NOT NULL,
    data BLOB NOT NULL,
    checksum TEXT NOT NULL
)
"""
_BATCH = 500  # SQLite's default limit on host parameters is 999


def text_key(model_id: str, prefix: str, text: str) -> str:
    """Cache key of one text for one model and prefix."""
    h = hashlib.sha256()
    for part in (model_id, prefix, text):
        b = part.encode("utf-8")
        h.update(len(b).to_bytes(8, "little"))  # length-prefixed: no ambiguity between parts
        h.update(b)
    return h.hexdigest()


def _checksum(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:32]


def default_cache_dir() -> Path:
    """``$RAG_BENCH_CACHE`` or ``~/.cache/rag_bench``."""
    env = os.environ.get("RAG_BENCH_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "rag_bench"


class EmbeddingCache:
    """float32 vectors by key, shared by every cell, sweep and process using the same file."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self.corrupt = 0

    def _conn(self) -> sqlite3.Connection:
        # One connection per process and thread: SQLite handles must not cross a fork.
        conn = getattr(self._local, "conn", None)
        if conn is None or getattr(self._local, "pid", None) != os.getpid():
            conn = sqlite3.connect(self.path, timeout=120, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute(_SCHEMA)
            self._local.conn, self._local.pid = conn, os.getpid()
        return conn

    def get_many(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        """Vectors found for ``keys`` (missing and corrupt keys are absent from the result)."""
        out: dict[str, np.ndarray] = {}
        bad: list[str] = []
        conn = self._conn()
        unique = list(dict.fromkeys(keys))
        for i in range(0, len(unique), _BATCH):
            part = unique[i:i + _BATCH]
            marks = ",".join("?" * len(part))
            for key, dim, data, checksum in conn.execute(
                    f"SELECT key, dim, data, checksum FROM vectors WHERE key IN ({marks})", part):
                if _checksum(data) != checksum or len(data) != 4 * dim:
                    bad.append(key)
                    continue
                out[key] = np.frombuffer(data, dtype=np.float32)
        if bad:
            self.corrupt += len(bad)
            log.warning("embedding cache %s: %d corrupt entr%s dropped and recomputed", self.path, len(bad),
                        "y" if len(bad) == 1 else "ies")
            self._delete(bad)
        return out

    def put_many(self, items: Iterable[tuple[str, np.ndarray]]) -> None:
        """Store vectors; one transaction, so a kill leaves all of them or none."""
        rows = []
        for key, vec in items:
            data = np.ascontiguousarray(vec, dtype=np.float32).tobytes()
            rows.append((key, len(data) // 4, data, _checksum(data)))
        if not rows:
            return
        conn = self._conn()
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.executemany("INSERT OR REPLACE INTO vectors(key, dim, data, checksum) VALUES (?, ?, ?, ?)", rows)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def _delete(self, keys: Sequence[str]) -> None:
        conn = self._conn()
        for i in range(0, len(keys), _BATCH):
            part = list(keys[i:i + _BATCH])
            conn.execute(f"DELETE FROM vectors WHERE key IN ({','.join('?' * len(part))})", part)

    def verify(self, *, repair: bool = False) -> tuple[int, int]:
        """Check every row's checksum: ``(ok, corrupt)``; with ``repair`` corrupt rows are deleted."""
        conn = self._conn()
        check = conn.execute("PRAGMA integrity_check").fetchone()[0]
        if check != "ok":
            raise RuntimeError(f"{self.path}: SQLite integrity check failed: {check}")
        ok, bad = 0, []
        for key, dim, data, checksum in conn.execute("SELECT key, dim, data, checksum FROM vectors"):
            if _checksum(data) == checksum and len(data) == 4 * dim:
                ok += 1
            else:
                bad.append(key)
        if repair and bad:
            self._delete(bad)
        return ok, len(bad)

    def __len__(self) -> int:
        return int(self._conn().execute("SELECT COUNT(*) FROM vectors").fetchone()[0])
