"""Context building: the top-k chunks, deduplicated, optionally expanded to their parent
sections, numbered, and cut to a token budget without ever cutting a passage."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import lru_cache

from rag_bench.domain import Chunk, Passage

_TOKEN = re.compile(r"\w+|[^\w\s]")


def count_tokens(text: str) -> int:
    """Approximate token count (words and punctuation marks); model-independent and stable."""
    return len(_TOKEN.findall(text))


@lru_cache(maxsize=1 << 16)
def _passage_tokens(text: str) -> int:
    # The same chunk texts are costed for every question of every cell of a sweep: once each here.
    return count_tokens(text)


def _covered(spans: list[tuple[int, int]], start: int, end: int) -> bool:
    for s, e in spans:
        if s <= start and end <= e:
            return True
    return False


def build_context(ranked: Sequence[Chunk], *, k: int, parents: Mapping[str, Chunk] | None = None,
                  expand_parents: bool = False, token_budget: int = 2000) -> list[Passage]:
    """Passages for the generator from the final ranking.

    Takes the top ``k`` chunks; with ``expand_parents`` a child is replaced by its parent (each
    parent once); chunks whose span is already covered by an earlier passage are dropped
    (dedupe). Passages are added in rank order while the running token count stays within
    ``token_budget``; the first passage is always kept, whole.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k!r}")
    out: list[Passage] = []
    used = 0
    seen: dict[str, list[tuple[int, int]]] = {}  # doc id -> spans already in the context
    for chunk in ranked[:k]:
        src = chunk
        if expand_parents and chunk.parent_id and parents and chunk.parent_id in parents:
            src = parents[chunk.parent_id]
        spans = seen.get(src.doc_id)
        if spans and _covered(spans, src.start, src.end):
            continue  # same text (or a part of it) already in the context
        cost = _passage_tokens(src.body)
        if out and used + cost > token_budget:
            break
        used += cost
        seen.setdefault(src.doc_id, []).append((src.start, src.end))
        out.append(Passage(len(out) + 1, src.chunk_id, src.doc_id, src.start, src.end, src.body, src.heading_path))
    return out
