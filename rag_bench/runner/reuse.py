"""Cells computed before, served from the cache: a warm grid under a new experiment name (issue 57).

A cell's result -- records, metrics, TREC files -- is a function of what :func:`cell_identity`
holds (its config and the dataset's content), of rag_bench's code and of the libraries installed.
Once computed, it is stored in ``$RAG_BENCH_CACHE/cells.sqlite`` (:mod:`rag_bench.cell_cache`; by
the sweep's background process, which writes the cell's folder, when it has one) under a key of all
three, and a cell with the same key in any experiment folder is written from there instead of being computed
again: chunking, retrieval, reranking, generation and every scorer included. Its DONE body says
so (``reused``), and its latency figures and cost counters (texts embedded, cache hits) are those
of the run that computed it.

The key's three parts:

- the cell's identity (the cell id's input: config without output/tracking keys, the dataset's
  fingerprint, a plugin's source digest and a local model folder's content digest); and its price table
  (``prices.*``: no part of the cell id, but of its ``cost/*`` metrics);
- rag_bench's code: the path, size and modification time of every source and config file of the
  package (an edit changes the time: a cell of edited code is computed again);
- the libraries: the names of the ``*.dist-info`` folders on ``sys.path`` (each holds a version: an
  upgrade or a new install changes the key) and Python's version.

Not seen: a model changed in place under the same hub id, and code patched at run time. Reuse is
off with ``RAG_BENCH_SHARE=0`` (every cell built from scratch) and with ``RAG_BENCH_REUSE=0``
(tests/conftest.py: a test's monkeypatched code is not in the key); a fault injection point
(``RAG_BENCH_FAILPOINT``) turns it off too. The store is keyed (an HMAC under the cache folder's
secret, :mod:`rag_bench.storage`): a row not written by this cache is never served. It keeps one
code version's cells: the first cell a process stores drops the rows of other versions.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from rag_bench import faults, switches
from rag_bench.cell_cache import FILE, CellStore, Keep, decode
from rag_bench.cells import CellResult
from rag_bench.runner.config import cell_identity
from rag_bench.storage import default_cache_dir

log = logging.getLogger(__name__)

_ROOT = Path(__file__).resolve().parents[1]  # the rag_bench package


@dataclass(frozen=True)
class Reused:
    """What a reused cell's DONE body says: the store row it came from and when it was computed."""

    key: str
    computed_at: str


def enabled() -> bool:
    """Whether cells may be reused: sharing on, ``RAG_BENCH_REUSE`` not 0 (:mod:`rag_bench.switches`),
    no fault injection point set (a test of a kill must compute its cell)."""
    on = switches.current()
    return on.share and on.reuse and not faults.armed()


@lru_cache(maxsize=1)  # one per process: the package's files are what this process imported
def code_version() -> str:
    """rag_bench's code and the installed libraries, as a digest (module docstring)."""
    h = hashlib.sha256()
    for path in sorted(_ROOT.rglob("*")):
        if path.suffix in (".py", ".yaml", ".json") and "__pycache__" not in path.parts:
            st = path.stat()
            h.update(f"{path.relative_to(_ROOT)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    for folder in sys.path:
        try:
            names = sorted(n for n in os.listdir(folder or ".") if n.endswith(".dist-info"))
        except OSError:
            continue
        h.update(("\0".join([folder, *names]) + "\n").encode())
    h.update(sys.version.encode())
    return h.hexdigest()[:32]


def key(identity: dict[str, Any]) -> str:
    """The store key of a cell of ``identity`` (its code version first, so a version's rows share a prefix)."""
    blob = json.dumps(identity, sort_keys=True, default=str).encode()
    return f"{code_version()}:{hashlib.sha256(blob).hexdigest()}"


def cell_key(cfg: DictConfig, dataset_fingerprint: str) -> str:
    """The store key of the cell ``cfg``: its identity and its price table. Prices are no part of the
    cell id (they change no output of the pipeline) but they are of its metrics (``cost/*``), so a cell
    computed unpriced, or at other prices, is never served as a priced one."""
    prices = OmegaConf.to_container(cfg.prices, resolve=True) if "prices" in cfg else None
    return key({**cell_identity(cfg, dataset_fingerprint), "prices": prices})


def result(cfg: DictConfig, dataset_fingerprint: str,
           compute: Callable[[], CellResult]) -> tuple[CellResult, Reused | None, Keep | None]:
    """The result of the cell ``cfg`` on the dataset of ``dataset_fingerprint``: the stored one when
    the cache holds it (and how it was found), else ``compute()``'s and where to store it for the
    next time (:func:`rag_bench.cell_cache.keep`: the caller stores it, in the sweep's background
    process when it has one). A store that cannot be read is passed by: the cell is computed, never
    failed, for the cache's sake."""
    if not enabled():
        return compute(), None, None
    row = cell_key(cfg, dataset_fingerprint)
    where: Keep | None = None
    try:
        path = default_cache_dir() / FILE
        found = CellStore(path).get_bytes([row]).get(row)
        if found is not None:
            got, when = decode(found)
            return got, Reused(row, when), None
        where = Keep(str(path), row)
    except Exception as exc:  # noqa: BLE001 -- a damaged or foreign row is recomputed, the cell is what matters
        log.debug("cell cache not read: %s", exc)
    return compute(), None, where
