"""Span geometry over character offsets: the overlap rule of docs/contract.md §4 and covered fractions.

Chunk relevance, evidence recall and citation metrics all measure spans with these two functions.
"""

from __future__ import annotations

from collections.abc import Sequence

from rag_bench.domain import EvidenceSpan


def overlap_ratio(start: int, end: int, span_start: int, span_end: int) -> float:
    """``|a ∩ b| / min(|a|, |b|)`` for ``a = [start, end)`` and ``b = [span_start, span_end)``: a
    large chunk containing a short quote and a small chunk inside a long section both score 1.

    >>> overlap_ratio(0, 100, 10, 20), overlap_ratio(10, 20, 0, 100), overlap_ratio(0, 10, 5, 30)
    (1.0, 1.0, 0.5)
    """
    inter = max(0, min(end, span_end) - max(start, span_start))
    return inter / max(1, min(end - start, span_end - span_start))


def covered_fraction(span: EvidenceSpan, intervals: Sequence[tuple[str, int, int]]) -> float:
    """Fraction of ``span``'s characters covered by the union of ``(doc_id, start, end)`` intervals."""
    pieces = sorted((max(s, span.start), min(e, span.end)) for d, s, e in intervals
                    if d == span.doc_id and s < span.end and e > span.start)
    covered = 0
    cur_s, cur_e = -1, -1  # current merged interval; empty at start
    for s, e in pieces:
        if s > cur_e:
            covered += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    covered += cur_e - cur_s
    return covered / span.length if span.length else 0.0
