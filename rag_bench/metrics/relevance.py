"""Chunk relevance derived from evidence spans, and chunk-invariant evidence coverage.

Relevance of a chunk for one evidence span (same document)::

    overlap = |chunk ∩ span| / min(|chunk|, |span|)

so a large chunk containing a short quote and a small chunk inside a long evidence section both
count. A chunk is relevant to a question when it is relevant to any of its spans. Because labels
come from character offsets, they survive any change of chunker.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache

import numpy as np

from rag_bench.domain import Chunk, Document, EvidenceSpan, Passage, Question
from rag_bench.geometry import covered_fraction
from rag_bench.text.normalize import facts_present

RELEVANCE_MODES = ("overlap", "section", "facts")


class ChunkIndex:
    """Chunk offsets grouped by document, for fast span-overlap queries."""

    def __init__(self, chunks: Sequence[Chunk]) -> None:
        self.chunks = chunks
        by_doc: dict[str, list[int]] = {}
        for i, c in enumerate(chunks):
            by_doc.setdefault(c.doc_id, []).append(i)
        self._idx = {d: np.asarray(v, np.int64) for d, v in by_doc.items()}
        self._start = {d: np.asarray([chunks[i].start for i in v], np.int64) for d, v in by_doc.items()}
        self._end = {d: np.asarray([chunks[i].end for i in v], np.int64) for d, v in by_doc.items()}

    def overlap(self, span: EvidenceSpan) -> tuple[np.ndarray, np.ndarray]:
        """(chunk indices of the span's document, overlap ratio of each)."""
        if span.doc_id not in self._idx:
            return np.empty(0, np.int64), np.empty(0)
        s, e = self._start[span.doc_id], self._end[span.doc_id]
        inter = np.clip(np.minimum(e, span.end) - np.maximum(s, span.start), 0, None)
        denom = np.minimum(e - s, span.length).clip(min=1)
        return self._idx[span.doc_id], inter / denom

    def within(self, doc_id: str, start: int, end: int) -> np.ndarray:
        """Indices of chunks of ``doc_id`` lying entirely inside ``[start, end)``."""
        if doc_id not in self._idx:
            return np.empty(0, np.int64)
        s, e = self._start[doc_id], self._end[doc_id]
        return self._idx[doc_id][(s >= start) & (e <= end)]


def evidence_section(span: EvidenceSpan, documents: Mapping[str, Document] | None) -> tuple[int, int]:
    """The body span of the section ``span`` names, sub-sections included
    (:meth:`~rag_bench.domain.Document.section_span`); the span itself when it names none, or when
    no ``documents`` are given."""
    if documents is None:
        return span.start, span.end
    doc = documents[span.doc_id]
    secs = [s for s in doc.sections if s.heading_path == span.heading_path and span.heading_path]
    return doc.section_span(secs[0]) if secs else (span.start, span.end)


def relevant_chunks(question: Question, index: ChunkIndex, *, min_coverage: float = 0.5,
                    mode: str = "overlap", documents: Mapping[str, Document] | None = None
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Relevant chunk indices for ``question``, their grades, and per evidence span whether any
    chunk covers it.

    Parameters
    ----------
    mode:
        ``overlap`` (default, see module doc), ``section`` (chunk lies inside the evidence's
        section, :func:`evidence_section` in ``documents``) or ``facts`` (chunk text contains all
        the question's facts, normalised).

    Returns
    -------
    relevant : sorted unique chunk indices
    grades : the grade of each relevant chunk: the highest grade of the evidence spans it is
        relevant to (1 in ``facts`` mode)
    span_found : bool array, one per evidence span (False = no chunk of the corpus is relevant
        to that span, i.e. the chunker split the evidence)
    """
    if mode not in RELEVANCE_MODES:
        raise ValueError(f"mode must be one of {RELEVANCE_MODES}, got {mode!r}")
    if not 0 < min_coverage <= 1:
        raise ValueError(f"min_coverage must be in (0, 1], got {min_coverage!r}")
    found = np.zeros(len(question.evidence), bool)
    rel: list[np.ndarray] = []
    grades: list[np.ndarray] = []
    if mode == "facts":
        if question.facts:
            # Same normalisation as answer correctness, so "relevant by facts" means what "correct" means.
            hits = np.asarray([i for i, c in enumerate(index.chunks) if facts_present(c.text, question.facts)],
                              np.int64)
            rel.append(hits)
            grades.append(np.ones(hits.size, np.int64))
            found[:] = hits.size > 0
    else:
        for j, span in enumerate(question.evidence):
            if mode == "overlap":
                idx, ov = index.overlap(span)
                hit = idx[ov >= min_coverage]
            else:
                lo, hi = evidence_section(span, documents)
                hit = index.within(span.doc_id, lo, hi)
            found[j] = hit.size > 0
            rel.append(hit)
            grades.append(np.full(hit.size, span.grade, np.int64))
    if not rel:
        return np.empty(0, np.int64), np.empty(0, np.int64), found
    idx, grade = np.concatenate(rel), np.concatenate(grades)
    out = np.unique(idx)
    best = np.zeros(out.size, np.int64)
    np.maximum.at(best, np.searchsorted(out, idx), grade)
    return out, best, found


def evidence_coverage(question: Question, top: Sequence[Chunk | Passage], *,
                      min_coverage: float = 0.5) -> tuple[float, float]:
    """(evidence recall, complete) for one question given its top chunks (or the passages of its context).

    evidence recall = share of evidence spans whose characters are covered >= ``min_coverage`` by
    the union of ``top``; complete = 1.0 when every span is. A gold quote the parse lost
    (``question.lost``) is a span never covered. NaN for questions without evidence.
    """
    if not question.evidence and not question.lost:
        return float("nan"), float("nan")
    if not question.evidence:
        return 0.0, 0.0
    recall, complete = _coverage(question.evidence, tuple((c.doc_id, c.start, c.end) for c in top), min_coverage)
    if question.lost:
        n = len(question.evidence)
        return recall * n / (n + len(question.lost)), 0.0
    return recall, complete


@lru_cache(maxsize=1 << 16)
def _coverage(evidence: tuple[EvidenceSpan, ...], intervals: tuple[tuple[str, int, int], ...],
              min_coverage: float) -> tuple[float, float]:
    # Pure in its (frozen) arguments: cells sharing a chunking and a ranking compute it once.
    ok = [covered_fraction(s, list(intervals)) >= min_coverage for s in evidence]
    return float(np.mean(ok)), float(all(ok))
