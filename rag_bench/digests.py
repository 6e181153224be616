"""Content digests of files, folders and code: what a thing really is, for cell ids and cache keys.

A name says what a thing is called; a digest says what it is. Cell ids and shared work are keyed
by digests wherever a name could stay the same while the content changes: dataset files, a local
model folder edited in place, a plugin's source edited between two runs.

Every file's sha256 is kept per (path, device, inode, size, mtime, ctime) once the file has been
unchanged for 2 s (:data:`SETTLED_NS`), so a sweep that looks at the same files for every cell
reads them once; ctime cannot be set back, so an edit that keeps size and mtime is still seen, and
a file changed less than 2 s before it is looked at is always read again (git's "racy" rule).
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import sys
import time
from pathlib import Path

SETTLED_NS = 2_000_000_000  # a file unchanged for this long has its digest kept
_DIGESTS: dict[str, tuple[tuple[int, ...], bytes]] = {}
_DIGESTS_KEPT = 200_000


def file_digest(path: Path) -> bytes:
    """sha256 of a file's bytes (kept per stat signature once the file has settled; see above)."""
    st = path.stat()
    key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    kept = _DIGESTS.get(str(path))
    if kept is not None and kept[0] == key:
        return kept[1]
    if st.st_size > 1 << 24:
        h = hashlib.sha256()
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
        digest = h.digest()
    else:
        digest = hashlib.sha256(path.read_bytes()).digest()
    if time.time_ns() - max(st.st_mtime_ns, st.st_ctime_ns) > SETTLED_NS:
        if len(_DIGESTS) >= _DIGESTS_KEPT:
            _DIGESTS.clear()
        _DIGESTS[str(path)] = (key, digest)
    return digest


def path_digest(path: str | Path) -> str:
    """Digest of a local file, or of a folder's files (relative names and bytes; a ``.cache``
    folder inside, as hub downloads leave, is not part of the model)."""
    root = Path(path).expanduser()
    if root.is_file():
        return file_digest(root).hex()[:16]
    h = hashlib.sha256()
    for f in sorted(p for p in root.rglob("*") if p.is_file() and ".cache" not in p.relative_to(root).parts):
        h.update(f.relative_to(root).as_posix().encode() + b"\0")
        h.update(file_digest(f))
    return h.hexdigest()[:16]


def source_digest(target: str) -> str:
    """Digest of the source file of the module that defines ``target`` (``"pkg.mod.Class"``), with
    the module's ``__version__`` when it has one; ``"unimportable"`` when
    the module cannot be imported (building the component then fails with its own message)."""
    return module_digest(target.rpartition(".")[0])


def module_digest(module_name: str) -> str:
    """Digest of a module's source file and version (see :func:`source_digest`)."""
    try:
        module = sys.modules.get(module_name) or importlib.import_module(module_name)
    except Exception:
        return "unimportable"
    try:
        source = inspect.getsourcefile(module)
    except TypeError:  # a built-in or extension module: its version is what identifies it
        source = None
    parts = [module_name]
    if source and Path(source).is_file():
        parts.append(file_digest(Path(source)).hex())
    version = getattr(module, "__version__", None)
    if isinstance(version, str):
        parts.append(version)
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]
