"""What each stage of a cell returns: frozen results, never mutated by a later stage.

The per-question columns a stage adds are its own DataFrame (one row per question, the
questions' order); :func:`rag_bench.evaluation.summary.records` joins them into records.parquet.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import pandas as pd

from rag_bench.generation.base import Generation, GenerationInput
from rag_bench.metrics.measures import Measure
from rag_bench.records import Answer, Chunk, Question, Ranking
from rag_bench.retrieval.base import AccessFilter, Retriever


@dataclass(frozen=True)
class Qrels:
    """Derived judgments of one cell: per question index, graded relevant chunks (chunk index →
    grade) and graded relevant documents (doc id → grade)."""

    chunks: dict[int, dict[int, int]]
    documents: dict[int, dict[str, int]]


@dataclass(frozen=True)
class Judgment:
    """One question's relevance in one ranking unit: the grade of each ranked item (in rank
    order), how many items are relevant at the relevance level, every positive grade (the ideal
    ranking), the unit's own per-question columns and its judgments (item -> grade)."""

    levels: Sequence[float] | np.ndarray
    n_relevant: float
    grades: list[int]
    columns: dict[str, Any]
    qrels: dict[Any, int]


class RankingUnit(Protocol):
    """What a ranking is scored over (chunks, documents): a ranking scorer of
    :mod:`rag_bench.evaluation.scorers` owns one. Its measures are ``families`` in metrics.json
    section ``section``, their records.parquet columns prefixed ``prefix``; its judgments go to
    the field ``qrels_field`` of :class:`Qrels`."""

    @property
    def name(self) -> str: ...
    @property
    def section(self) -> str: ...
    @property
    def prefix(self) -> str: ...
    @property
    def families(self) -> tuple[Measure, ...]: ...
    @property
    def qrels_field(self) -> str: ...

    def judge(self, q: Question, top: Sequence[Chunk], scores: Sequence[float], chunk: Judgment,
              relevance_level: int) -> Judgment:
        """The question's judgment in this unit, from its ranked chunks and their chunk judgment."""
        ...

    def counts(self, frame: pd.DataFrame, answerable: np.ndarray, ks: Sequence[int]) -> dict[str, int]:
        """The unit's figures of metrics.json ``counts`` (its measures' denominator)."""
        ...

    def trec_files(self, frame: pd.DataFrame, questions: Sequence[Question], qrels: Qrels, tag: str) -> dict[str, str]:
        """Extra TREC files of the cell (name -> text) beside run.trec and qrels.trec."""
        ...


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
class Retrieved:
    """One ranking per question at depth D, with per-question latencies (ms)."""

    rankings: list[Ranking]
    latency_ms: list[float]
    depth: int
    key: str
    # Per question: chunks the retriever returned that the asker may not read (dropped from
    # ``rankings``; empty = none counted, as for an external system's passages).
    unauthorized: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class Reranked:
    """Final rankings after the reranker (the retrieved ones when there is none)."""

    rankings: list[Ranking]
    latency_ms: list[float] = field(default_factory=list)  # empty: no reranker
    prefetch_s: float | None = None
    key: str | None = None  # shared-work key of the final rankings (None: not shared)
    unauthorized: list[int] = field(default_factory=list)  # per question, dropped after reranking


@dataclass(frozen=True)
class Scored:
    """Per-question retrieval columns (ids, graded relevance, ranking and evidence measures,
    retrieval label in ``failure``), the derived graded qrels and the ranking units the cell
    reports (eval.unit)."""

    frame: pd.DataFrame
    qrels: Qrels
    units: tuple[RankingUnit, ...] = ()


@dataclass(frozen=True)
class GenerationCounts:
    """What the generation stage did."""

    endpoint_calls: int
    endpoint_failures: int
    generations_cached: int
    unparseable: int
    retries: int
    wall_s: float
    questions: int
    tokens_per_question: float | None = None  # prompt + completion, mean; None when no question reported any

    @property
    def seconds_per_question(self) -> float:
        """Wall time over questions (not per generated prompt: cached ones count too)."""
        return self.wall_s / max(1, self.questions)


@dataclass(frozen=True)
class Answered:
    """What the generation stage produced, per question in order: the context passages and prompt
    handed to the generator, the generation (raw output, seconds, tokens, cached) and the parsed
    answer (text, citations, refusal); and the stage's wall time."""

    items: list[GenerationInput]
    generations: list[Generation]
    answers: list[Answer]
    wall_s: float


@dataclass(frozen=True)
class Generated:
    """Per-question answer columns (``failure`` holds the final label) and counts."""

    frame: pd.DataFrame
    counts: GenerationCounts


@dataclass(frozen=True)
class Judged:
    """Per-question ``judge_<metric>`` (mean of its samples), ``judge_<metric>_samples``,
    ``judge_<metric>_sd`` and ``judge_failures`` columns (:mod:`rag_bench.judging.samples`), and
    counts: judgements attempted and failed (items x metrics x samples), calls, tokens, seconds."""

    frame: pd.DataFrame
    metrics: tuple[str, ...]
    attempted: int
    failures: int
    calls: int
    tokens_in: int = 0
    tokens_out: int = 0
    seconds: float = 0.0
