"""What every filter shares: the protocol and the context it reads (the corpus index, the reader,
the embedder and the thresholds)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from rag_bench.drafting.corpus import Index
from rag_bench.drafting.records import Draft, Verdict


@dataclass(frozen=True)
class Thresholds:
    """The filters' settings (``filters.*`` of ``rag-bench draft``)."""

    k: int = 5                      # round trip and unanswerable check: the top k chunks
    min_words: int = 4              # a question's length in words
    max_words: int = 60
    max_answer_words: int = 15
    language: str = "english"       # the corpus language: the question must read as it
    duplicate_cosine: float = 0.95  # a question this close to a kept one is a near-duplicate
    min_coverage: float = 0.8       # the claim judge's share of words (rag_bench.metrics.support)


@dataclass(frozen=True)
class FilterInput:
    """What the filters read: the index, the reader (a generator), the embedder, the settings and the
    question fields the dataset loader reads."""

    index: Index
    reader: Any
    embedder: Any
    thresholds: Thresholds
    loader_fields: frozenset[str]


class Filter(Protocol):
    """Judges drafts in a batch: a verdict per draft, None where the filter does not apply."""

    name: str

    def check(self, drafts: Sequence[Draft], ctx: FilterInput) -> list[Verdict | None]:
        """One verdict (or None) per draft, in order."""
        ...
