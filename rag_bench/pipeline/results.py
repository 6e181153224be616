"""What each stage of our pipeline returns: frozen results, never mutated by a later stage. They
stay inside the pipeline; what leaves it is the run (:class:`~rag_bench.evaluation.run.SystemRun`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from rag_bench.domain import Answer, Chunk, Ranking
from rag_bench.generation.base import Generation, GenerationInput
from rag_bench.query.base import Transformed
from rag_bench.retrieval.base import AccessFilter, Retriever


@dataclass(frozen=True)
class Chunked:
    """Every chunk of the corpus (parents included) and the time it took (0 when shared)."""

    chunks: list[Chunk]
    seconds: float

    @property
    def parents(self) -> dict[str, Chunk]:
        """Parent chunks by id (parent-child chunking), for context expansion."""
        return {c.chunk_id: c for c in self.chunks if c.is_parent}


@dataclass(frozen=True)
class Indexed:
    """A fitted retriever over the searchable chunks, and the asker filter over them."""

    retriever: Retriever
    searchable: list[Chunk]
    access: AccessFilter
    key: str  # identity of the index: the shared-work key of everything computed from it
    seconds: float


@dataclass(frozen=True)
class Queried:
    """What each question is searched with (None: the question as is, ``query=none``), the key of
    the question set and transform, and the time the transform took when it was computed."""

    plans: list[Transformed] | None
    key: str
    seconds: float = 0.0


@dataclass(frozen=True)
class Retrieved:
    """One ranking per question at depth D, with per-question latencies (ms)."""

    rankings: list[Ranking]
    latency_ms: list[float]
    depth: int
    key: str
    # Per question: chunks the retriever returned that the asker may not read (dropped from ``rankings``).
    unauthorized: list[int] = field(default_factory=list)
    # Per question, with a query transform: each text's own ranking (fused into ``rankings``).
    per_text: list[tuple[Ranking, ...]] = field(default_factory=list)


@dataclass(frozen=True)
class Reranked:
    """Final rankings after the reranker (the retrieved ones when there is none)."""

    rankings: list[Ranking]
    latency_ms: list[float] = field(default_factory=list)  # empty: no reranker
    prefetch_s: float | None = None
    key: str | None = None  # shared-work key of the final rankings (None: not shared)
    unauthorized: list[int] = field(default_factory=list)  # per question, dropped after reranking


@dataclass(frozen=True)
class Answered:
    """What the generation stage produced, per question in order: the context passages and prompt
    handed to the generator, the generation (raw output, seconds, tokens, cached) and the parsed
    answer (text, citations, refusal); and the stage's wall time."""

    items: list[GenerationInput]
    generations: list[Generation]
    answers: list[Answer]
    wall_s: float
