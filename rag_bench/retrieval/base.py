"""Retriever protocol, the access filter applied inside retrieval, and ranking helpers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from rag_bench.components import optional
from rag_bench.domain import Asker, Chunk, Document, Question, Ranking


class Retriever(Protocol):
    """Indexes chunks once, then ranks them for a batch of questions (same order out)."""

    def fit(self, chunks: Sequence[Chunk]) -> None:
        """Build the index over ``chunks`` (the searchable chunks of one cell)."""
        ...

    def search(self, questions: Sequence[Question], depth: int, access: AccessFilter) -> list[Ranking]:
        """Top-``depth`` chunks per question among those ``access`` allows for its asker."""
        ...

    @optional
    def ann_probe(self, questions: Sequence[Question], access: AccessFilter) -> AnnProbe | None:
        """What the ANN scorer measures (metrics.json ``ann``, ``index.target_recall``): the
        approximate index, its exact reference over the same vectors, the question vectors and the
        askers' masks; default: none (the retriever has no approximate index)."""
        return None


@dataclass(frozen=True)
class AnnProbe:
    """An approximate index laid open for measurement by
    :mod:`rag_bench.evaluation.scorers.ann` (the retriever never measures itself: measuring is
    the evaluation layer's). ``reference`` is the exact index over the same vectors (None when
    ``index`` is itself exact); ``masks[r]`` is question ``r``'s asker's access mask (None: all)."""

    index: Any
    reference: Any
    query_vectors: np.ndarray
    masks: Sequence[np.ndarray | None]
    qids: Sequence[str]


class AccessFilter:
    """Which chunks each asker may read, as boolean masks over the indexed chunk list.

    Retrievers apply the mask *before* selecting the top results, so a restricted asker still
    gets ``depth`` results whenever that many readable chunks exist, and never a forbidden one.
    """

    def __init__(self, chunks: Sequence[Chunk], documents: Mapping[str, Document]) -> None:
        self._docs = [documents[c.doc_id] for c in chunks]
        # Keyed by Asker.key, a (tenant, frozenset(groups)) value: askers that differ in any way
        # that matters to readable_by never share a mask (a joined string once did).
        self._cache: dict[tuple[str | None, frozenset[str]], np.ndarray] = {}
        self.size = len(chunks)

    def mask(self, asker: Asker | None) -> np.ndarray | None:
        """Boolean mask of readable chunks, or None when everything is readable."""
        if asker is None:
            return None
        key = asker.key
        if key not in self._cache:
            self._cache[key] = np.fromiter((d.readable_by(asker) for d in self._docs), bool, self.size)
        m = self._cache[key]
        return None if m.all() else m


def top_k(scores: np.ndarray, depth: int, mask: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Indices and scores of the ``depth`` best allowed items.

    Order: score descending, ties by index ascending (document order), so the ranking is
    deterministic; :func:`strictly_decreasing` then makes the written scores strict.
    """
    scores = np.asarray(scores, dtype=np.float64)
    allowed = np.flatnonzero(mask) if mask is not None else np.arange(scores.size)
    cand = scores[allowed]
    d = min(depth, cand.size)
    if d == 0:
        return np.empty(0, np.int64), np.empty(0, np.float64)
    if d < cand.size:
        # Partition keeps every item tied with the cut-off score so tie order stays by index.
        kth = np.partition(-cand, d - 1)[d - 1]
        keep = np.flatnonzero(-cand <= kth)
        allowed, cand = allowed[keep], cand[keep]
    order = np.lexsort((allowed, -cand))[:d]
    return allowed[order], cand[order]


def strictly_decreasing(scores: np.ndarray) -> np.ndarray:
    """Scores rounded to float32 and made strictly decreasing, one float32 step at a time.

    trec_eval keeps scores as C ``float`` and re-sorts runs by score (ties by docno descending):
    scores strictly decreasing *in float32* make it keep our order exactly. Tied values move
    down by a few float32 ulps; the result is returned as float64 holding float32 values, so
    its ``repr`` in run.trec parses back to the same float.
    """
    out = np.array(scores, dtype=np.float32)
    for i in range(1, out.size):
        if out[i] >= out[i - 1]:
            out[i] = np.nextafter(out[i - 1], np.float32(-np.inf))
    return out.astype(np.float64)
