"""The cell cache's store: computed cells as rows of ``$RAG_BENCH_CACHE/cells.sqlite``, and how a
row is encoded (:mod:`rag_bench.runner.reuse` says when a cell is served from it and what its key holds).

A module of its own, below the runner and the tracking: the sweep's background process
(:mod:`rag_bench.tracking.finisher`) stores a computed cell here after writing its folder, off the
sweep's own thread (issue 57: encoding and storing a squad2-normans cell cost the sweep ~40 ms of
its ~300 ms), and the runner reads it.

A row: a magic line, the length of a JSON head (metrics, when it was computed, the name and length
of each file, and how they are packed), then the files' bytes -- run.trec, qrels.trec, each further
file (question-runs.jsonl: ~2.4 MB a squad2-normans cell, which a JSON string would escape quote by
quote) -- zstd-compressed together, and records.parquet last (compressed already).
"""

from __future__ import annotations

import dataclasses
import io
import json
import logging
import struct
import time
from dataclasses import dataclass
from typing import Any

import pandas as pd
import pyarrow as pa

from rag_bench.cells import CellResult, parquet_bytes
from rag_bench.storage import BlobStore, readable

log = logging.getLogger(__name__)

FILE = "cells.sqlite"
_MAGIC = b"RBCELL2\n"
_LENGTH = struct.Struct(">Q")
_RUN, _QRELS = "\0run.trec", "\0qrels.trec"  # the head's names of the two TREC files (no extra file's name)
# The files are stored zstd-compressed (pyarrow's codec: a dependency already) when pyarrow has it: a
# squad2-normans cell's 2.4 MB of text is 0.1 MB in 1.6 ms, where SQLite took ~16 ms to write it whole.
_CODEC = "zstd" if pa.Codec.is_available("zstd") else None


class CellStore(BlobStore):
    """Computed cells by (identity, code, libraries); keyed by the cache's secret."""

    table = "cells"
    keyed = True

    def keep_only(self, version: str) -> None:
        """Drop the rows of every other code version (their cells can no longer be served)."""
        with readable(self.path):
            self._conn().execute(f"DELETE FROM {self.table} WHERE substr(key, 1, ?) != ?",
                                 (len(version) + 1, f"{version}:"))


@dataclass(frozen=True)
class Keep:
    """Where a computed cell is to be stored: the store file and the row's key (its code version
    first, then ``:``). Plain data: it travels to the background process with the cell's job."""

    path: str
    key: str


def encode(result: CellResult) -> bytes:
    """A cell's result as a row's bytes (module docstring); the records' parquet bytes are those the
    result carries when it has them."""
    result = result.rendered()
    files = {_RUN: result.run_trec, _QRELS: result.qrels_trec, **result.extra_files}
    blobs = [text.encode("utf-8") for text in files.values()]
    records = result.records_parquet if result.records_parquet is not None else parquet_bytes(result.records)
    raw = b"".join(blobs)
    codec = _CODEC if _CODEC is not None and raw else None
    packed = raw if codec is None else pa.compress(raw, codec=codec, asbytes=True)
    head = json.dumps({"metrics": result.metrics, "computed_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                       "files": [[name, len(blob)] for name, blob in zip(files, blobs)],
                       "packed": [codec or "none", len(packed), len(raw)]},
                      default=_plain).encode()
    return b"".join([_MAGIC, _LENGTH.pack(len(head)), head, packed, records])


def decode(data: bytes) -> tuple[CellResult, str]:
    """:func:`encode`'s bytes as the result and when it was computed; ValueError for other bytes."""
    if not data.startswith(_MAGIC):
        raise ValueError("not a stored cell of this format")
    start = len(_MAGIC) + _LENGTH.size
    (n,) = _LENGTH.unpack(data[len(_MAGIC):start])
    head = json.loads(data[start:start + n])
    codec, size, raw_size = head["packed"]
    packed = bytes(data[start + n:start + n + size])
    raw = packed if codec == "none" else pa.decompress(packed, decompressed_size=raw_size, codec=codec, asbytes=True)
    at, files = 0, {}
    for name, length in head["files"]:
        files[name] = raw[at:at + length].decode("utf-8")
        at += length
    parquet = bytes(data[start + n + size:])
    run_trec, qrels_trec = files.pop(_RUN), files.pop(_QRELS)
    return CellResult(pd.read_parquet(io.BytesIO(parquet)), head["metrics"], run_trec, qrels_trec, files,
                      records_parquet=parquet), str(head.get("computed_at", ""))


def _plain(value: Any) -> Any:
    """numpy scalars and arrays in metrics as JSON's numbers and lists."""
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"cannot store {type(value).__name__} in a cell's metrics")


# Code versions whose other versions' rows this process dropped: one entry (a process has one version).
_PRUNED: set[str] = set()


def keep(where: Keep, result: CellResult) -> CellResult:
    """Store ``result`` at ``where`` (the first cell a process stores drops the rows of other code
    versions) and return it rendered (:meth:`~rag_bench.cells.CellResult.rendered`) with its records'
    parquet bytes, which the cell folder is then written with. A store that cannot be written is
    passed by: the cache is never worth a cell (a file that cannot be rendered is the cell's error: raised)."""
    result = result.rendered()
    try:
        if result.records_parquet is None:
            result = dataclasses.replace(result, records_parquet=parquet_bytes(result.records))
        store = CellStore(where.path)
        version = where.key.split(":", 1)[0]
        if version not in _PRUNED:
            _PRUNED.add(version)
            store.keep_only(version)
        store.put_bytes([(where.key, encode(result))])
        store.close()
    except Exception as exc:  # noqa: BLE001 -- a full disk or a locked store costs the next run a recompute, no more
        log.debug("cell cache not written: %s", exc)
    return result
