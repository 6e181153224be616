"""A run of a system: what any system produced for each question of a dataset.

Our pipeline (:mod:`rag_bench.runner.pipeline`) returns one; ``rag-bench evaluate``
(:mod:`rag_bench.runner.external`) parses an application's outputs into one. The evaluation
(:mod:`rag_bench.evaluation.evaluation`) scores a run and never asks which it was.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from rag_bench.embedding.base import EmbedStats
from rag_bench.evaluation.results import Answered, Indexed, Reranked, Retrieved
from rag_bench.records import Chunk, Dataset

Latency = Literal["pipeline", "system", "none"]


@dataclass(frozen=True)
class QuestionRun:
    """One question's part of a run: the ranked passages of each retrieval stage as spans
    ``(doc_id, start, end)``, the context handed to the generator, the answer, its citations
    (context passage numbers), whether it refused, and what it cost."""

    qid: str
    retrieved: tuple[tuple[str, int, int], ...]
    ranked: tuple[tuple[str, int, int], ...]
    context: tuple[str, ...]
    answer: str | None
    citations: tuple[int, ...]
    refused: bool
    seconds: float | None
    tokens_in: int | None
    tokens_out: int | None


@dataclass(frozen=True)
class SystemRun:
    """Everything a system produced on a dataset, stage by stage.

    ``corpus`` is the dataset whose documents the passages are spans of (for an external system,
    the dataset plus a placeholder document for passages no document holds); ``indexed.searchable``
    are the passages a ranking's indices point into; ``retrieved`` and ``reranked`` the rankings of
    the retrieval stages (``reranked`` the final one); ``answered`` the contexts, generations and
    parsed answers (None: the system only retrieves). ``attribute_chunking`` is False when the
    passages are not a chunking of the whole corpus (an external system's): ``chunking`` cannot be
    told from ``retrieval_miss``; ``min_relevant`` then makes a missed question score 0.
    ``counts`` are the system's own figures for metrics.json ``counts``; ``latency`` says whose
    latencies ``retrieved`` holds (``pipeline``: our retriever's; ``system``: the application's
    end-to-end; ``none``: not given). ``usage`` reads the embedder's usage after the evaluation
    (a judge may embed too)."""

    corpus: Dataset
    chunks: list[Chunk]
    indexed: Indexed
    retrieved: Retrieved
    reranked: Reranked
    answered: Answered | None = None
    ann: dict[str, Any] | None = None
    timings: dict[str, float] = field(default_factory=dict)
    index_name: str = "external"
    attribute_chunking: bool = True
    min_relevant: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    latency: Latency = "pipeline"
    usage: Callable[[], EmbedStats] = EmbedStats

    def questions(self) -> list[QuestionRun]:
        """The run question by question, as spans (what any system can be compared on)."""
        out = []
        searchable = self.indexed.searchable

        def spans(indices: tuple[int, ...]) -> tuple[tuple[str, int, int], ...]:
            return tuple((searchable[i].doc_id, searchable[i].start, searchable[i].end) for i in indices)

        for n, (q, got, final) in enumerate(zip(self.corpus.questions, self.retrieved.rankings,
                                                self.reranked.rankings)):
            a = g = None
            if self.answered is not None:
                a, g = self.answered.answers[n], self.answered.generations[n]
            out.append(QuestionRun(
                q.qid, spans(got.indices), spans(final.indices),
                tuple(p.text for p in self.answered.items[n].passages) if self.answered is not None else (),
                a.text if a is not None else None, tuple(a.citations) if a is not None else (),
                bool(a.refused) if a is not None else False, g.seconds if g is not None else None,
                g.tokens_in if g is not None else None, g.tokens_out if g is not None else None))
        return out
