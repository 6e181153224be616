"""Load a dataset folder (native or BEIR layout), validate it all, and fingerprint it."""

from __future__ import annotations

import hashlib
import time
from functools import lru_cache
from pathlib import Path

from rag_bench.data.beir import is_beir, load_beir
from rag_bench.data.files import dataset_files
from rag_bench.data.native import load_documents, load_questions, read_manifest
from rag_bench.data.problems import ProblemLog
from rag_bench.errors import DataError, Problem
from rag_bench.records import Dataset


def fingerprint(root: Path, files: list[Path] | None = None) -> str:
    """sha256 over every file of the dataset (relative path + bytes): changes when anything does."""
    h = hashlib.sha256()
    for path in sorted(files if files is not None else (p for p in root.rglob("*") if p.is_file())):
        h.update(path.relative_to(root).as_posix().encode())
        h.update(b"\0")
        h.update(_digest(path))
    return h.hexdigest()[:16]


SETTLED_NS = 2_000_000_000  # a file unchanged for this long has its digest kept
_DIGESTS: dict[str, tuple[tuple[int, ...], bytes]] = {}
_DIGESTS_KEPT = 200_000


def _digest(path: Path) -> bytes:
    """sha256 of a file's bytes. Every cell of a sweep loads its dataset again (an edit between
    cells is seen), and re-reading every file took ~3 ms a cell on the demo set, more on a large
    corpus: a digest is kept per path with the file's device, inode, size, mtime and ctime (ctime
    cannot be set back, so an edit that keeps size and mtime still changes the key), and only
    for a file last changed over 2 s before it was looked at, so an edit within one timestamp
    tick of the read is never hidden (git's "racy" rule)."""
    st = path.stat()
    key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    kept = _DIGESTS.get(str(path))
    if kept is not None and kept[0] == key:
        return kept[1]
    digest = hashlib.sha256(path.read_bytes()).digest()
    if time.time_ns() - max(st.st_mtime_ns, st.st_ctime_ns) > SETTLED_NS:
        if len(_DIGESTS) >= _DIGESTS_KEPT:
            _DIGESTS.clear()
        _DIGESTS[str(path)] = (key, digest)
    return digest


def load_dataset(path: str | Path, *, split: str = "test") -> Dataset:
    """Load and validate a dataset; raise :class:`DataError` listing *every* problem found."""
    root = Path(path).expanduser()
    if not root.is_dir():
        raise DataError(Problem(str(root), 0, "dataset.path", "dataset folder does not exist",
                                "pass dataset.path=DIR with docs/ + questions.jsonl (or a BEIR folder)"))
    log = ProblemLog(root)
    files = dataset_files(root, log)  # links out of the folder, devices, FIFOs: refused before any read
    log.raise_if_any(f"dataset {log.rel(root)} is invalid")
    return _load_cached(str(root.resolve()), split, fingerprint(root, files))


@lru_cache(maxsize=4)
def _load_cached(root_s: str, split: str, fp: str) -> Dataset:
    # Keyed by fingerprint: a sweep in one process parses the dataset once, an edit reloads it.
    root = Path(root_s)
    log = ProblemLog(root)
    manifest = read_manifest(root, log)
    if is_beir(root):
        documents, questions = load_beir(root, split, log)
        layout = "beir"
    else:
        documents = load_documents(root, log)
        questions = load_questions(root / "questions.jsonl", documents, log)
        layout = "native"
    log.raise_if_any(f"dataset {log.rel(root)} is invalid")
    return Dataset(name=str(manifest.get("name") or root.name), root=root_s, layout=layout,
                   documents=documents, questions=tuple(questions), fingerprint=fp)
