"""Persistent, content-addressed embedding cache (see :mod:`rag_bench.storage` for the guarantees).

Key = sha256 of (model identity, prefix, text), length-prefixed so the parts cannot run together.

Two kinds of storage live side by side in a cache folder:

* ``embeddings.sqlite`` -- the local store (SQLite in WAL mode): safe for many processes of ONE
  machine, not for writers on several nodes (SQLite's locks and WAL shared memory do not work over
  NFS and similar network filesystems).
* ``embeddings.shards/*.vecs`` -- immutable shard files (:class:`ShardSet`): safe for any number
  of writers on any number of nodes sharing one folder. Each file is written whole under a
  temporary name unique to its writer (host, pid, random part) and then renamed into place
  (``os.replace``; a rename within one folder is atomic on POSIX filesystems and on NFS, where
  the server performs it). A reader therefore sees a file either complete or not at all, never half
  written; nothing is ever modified or appended to in place, so there is no lock to take and no
  two writers ever touch the same file. A file whose trailing sha256 does not match its bytes is
  skipped (its vectors are misses, recomputed). Phase 1 of a two-phase sweep
  (:mod:`rag_bench.cluster.embed_phase`) writes shard files; every lookup reads them first.

A lookup asks for the texts of one model, so the vectors it returns have one size: a shard whose
vectors disagree in size with ``embeddings.sqlite``'s for the same text (or with the vectors most
of the lookup has) is not used, with a warning, and those vectors are recomputed; ``rag-bench cache
verify`` reports damaged and disagreeing shards (exit 2) and ``--repair`` deletes them.

With ``RAG_BENCH_CACHE_SHARDS=1`` in the environment the embedders' own writes go to new shard
files too and ``embeddings.sqlite`` is never opened (cluster jobs on a network filesystem); without
it (the default, every local run) new vectors go to SQLite exactly as before, and a lookup whose
keys the shards all hold does not open SQLite either.
"""

from __future__ import annotations

import hashlib
import logging
import os
import socket
import threading
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np

from rag_bench import switches
from rag_bench.storage import BlobStore, default_cache_dir

__all__ = ["EmbeddingCache", "ShardSet", "default_cache_dir", "shards_only", "text_key", "vector_bytes",
           "vector_from_bytes"]

log = logging.getLogger(__name__)

SHARD_DIR = "embeddings.shards"
SHARD_SUFFIX = ".vecs"
_MAGIC = b"RBVECS01"
_HEADER = 8 + 8 + 8  # magic, count (uint64 LE), dim (uint64 LE)
_KEY = 32            # a key stored as its 32 raw sha256 bytes
_TRAILER = 32        # sha256 of every byte before it


def vector_bytes(v: np.ndarray) -> bytes:
    """A vector as stored: float32, little-endian machine order, contiguous."""
    return np.ascontiguousarray(v, dtype=np.float32).tobytes()


def vector_from_bytes(data: bytes) -> np.ndarray:
    """The stored vector (a read-only view of ``data``)."""
    return np.frombuffer(data, dtype=np.float32)


def text_key(model_id: str, prefix: str, text: str) -> str:
    """Cache key of one text for one model and prefix."""
    h = hashlib.sha256()
    for part in (model_id, prefix, text):
        b = part.encode("utf-8")
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)
    return h.hexdigest()


def _is_hex(key: str) -> bool:
    try:
        bytes.fromhex(key)
    except ValueError:
        return False
    return True


def shards_only() -> bool:
    """``RAG_BENCH_CACHE_SHARDS`` is set to 1/true/yes/on: new vectors go to shard files only
    (:mod:`rag_bench.switches`)."""
    return switches.current().cache_shards


class _Shard:
    """One shard file, opened read-only: its sorted keys and its vectors (memory-mapped)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        raw = np.memmap(path, dtype=np.uint8, mode="r")
        if len(raw) < _HEADER + _TRAILER or bytes(raw[:8]) != _MAGIC:
            raise ValueError("not a rag_bench vector shard")
        n = int.from_bytes(bytes(raw[8:16]), "little")
        dim = int.from_bytes(bytes(raw[16:24]), "little")
        if len(raw) != _HEADER + n * (_KEY + 4 * dim) + _TRAILER:
            raise ValueError(f"size {len(raw)} does not match its header ({n} vectors of {dim})")
        h = hashlib.sha256()
        body = len(raw) - _TRAILER
        for i in range(0, body, 1 << 24):
            h.update(raw[i:min(i + (1 << 24), body)].tobytes())
        if h.digest() != bytes(raw[body:]):
            raise ValueError("checksum mismatch (damaged or truncated)")
        self.n, self.dim = n, dim
        self.keys = raw[_HEADER:_HEADER + n * _KEY].view(f"S{_KEY}")
        self.vectors = raw[_HEADER + n * _KEY:body].view(np.float32).reshape(n, dim)

    def find(self, keys: np.ndarray) -> np.ndarray:
        """Row of each key (``keys``: an ``S32`` array), -1 where absent."""
        if self.n == 0:
            return np.full(len(keys), -1)
        at = np.searchsorted(self.keys, keys)
        at = np.minimum(at, self.n - 1)
        return np.where(self.keys[at] == keys, at, -1)


class ShardSet:
    """The immutable vector shard files of one folder: read by every process, written by any.

    A file holds vectors of one size, its keys sorted (found by binary search, memory-mapped, so a
    process holds no more than the pages it reads) and ends with the sha256 of its bytes, checked
    once per process when the file is first opened. New files appear atomically (written under a
    temporary name, then renamed), so :meth:`get_bytes` lists the folder on each call and opens the
    files it has not seen yet. See the module docstring for why this is safe with writers on
    several nodes.
    """

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self._open: dict[str, _Shard] = {}
        self._bad: set[str] = set()
        self._lock = threading.Lock()
        self.written = 0  # shard files this object wrote (the two-phase test counts them)

    def files(self) -> list[Path]:
        """The complete shard files in the folder (temporary files, names starting with '.', aside)."""
        if not self.folder.is_dir():
            return []
        return sorted(p for p in self.folder.iterdir() if p.suffix == SHARD_SUFFIX and not p.name.startswith("."))

    def _shards(self) -> list[_Shard]:
        with self._lock:
            for p in self.files():
                if p.name in self._open or p.name in self._bad:
                    continue
                try:
                    self._open[p.name] = _Shard(p)
                except (OSError, ValueError) as exc:
                    self._bad.add(p.name)
                    log.warning("cache shard %s skipped (%s); its vectors are recomputed on use -- fix: rag-bench "
                                "cache verify --repair --dir %s (deletes it)", p, exc, self.folder.parent)
            return list(self._open.values())

    def reject(self, path: Path, why: str) -> None:
        """Stop using the shard file ``path`` in this process (its vectors are recomputed), with a warning."""
        with self._lock:
            if self._open.pop(path.name, None) is not None or path.name not in self._bad:
                self._bad.add(path.name)
                log.warning("cache shard %s not used (%s); the texts it holds are looked up elsewhere or "
                            "recomputed -- fix: rag-bench cache verify --repair --dir %s (deletes it)", path, why,
                            self.folder.parent)

    def get_bytes(self, keys: Sequence[str]) -> dict[str, bytes]:
        """Stored bytes for ``keys`` (absent keys are absent from the result)."""
        return {k: data for k, (data, _) in self.find_bytes(keys).items()}

    def find_bytes(self, keys: Sequence[str]) -> dict[str, tuple[bytes, Path]]:
        """Stored bytes for ``keys`` and the shard file each came from."""
        unique = list(dict.fromkeys(keys))
        out: dict[str, tuple[bytes, Path]] = {}
        if not unique:
            return out
        shards = self._shards()
        if not shards:
            return out
        todo = [k for k in unique if len(k) == 2 * _KEY and _is_hex(k)]  # other keys are never in a shard
        want = np.array([bytes.fromhex(k) for k in todo], dtype=f"S{_KEY}")
        for shard in shards:
            if not todo:
                break
            rows = shard.find(want)
            hit = rows >= 0
            for i in np.flatnonzero(hit).tolist():
                out[todo[i]] = (shard.vectors[rows[i]].tobytes(), shard.path)
            todo = [k for k, h in zip(todo, hit.tolist()) if not h]
            want = want[~hit]
        return out

    def put_bytes(self, items: Iterable[tuple[str, bytes]], name: str = "") -> list[Path]:
        """Write ``items`` as new shard files (one per vector size), each complete or not at all.

        ``name`` starts each file name (e.g. the phase-1 shard); a unique part (host, pid, random)
        follows it, so concurrent writers never pick the same name."""
        by_size: dict[int, dict[bytes, bytes]] = {}
        for k, data in items:
            if len(data) == 0 or len(data) % 4:
                raise ValueError(f"a vector is float32 bytes, got {len(data)} bytes for key {k}")
            by_size.setdefault(len(data), {})[bytes.fromhex(k)] = data
        written = []
        for size, rows in sorted(by_size.items()):
            written.append(self._write(rows, size // 4, name))
        return written

    def _write(self, rows: dict[bytes, bytes], dim: int, name: str) -> Path:
        self.folder.mkdir(parents=True, exist_ok=True)
        unique = f"{socket.gethostname().split('.')[0]}-{os.getpid()}-{uuid.uuid4().hex[:12]}"
        final = self.folder / f"{name + '-' if name else ''}{unique}{SHARD_SUFFIX}"
        tmp = self.folder / f".{final.name}.tmp"
        keys = sorted(rows)
        h = hashlib.sha256()
        try:
            with open(tmp, "wb") as fh:
                for part in (_MAGIC, len(keys).to_bytes(8, "little"), dim.to_bytes(8, "little"), b"".join(keys)):
                    fh.write(part)
                    h.update(part)
                for i in range(0, len(keys), 4096):
                    part = b"".join(rows[k] for k in keys[i:i + 4096])
                    fh.write(part)
                    h.update(part)
                fh.write(h.digest())
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, final)  # atomic: readers see the whole file or none
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        self.written += 1
        return final

    def verify(self, sizes: Callable[[list[str]], dict[str, int]] | None = None) -> tuple[int, list[tuple[Path, str]]]:
        """``(vectors in good files, [(bad file, why)])`` over every shard file of the folder. A file
        is bad when damaged (header, size, checksum) or when a text it holds has a vector of another
        size in another shard file or in ``sizes(keys)`` (the SQLite store's: key -> bytes)."""
        good: list[_Shard] = []
        bad: dict[Path, str] = {}
        for p in self.files():
            try:
                good.append(_Shard(p))
            except (OSError, ValueError) as exc:
                bad[p] = f"damaged: {exc}"
        seen: dict[bytes, _Shard] = {}
        for shard in good:
            keys = [bytes(k) for k in shard.keys]
            if sizes is not None:
                hexed = [k.hex() for k in keys]
                other = {size for k, size in sizes(hexed).items() if size != 4 * shard.dim}
                if other:
                    bad[shard.path] = (f"vectors of size {shard.dim} where embeddings.sqlite has size "
                                       f"{'/'.join(str(n // 4) for n in sorted(other))} for the same texts")
            for k in keys:
                first = seen.setdefault(k, shard)
                if first.dim != shard.dim:
                    for a, b in ((first, shard), (shard, first)):
                        bad.setdefault(a.path, f"vectors of size {a.dim} where {b.path.name} has size {b.dim} "
                                               "for the same texts")
        return sum(s.n for s in good if s.path not in bad), sorted(bad.items())


class EmbeddingCache(BlobStore):
    """float32 vectors by key, shared by every cell, sweep and process using the same file, plus
    the immutable shard files beside it (``embeddings.shards/``, see the module docstring): a
    lookup reads the shards first and SQLite only for the keys they lack; a store goes to SQLite,
    or to a new shard file when ``RAG_BENCH_CACHE_SHARDS=1``."""

    table = "vectors"

    def __init__(self, path: str | Path) -> None:
        super().__init__(path)
        self.shards = ShardSet(self.path.parent / SHARD_DIR)

    def get_bytes(self, keys: Sequence[str]) -> dict[str, bytes]:
        """Stored bytes for ``keys`` (the texts of one model), all of one size: from the shard
        files, then SQLite for the keys they lack (with ``RAG_BENCH_CACHE_SHARDS=1`` SQLite is
        never opened). A shard file whose vectors disagree in size with SQLite's for the same texts
        is not used (:meth:`ShardSet.reject`); a remaining mix keeps the size most texts have."""
        found = self.shards.find_bytes(keys)
        out = {k: data for k, (data, _) in found.items()}
        rest = [k for k in dict.fromkeys(keys) if k not in out]
        if not shards_only() and self.path.exists():
            if found:
                # Shards are read first, so one forged for these texts would override SQLite's
                # entries: their sizes (not their bytes) are compared.
                stored = self.sizes(list(found))
                for path in {found[k][1] for k, n in stored.items() if n != len(found[k][0])}:
                    self.shards.reject(path, "its vectors disagree in size with embeddings.sqlite's for the same texts")
                    dropped = [k for k, (_, p) in found.items() if p == path]
                    for k in dropped:
                        del out[k], found[k]
                    rest += dropped
            if rest:
                out.update(super().get_bytes(rest))
        if len({len(data) for data in out.values()}) > 1:
            size = Counter(len(data) for data in out.values()).most_common(1)[0][0]
            for k in [k for k, data in out.items() if len(data) != size]:
                if k in found:
                    self.shards.reject(found[k][1], f"its vectors have size {len(out[k]) // 4} where the other "
                                                    f"vectors of the same model have {size // 4}")
                else:
                    log.warning("cache entry %s of size %d where the other vectors of the same model have %d: "
                                "recomputed", k[:16], len(out[k]) // 4, size // 4)
                del out[k]
        return out

    def verify_shards(self, *, repair: bool = False, against_sqlite: bool = True) -> tuple[int, list[tuple[Path, str]]]:
        """``(vectors ok, [(bad shard file, why)])`` (:meth:`ShardSet.verify`, checked against this
        SQLite store when it exists and ``against_sqlite``); ``repair`` deletes the bad files."""
        use = against_sqlite and self.path.exists()
        ok, bad = self.shards.verify(self.sizes if use else None)
        if repair:
            for path, _ in bad:
                path.unlink(missing_ok=True)
        return ok, bad

    def put_bytes(self, items: Iterable[tuple[str, bytes]]) -> None:
        """Store values: in SQLite in one transaction, or as one new shard file with
        ``RAG_BENCH_CACHE_SHARDS=1``; either way a kill leaves all of them or none."""
        if shards_only():
            self.shards.put_bytes(items)
        else:
            super().put_bytes(items)

    def _valid(self, data: bytes) -> bool:
        return len(data) > 0 and len(data) % 4 == 0
