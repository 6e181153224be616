"""Semantic chunking: cut between adjacent sentences whose embeddings disagree, within sections.

Units are sentences of paragraphs and list items, and whole tables and code blocks. A chunk ends
where the cosine similarity of two adjacent units falls below ``threshold`` — or, when no
threshold is given, below the ``percentile``-th percentile of all adjacent similarities in the
corpus — or where adding the next unit would exceed ``size`` characters. Chunks never cross a section.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from rag_bench.chunking.base import make_chunks, positive_int
from rag_bench.domain import Chunk, Document
from rag_bench.errors import ConfigError
from rag_bench.text.markdown import parse_blocks
from rag_bench.text.sentences import Span, sentence_spans


def _units(doc: Document) -> list[list[Span]]:
    """Units of each section body, in order."""
    out = []
    for sec in doc.sections:
        units: list[Span] = []
        for b in parse_blocks(doc.text, sec.body_start, sec.end):
            if b.kind in ("table", "code"):
                units.append((b.start, b.end))
            else:
                units.extend(sentence_spans(doc.text, b.start, b.end))
        if units:
            out.append(units)
    return out


def split_points(sims: np.ndarray, cut: float, starts: Sequence[int], ends: Sequence[int], *,
                 max_chars: int, min_chars: int = 0) -> list[tuple[int, int]]:
    """Group unit indices ``[i, j)``: break before unit i where ``sims[i-1] < cut`` (once the group
    holds ``min_chars``) or where the span would exceed ``max_chars``.

    >>> split_points(np.array([0.9, 0.1, 0.8]), 0.5, [0, 11, 22, 33], [10, 21, 32, 43], max_chars=100)
    [(0, 2), (2, 4)]
    >>> split_points(np.array([0.1, 0.9]), 0.5, [0, 11, 22], [10, 21, 32], max_chars=100, min_chars=15)
    [(0, 3)]
    """
    groups = []
    first = 0
    for i in range(1, len(starts)):
        semantic_break = sims[i - 1] < cut and ends[i - 1] - starts[first] >= min_chars
        if semantic_break or ends[i] - starts[first] > max_chars:
            groups.append((first, i))
            first = i
    groups.append((first, len(starts)))
    return groups


class SemanticChunker:
    """Parameters
    ----------
    threshold:
        Similarity below which adjacent units are split (null = use ``percentile``).
    percentile:
        Percentile of the corpus' adjacent similarities used as the threshold when none is given.
    size:
        Upper bound on a chunk's body in characters (a single longer unit stays whole).
    min_chars:
        No semantic cut before a chunk holds this many characters (avoids one-line chunks).
    prefix_headings:
        Prepend the heading path to the indexed text.
    embedder:
        Injected from the ``embedder`` group; sentence vectors go through its cache.
    """

    def __init__(self, embedder: Any = None, threshold: float | None = None, percentile: float = 25.0,
                 size: int = 1200, min_chars: int = 150, prefix_headings: bool = True) -> None:
        if threshold is not None and not (isinstance(threshold, (int, float)) and -1 <= threshold <= 1):
            raise ConfigError(f"chunker.threshold must be a cosine in [-1, 1] or null, got {threshold!r}")
        if not (isinstance(percentile, (int, float)) and 0 <= percentile <= 100):
            raise ConfigError(f"chunker.percentile must be in [0, 100], got {percentile!r}")
        self.embedder = embedder
        self.threshold, self.percentile = threshold, float(percentile)
        self.size = positive_int("size", size)
        self.min_chars = positive_int("min_chars", min_chars, minimum=0)
        self.prefix_headings = bool(prefix_headings)

    def chunk(self, documents: Sequence[Document]) -> list[Chunk]:
        """Chunks of all documents (sentence vectors embedded in one batch)."""
        if self.embedder is None:
            raise ConfigError("chunker=semantic needs an embedder -- fix: keep the embedder group set")
        per_doc = [_units(d) for d in documents]
        texts = [d.text[s:e] for d, secs in zip(documents, per_doc) for units in secs for s, e in units]
        vecs = self.embedder.embed_documents(texts) if texts else np.zeros((0, 1), np.float32)
        sims_all: list[np.ndarray] = []
        pos = 0
        for secs in per_doc:
            for units in secs:
                v = vecs[pos:pos + len(units)]
                sims_all.append(np.sum(v[:-1] * v[1:], axis=1))
                pos += len(units)
        flat = np.concatenate(sims_all) if sims_all else np.zeros(0)
        cut = self.threshold if self.threshold is not None else \
            (float(np.percentile(flat, self.percentile)) if flat.size else 0.0)
        out: list[Chunk] = []
        k = 0
        for doc, secs in zip(documents, per_doc):
            spans: list[Span] = []
            for units in secs:
                sims = sims_all[k]
                k += 1
                starts, ends = [s for s, _ in units], [e for _, e in units]
                for i, j in split_points(sims, cut, starts, ends, max_chars=self.size,
                                         min_chars=self.min_chars):
                    spans.append((starts[i], ends[j - 1]))
            out.extend(make_chunks(doc, spans, prefix_headings=self.prefix_headings))
        return out
