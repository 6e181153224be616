"""A run of a system: what any system produced for each question of a dataset -- the only thing
the evaluation reads.

Our pipeline (:mod:`rag_bench.pipeline`) produces one; ``rag-bench evaluate``'s adapters
(:mod:`rag_bench.adapters`: an application's outputs, a TREC run, a ragas set) parse one from a
file. The evaluation (:mod:`rag_bench.evaluation.evaluation`) scores a run and never asks which it
was: every scorer reads :class:`QuestionRun` objects (one per question, holding its question) and
the run-level figures of :class:`SystemRun`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal

from rag_bench.domain import Answer, Chunk, Dataset, Document, Passage, Question, Ranking
from rag_bench.embedding.base import EmbedStats
from rag_bench.generation.base import Generation, Traits
from rag_bench.indexing.ann_report import AnnReport
from rag_bench.judging.base import JudgeResult
from rag_bench.query.base import Transformed

Latency = Literal["pipeline", "system", "none"]


@dataclass(frozen=True)
class QuestionRun:
    """One question's part of a run.

    ``retrieved`` is the first stage's ranking (depth D), ``ranked`` the final one (after
    reranking; the same object without a reranker), both as indices into
    :attr:`SystemRun.passages` with scores; ``retrieve_ms``/``rerank_ms`` their latencies (None:
    not measured); ``dropped_by_retriever``/``dropped_by_reranker`` the passages each stage
    returned that the asker may not read (dropped before anything downstream saw them).
    ``context`` is what the generator was handed (None: the system only retrieves), ``generation``
    the raw call (output, seconds, tokens, cached), ``answer`` the parsed answer (text, citations,
    refusal), ``judge`` the LLM judge's scores of it (None: not judged).

    ``query``: what the query transform made of the question (the texts searched, what it wrote,
    its fallback; None: searched as it is, ``query=none``), ``query_rankings`` what each of its texts
    retrieved on its own (before the fusion); ``untransformed`` the first stage's
    ranking of the question as it is and ``standalone_ranking`` that of its people-written
    standalone form (:attr:`Question.standalone`), both only in a cell with a transform: what
    ``query/lift@k`` and the ``query`` failure label compare with."""

    question: Question
    retrieved: Ranking
    ranked: Ranking
    retrieve_ms: float | None = None
    rerank_ms: float | None = None
    dropped_by_retriever: int = 0
    dropped_by_reranker: int = 0
    context: tuple[Passage, ...] | None = None
    generation: Generation | None = None
    answer: Answer | None = None
    judge: JudgeResult | None = None
    query: Transformed | None = None
    query_rankings: tuple[Ranking, ...] = ()
    untransformed: Ranking | None = None
    standalone_ranking: Ranking | None = None

    @property
    def qid(self) -> str:
        """The question's id."""
        return self.question.qid

    @property
    def answered(self) -> bool:
        """Whether the system produced an answer for it (a call that failed counts)."""
        return self.answer is not None


@dataclass(frozen=True)
class JudgeRun:
    """Which LLM judge scored the answers and which metrics it gives (``judge/judge_<metric>``)."""

    name: str
    metrics: tuple[str, ...]


@dataclass(frozen=True)
class SystemRun:
    """Everything a system produced on a dataset.

    ``dataset`` is the golden set (its questions, documents and fingerprint); ``passages`` what the
    rankings index: the chunks a pipeline searched, or the spans an external system's passages were
    located at; ``documents`` the corpus those passages are spans of, when it holds more than the
    dataset's (a placeholder document for an external system's passages no document holds).
    ``questions`` one :class:`QuestionRun` per question of the dataset, in its order.

    Run-level figures: ``chunks`` made (parents excluded), the retrieval ``depth``, the ANN index's
    report (``ann``, measured where the index is), ``index_name``, stage ``timings``, the system's
    own ``counts``, whose latencies the questions hold (``latency``: ``pipeline``, our stages';
    ``system``, the application's end to end; ``none``), the embedder's usage during the run, the
    generation stage's wall time, what the generator declared of itself (``generator``: a stand-in
    for a model, its refusal setting; None when nothing generated or the system did not say) and
    the judge. ``attribute_chunking`` is False when the passages
    are not a chunking of the whole corpus (an external system's): ``chunking`` cannot be told
    from ``retrieval_miss``; ``min_relevant`` then makes a missed question score 0.
    ``ranking_key`` identifies the final rankings in the shared work (None: not shared)."""

    dataset: Dataset
    passages: list[Chunk]
    questions: tuple[QuestionRun, ...]
    documents: Mapping[str, Document] | None = None
    chunks: int | None = None
    depth: int = 0
    ann: AnnReport | None = None
    index_name: str = "external"
    timings: Mapping[str, float] = field(default_factory=dict)
    counts: Mapping[str, int] = field(default_factory=dict)
    latency: Latency = "pipeline"
    embedding: EmbedStats = field(default_factory=EmbedStats)
    generate_s: float | None = None
    generator: Traits | None = None
    judge: JudgeRun | None = None
    attribute_chunking: bool = True
    min_relevant: int = 0
    ranking_key: str | None = None

    @cached_property
    def corpus(self) -> Mapping[str, Document]:
        """The documents the passages are spans of."""
        return self.documents if self.documents is not None else self.dataset.documents

    @cached_property
    def answered(self) -> bool:
        """Whether the system answered (a generation stage ran, or an application gave answers)."""
        return any(q.answered for q in self.questions)

    def spans(self, ranking: Ranking) -> tuple[tuple[str, int, int], ...]:
        """A ranking's passages as spans ``(doc_id, start, end)`` (what any system can be compared on)."""
        return tuple((self.passages[i].doc_id, self.passages[i].start, self.passages[i].end) for i in ranking.indices)
