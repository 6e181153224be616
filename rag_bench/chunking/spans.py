"""Greedy packing of spans into chunks (words and sentences come from :mod:`rag_bench.text.sentences`)."""

from __future__ import annotations

from rag_bench.text.sentences import Span


def pack(spans: list[Span], max_chars: int, overlap: int = 0) -> list[Span]:
    """Greedily group consecutive spans into chunks of at most ``max_chars`` characters.

    A single span longer than ``max_chars`` becomes a chunk of its own (spans are never cut).
    ``overlap`` = how many trailing spans of a chunk start the next one (always making progress).
    """
    groups: list[Span] = []
    i = 0
    n = len(spans)
    while i < n:
        j = i + 1
        while j < n and spans[j][1] - spans[i][0] <= max_chars:
            j += 1
        groups.append((spans[i][0], spans[j - 1][1]))
        if j >= n:
            break
        i = max(i + 1, j - overlap)
    return groups
