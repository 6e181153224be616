"""One cell's pipeline, run: its components (built once, :func:`~rag_bench.runner.config.build_cell`)
run the stages in order and hand back the run the evaluation reads
(:class:`~rag_bench.evaluation.run.SystemRun`). No scoring and no writing here.

Each stage (:mod:`rag_bench.pipeline.stages`) takes the results of the stages before it and returns
a frozen result. Work shared between cells lives in the :class:`~rag_bench.memo.SharedWork` passed
in; the keys below say what determines each piece (see :mod:`rag_bench.memo`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from rag_bench import memo
from rag_bench.components import capability, is_null
from rag_bench.domain import Dataset, Ranking
from rag_bench.embedding.base import Embedder, EmbedStats
from rag_bench.evaluation.run import JudgeRun, QuestionRun, SystemRun
from rag_bench.memo import SharedWork
from rag_bench.pipeline import stages
from rag_bench.pipeline.parts import CellParts
from rag_bench.pipeline.results import Answered, Queried, Reranked, Retrieved


def _usage(embedder: Any) -> EmbedStats:
    stats: EmbedStats = capability(embedder, Embedder, "usage")()
    return stats


def run(parts: CellParts, dataset: Dataset, work: SharedWork, report_on: Dataset | None = None) -> SystemRun:
    """Run every stage of a cell, built, on ``dataset``; its run. Each piece of shared work is keyed
    by what determines it (see :mod:`rag_bench.memo`). ``report_on``: the questions the ANN report
    is computed on when not ``dataset``'s (a halving round merging its questions with the round
    before's: the report is the whole round's)."""
    s, embedder = parts.settings, parts.embedder
    before = _usage(embedder)
    questions = list(dataset.questions)
    ks = list(s.ks)

    chunk_key = [dataset.corpus_key, *parts.identity["chunker"]]
    chunked = stages.chunk(dataset=dataset, key=memo.key(*chunk_key), chunker=parts.chunker, work=work)
    indexed = stages.index(
        dataset=dataset, chunked=chunked, include_archived=s.include_archived, work=work, retriever=parts.retriever,
        key=memo.key(dataset.corpus_key, chunk_key, *parts.identity["retriever"], s.include_archived))

    reranker, depth = parts.reranker, s.depth
    # The questions are the dataset's (its fingerprint, in the index key) at its split: a sweep
    # over dataset.split shares the index but never the rankings.
    questions_key = memo.key(dataset.fingerprint, s.split)
    # index.target_recall: tuned before anything is searched
    tuned = stages.tune(indexed=indexed, questions=questions, work=work, questions_key=questions_key)
    # What the retriever searches for: the rankings' key holds the transform's identity (none
    # keeps the key it had), so cells with one transform share rankings and never with another.
    transform = parts.query
    searched_key = questions_key if transform is None or is_null(transform) else \
        memo.key(questions_key, *parts.identity["query"])
    queried = stages.query(transform=transform, questions=questions, key=searched_key, work=work) \
        if transform is not None else None
    retrieved = stages.retrieve(indexed=indexed, questions=questions, depth=depth, work=work,
                                questions_key=searched_key, queried=queried)
    baselines = untransformed(indexed, questions, depth, work, questions_key) \
        if queried is not None and queried.plans is not None else None
    reranked = stages.rerank(reranker=reranker, key=memo.key(*parts.identity["reranker"]), retrieved=retrieved,
                             indexed=indexed, questions=questions, work=work)

    answered: Answered | None = None
    judged = None
    if not is_null(parts.generator):
        answered = stages.answer(generator=parts.generator, questions=questions, rankings=reranked.rankings,
                                 passages=indexed.searchable, context=stages.context_rule(s, chunked.parents))
        judged = stages.judge(judge=parts.judge, questions=questions, answered=answered, history=s.history)
    reported = dataset if report_on is None else report_on
    ann = stages.ann(indexed=indexed, questions=list(reported.questions), ks=ks, work=work,
                     questions_key=memo.key(reported.fingerprint, s.split), tuned=tuned)

    timings = {"chunk_s": chunked.seconds, "index_s": indexed.seconds, "retrieve_s": sum(retrieved.latency_ms) / 1000}
    if queried is not None and queried.plans is not None:
        timings["query_s"] = queried.seconds
    if reranked.prefetch_s is not None:
        timings.update(rerank_prefetch_s=reranked.prefetch_s, rerank_s=sum(reranked.latency_ms) / 1000)
    return SystemRun(
        dataset=dataset, passages=indexed.searchable,
        questions=question_runs(questions, retrieved, reranked, answered, judged, queried, baselines),
        chunks=sum(not c.is_parent for c in chunked.chunks), depth=retrieved.depth, ann=ann, index_name=s.index_name,
        timings=timings, embedding=_usage(embedder).since(before),
        generate_s=answered.wall_s if answered is not None else None,
        generator=parts.traits if answered is not None else None,
        judge=JudgeRun(s.judge_name, tuple(parts.judge.metrics)) if judged is not None else None,
        ranking_key=reranked.key)


def untransformed(indexed: Any, questions: list[Any], depth: int, work: SharedWork, questions_key: str) \
        -> tuple[list[Ranking], list[Ranking | None]]:
    """The first-stage rankings of each question as it is (shared with the cells of ``query=none``)
    and of its people-written standalone form where it has one: what the transform is measured
    against (``query/lift@k``, the ``query`` failure label)."""
    plain = stages.retrieve(indexed=indexed, questions=questions, depth=depth, work=work,
                            questions_key=questions_key).rankings
    gold = [n for n, q in enumerate(questions) if q.standalone and q.standalone.strip()]
    standalone: list[Ranking | None] = [None] * len(questions)
    if gold:
        asked = [dataclasses.replace(questions[n], question=questions[n].standalone) for n in gold]
        got = stages.retrieve(indexed=indexed, questions=asked, depth=depth, work=work,
                              questions_key=memo.key(questions_key, "standalone")).rankings
        for n, r in zip(gold, got):
            standalone[n] = r
    return plain, standalone


def question_runs(questions: list[Any], retrieved: Retrieved, reranked: Reranked, answered: Answered | None,
                  judged: list[Any] | None, queried: Queried | None = None,
                  baselines: tuple[list[Ranking], list[Ranking | None]] | None = None) -> tuple[QuestionRun, ...]:
    """The stages' results question by question: what each stage did for each question."""
    plans = queried.plans if queried is not None else None
    out = []
    for n, q in enumerate(questions):
        out.append(QuestionRun(
            q, retrieved.rankings[n], reranked.rankings[n], retrieve_ms=retrieved.latency_ms[n],
            rerank_ms=reranked.latency_ms[n] if reranked.latency_ms else None,
            dropped_by_retriever=retrieved.unauthorized[n] if retrieved.unauthorized else 0,
            dropped_by_reranker=reranked.unauthorized[n] if reranked.unauthorized else 0,
            context=answered.items[n].passages if answered is not None else None,
            generation=answered.generations[n] if answered is not None else None,
            answer=answered.answers[n] if answered is not None else None,
            judge=judged[n] if judged is not None else None,
            query=plans[n] if plans is not None else None,
            untransformed=baselines[0][n] if baselines is not None else None,
            query_rankings=retrieved.per_text[n] if plans is not None and retrieved.per_text else (),
            standalone_ranking=baselines[1][n] if baselines is not None else None))
    return tuple(out)
