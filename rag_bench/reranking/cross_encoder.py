"""Cross-encoder reranking with sentence-transformers' CrossEncoder from a local folder or hub id.

No cross-encoder ships on PyPI, so there is no offline default: ``reranker.model`` must name a
model folder (or a hub id when downloads are allowed with HF_HUB_OFFLINE=0). Scores of
(question, chunk text) pairs are kept per process and in a persistent cache
(``$RAG_BENCH_CACHE/rerank_pairs.sqlite``), so each pair is scored once across cells, sweeps and
processes (joblib / submitit workers sharing the cache folder).
"""

from __future__ import annotations

import hashlib
import os
import struct
import time
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from rag_bench import budget, heap, memo
from rag_bench.domain import Chunk, Question
from rag_bench.embedding.models import resolve_model, weights_hash
from rag_bench.errors import ConfigError
from rag_bench.reranking.base import check_depth
from rag_bench.storage import BlobStore, default_cache_dir, get_or_compute

# Pair scores of this process by pair key (the persistent store serves other processes), oldest
# dropped first past MAX_PAIR_SCORES (~250 bytes a pair: ~65 MB), so a long sweep's memory is bounded.
_PAIR_SCORES: dict[str, float] = {}
MAX_PAIR_SCORES = 262_144


def _remember(scores: dict[str, float], limit: int = MAX_PAIR_SCORES) -> None:
    """Keep ``scores`` in the process's pair memo, dropping the oldest pairs beyond ``limit``."""
    _PAIR_SCORES.update(scores)
    extra = len(_PAIR_SCORES) - limit
    if extra > 0:
        for key in list(_PAIR_SCORES)[:extra]:  # dicts keep insertion order: oldest first
            del _PAIR_SCORES[key]


class PairScoreCache(BlobStore):
    """Cross-encoder scores by (model identity, question, chunk text): one float64 each."""

    table = "rerank_pairs"

    def _valid(self, data: bytes) -> bool:
        return len(data) == 8


def pair_key(ident: str, question: str, text: str) -> str:
    """Key of one (question, text) pair for one scorer (model or service identity) in the pair cache."""
    return hashlib.sha256(f"{ident}\0{question}\0{text}".encode()).hexdigest()


@lru_cache(maxsize=2)
def _load(path: str, device: str, max_length: int | None, weights: str = "") -> Any:
    # ``weights``: the folder's weights_hash, so a folder edited in place is loaded again.
    # Offline unless HF_HUB_OFFLINE=0, also passed as local_files_only: huggingface_hub reads the
    # variable once, at import, so a process that imported it first would retry an unreachable hub.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    offline = os.environ["HF_HUB_OFFLINE"].strip().upper() in {"1", "ON", "YES", "TRUE"}  # huggingface_hub's rule
    from sentence_transformers import CrossEncoder

    try:
        model = CrossEncoder(path, device=device, max_length=max_length, local_files_only=offline)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"reranker.model: cannot load cross-encoder {path!r} ({exc}) -- fix: point "
                          "reranker.model at a local cross-encoder folder") from exc
    heap.freeze_loaded()  # in a sweep's batch the model stays loaded: full collections skip it (rag_bench.heap)
    return model


class CrossEncoderReranker:
    """Parameters
    ----------
    model:
        Local folder (or hub id) of a sentence-transformers CrossEncoder.
    depth:
        Shortlist size.
    batch_size, max_length, device:
        Passed to the model.
    cache:
        Keep pair scores in ``$RAG_BENCH_CACHE/rerank_pairs.sqlite`` for other processes and runs.
    """

    def __init__(self, model: str | None = None, depth: int = 20, batch_size: int = 32,
                 max_length: int | None = 512, device: str = "cpu", cache: bool = True) -> None:
        if not model:
            raise ConfigError("reranker.model is not set -- fix: reranker.model=/path/to/cross-encoder (no "
                              "cross-encoder ships offline; use reranker=dense or reranker=mmr otherwise)")
        self.path = resolve_model(model)
        self.depth, self.batch_size, self.max_length, self.device = (check_depth(depth), batch_size,
                                                                     max_length, device)
        self.pairs_scored = 0
        self._store = PairScoreCache(default_cache_dir() / "rerank_pairs.sqlite") if cache else None

    def scores(self, questions: Sequence[Question], shortlists: Sequence[Sequence[Chunk]]) -> list[np.ndarray]:
        """Cross-encoder score per (question, chunk); pairs already scored are reused."""
        ident = f"{self.path}@{weights_hash(self.path)}"
        flat = [(q.question, c.text) for q, s in zip(questions, shortlists) for c in s]
        keys = [pair_key(ident, *pair) for pair in flat]
        pairs = dict(zip(keys, flat))
        share = memo.sharing_enabled()
        memory = _PAIR_SCORES if share else {}
        known = {k: memory[k] for k in dict.fromkeys(keys) if k in memory}
        todo = [k for k in dict.fromkeys(keys) if k not in known]

        def predict(missing: list[str]) -> Iterable[tuple[str, float]]:
            model = _load(self.path, self.device, self.max_length, weights_hash(self.path))
            held = budget.hold("reranker", 0, units=len({pairs[k][0] for k in missing}))  # budget_usd: seconds after
            t0 = time.perf_counter()
            values = model.predict([pairs[k] for k in missing], batch_size=self.batch_size,
                                   show_progress_bar=False, convert_to_numpy=True)
            budget.charge(held, 0, seconds=time.perf_counter() - t0, units=len({pairs[k][0] for k in missing}))
            self.pairs_scored += len(missing)
            scores = np.asarray(values, dtype=np.float64).reshape(len(missing), -1)[:, -1]
            return zip(missing, (float(v) for v in scores))

        if todo:
            got = get_or_compute(self._store if share else None, todo, compute=predict,
                                 encode=lambda v: struct.pack("<d", v), decode=lambda b: struct.unpack("<d", b)[0])
            known.update(got.values)
            if share:
                _remember(got.values)
        out, pos = [], 0
        for s in shortlists:
            out.append(np.array([known[k] for k in keys[pos:pos + len(s)]]))
            pos += len(s)
        return out
