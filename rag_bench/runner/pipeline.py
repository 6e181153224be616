"""One cell, computed: its components (built once, :func:`~rag_bench.runner.config.build_cell`) run
the stages in order, then the cell is scored. No writing here.

Each stage (:mod:`rag_bench.runner.stages`) takes the results of the stages before it and returns
a frozen result; together they are the cell's :class:`~rag_bench.evaluation.run.SystemRun`, which
the cell's :class:`~rag_bench.evaluation.evaluation.Evaluation` scores into the cell's files. Work shared
between cells lives in the :class:`~rag_bench.memo.SharedWork` passed in; the keys below say what
determines each piece (see :mod:`rag_bench.memo`).
"""

from __future__ import annotations

from typing import Any

from omegaconf import DictConfig

from rag_bench import memo
from rag_bench.cells import CellResult
from rag_bench.embedding.base import EmbedStats
from rag_bench.evaluation.results import Answered, Generated, Judged
from rag_bench.evaluation.run import SystemRun
from rag_bench.memo import SharedWork
from rag_bench.records import Dataset
from rag_bench.reranking.base import check_depth
from rag_bench.runner import stages
from rag_bench.runner.config import CellParts, build_cell
from rag_bench.stages import capability, is_null


def _usage(embedder: Any) -> EmbedStats:
    stats: EmbedStats = capability(embedder, "embedder", "usage")()
    return stats


def run_pipeline(cfg: DictConfig, dataset: Dataset, cell_id: str, work: SharedWork) -> CellResult:
    """Run every stage of the cell ``cfg`` on ``dataset`` and score it."""
    return run_parts(build_cell(cfg, work), dataset, cell_id, work)


def run_parts(parts: CellParts, dataset: Dataset, cell_id: str, work: SharedWork) -> CellResult:
    """Run every stage of a cell, built (:func:`~rag_bench.runner.config.build_cell`), on ``dataset``
    and score it. Each piece of shared work is keyed by what determines it (see :mod:`rag_bench.memo`)."""
    s, embedder = parts.settings, parts.embedder
    before = _usage(embedder)
    questions = list(dataset.questions)
    ks, k = list(s.ks), s.k

    chunk_key = [dataset.fingerprint, *parts.identity("chunker")]
    chunked = stages.chunk(dataset=dataset, key=memo.key(*chunk_key), chunker=parts.chunker, work=work)
    indexed = stages.index(
        dataset=dataset, chunked=chunked, include_archived=s.include_archived, work=work, retriever=parts.retriever,
        key=memo.key(dataset.fingerprint, chunk_key, *parts.identity("retriever"), s.include_archived))

    reranker = parts.reranker
    depth = max(ks + [k] + ([] if is_null(reranker) else [check_depth(getattr(reranker, "depth", None))]))
    # The questions are the dataset's (its fingerprint, in the index key) at its split: a sweep
    # over dataset.split shares the index but never the rankings.
    questions_key = memo.key(dataset.fingerprint, s.split)
    # index.target_recall: tuned before anything is searched
    tuned = stages.tune(indexed=indexed, questions=questions, work=work, questions_key=questions_key)
    retrieved = stages.retrieve(indexed=indexed, questions=questions, depth=depth, work=work,
                                questions_key=questions_key)
    reranked = stages.rerank(reranker=reranker, key=memo.key(*parts.identity("reranker")), retrieved=retrieved,
                             indexed=indexed, questions=questions, work=work)

    answered: Answered | None = None
    if not is_null(parts.generator):
        answered = stages.answer(generator=parts.generator, questions=questions, reranked=reranked, indexed=indexed,
                                 parents=chunked.parents, k=k, expand_parents=s.expand_parents,
                                 token_budget=s.token_budget)
    ann = stages.ann(indexed=indexed, questions=questions, ks=ks, work=work, questions_key=questions_key,
                     tuned=tuned)

    timings = {"chunk_s": chunked.seconds, "index_s": indexed.seconds, "retrieve_s": sum(retrieved.latency_ms) / 1000}
    if reranked.prefetch_s is not None:
        timings.update(rerank_prefetch_s=reranked.prefetch_s, rerank_s=sum(reranked.latency_ms) / 1000)
    run = SystemRun(corpus=dataset, chunks=chunked.chunks, indexed=indexed, retrieved=retrieved, reranked=reranked,
                    answered=answered, ann=ann, timings=timings, index_name=s.index_name,
                    usage=lambda: _usage(embedder).since(before))
    def judging(generated: Generated) -> Judged | None:  # the judge we built, handed to the evaluation
        return stages.judge(judge=parts.judge, questions=questions, generated=generated)

    return parts.evaluation.evaluate(run, dataset, cell_id, judge=judging, work=work)
