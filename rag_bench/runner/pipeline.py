"""One cell, computed: build the components, run the stages in order, summarise. No writing here.

Each stage (:mod:`rag_bench.runner.stages`) takes the results of the stages before it and returns
a frozen result; :mod:`rag_bench.runner.summary` turns them into the cell's files. Work shared
between cells lives in the :class:`~rag_bench.memo.SharedWork` passed in; the keys below say what
determines each piece (see :mod:`rag_bench.memo`).
"""

from __future__ import annotations

import time
from typing import Any

from omegaconf import DictConfig, OmegaConf

from rag_bench import memo
from rag_bench.cells import CellResult
from rag_bench.embedding.base import EmbedStats
from rag_bench.memo import SharedWork
from rag_bench.records import Dataset
from rag_bench.reranking.base import check_depth
from rag_bench.runner import contracts, stages, summary
from rag_bench.runner.config import UNITS, build, component_provenance, wants
from rag_bench.stages import capability, is_null


def _key(*nodes: Any) -> str:
    return memo.key(*(OmegaConf.to_container(n, resolve=True) if isinstance(n, DictConfig) else n for n in nodes))


def _usage(embedder: Any) -> EmbedStats:
    stats: EmbedStats = capability(embedder, "embedder", "usage")()
    return stats


def run_pipeline(cfg: DictConfig, dataset: Dataset, cell_id: str, work: SharedWork) -> CellResult:
    """Run every stage of the cell ``cfg`` on ``dataset`` and score it."""
    seen: dict[str, Any] = {}

    def what(group: str) -> Any:
        """A component's config in a shared-work key, with what it really is when that is more
        than its config (a plugin's source digest, a local model's files): a model folder or a
        plugin edited during a process never shares the work done with the old one."""
        if group not in seen:
            node = OmegaConf.to_container(cfg[group], resolve=True)
            extra = component_provenance({group: node}).get(group)
            seen[group] = [node, extra] if extra else node
        return seen[group]

    # One embedder object per config and process: its model stays loaded across cells.
    # Its outputs are checked at the boundary (finite, one row per text, one width).
    embedder = work.get_or("embedders", _key(what("embedder")),
                           lambda: contracts.CheckedEmbedder(build(cfg.embedder, "embedder")))
    before = _usage(embedder)
    questions = list(dataset.questions)
    ks, k = sorted(set(cfg.eval.ks)), int(cfg.pipeline.k)

    chunk_key = [dataset.fingerprint, what("chunker")] + ([what("embedder")] if wants(cfg.chunker, "chunker",
                                                                                            "embedder") else [])
    chunked = stages.chunk(dataset=dataset, key=_key(*chunk_key), work=work,
                           make=lambda: build(cfg.chunker, "chunker", embedder=embedder))

    include_archived = bool(cfg.pipeline.include_archived)
    uses = [what(g) for g in ("embedder", "index") if wants(cfg.retriever, "retriever", g)]
    indexed = stages.index(
        dataset=dataset, chunked=chunked, include_archived=include_archived, work=work,
        key=_key(dataset.fingerprint, chunk_key, what("retriever"), *uses, include_archived),
        make=lambda: build(cfg.retriever, "retriever", embedder=embedder, index=build(cfg.index, "index"),
                           shared=work))

    reranker = build(cfg.reranker, "reranker", embedder=embedder)
    depth = max(ks + [k] + ([] if is_null(reranker) else [check_depth(getattr(reranker, "depth", None))]))
    # The questions are the dataset's (its fingerprint, in the index key) at its split: a sweep
    # over dataset.split shares the index but never the rankings.
    questions_key = memo.key(dataset.fingerprint, str(cfg.dataset.split))
    retrieved = stages.retrieve(indexed=indexed, questions=questions, depth=depth, work=work,
                                questions_key=questions_key)
    reranker_key = _key(what("reranker"), *([what("embedder")] if wants(cfg.reranker, "reranker", "embedder") else []))
    reranked = stages.rerank(reranker=reranker, key=reranker_key, retrieved=retrieved, indexed=indexed,
                             questions=questions, work=work)

    t0 = time.perf_counter()
    scored = stages.score(questions=questions, dataset=dataset, indexed=indexed, retrieved=retrieved,
                          reranked=reranked, ks=ks, k=k, min_coverage=float(cfg.eval.min_coverage),
                          relevance=str(cfg.eval.relevance), gain=str(cfg.eval.gain),
                          relevance_level=int(cfg.eval.relevance_level), units=UNITS[str(cfg.eval.unit)],
                          work=work)
    score_s = time.perf_counter() - t0
    generator = build(cfg.generator, "generator")
    generated = judged = None
    if not is_null(generator):
        generated = stages.generate(
            generator=generator, questions=questions, reranked=reranked, indexed=indexed, parents=chunked.parents,
            retrieval_labels=list(scored.frame["failure"]), k=k, expand_parents=bool(cfg.pipeline.expand_parents),
            token_budget=int(cfg.pipeline.token_budget), min_coverage=float(cfg.eval.min_coverage),
            answer_match=str(cfg.eval.answer_match), f1_threshold=float(cfg.eval.f1_threshold))
        judged = stages.judge(judge=build(cfg.judge, "judge", embedder=embedder), questions=questions,
                              generated=generated)
    ann = stages.ann(indexed=indexed, questions=questions, ks=ks, work=work, questions_key=questions_key)

    timings = {"chunk_s": chunked.seconds, "index_s": indexed.seconds, "retrieve_s": sum(retrieved.latency_ms) / 1000,
               "score_s": score_s}
    if reranked.prefetch_s is not None:
        timings.update(rerank_prefetch_s=reranked.prefetch_s, rerank_s=sum(reranked.latency_ms) / 1000)
    frame = summary.records(scored=scored, retrieved=retrieved, reranked=reranked, generated=generated, judged=judged)
    metrics = summary.summarize(
        frame=frame, dataset=dataset, chunked=chunked, indexed=indexed, retrieved=retrieved, reranked=reranked,
        scored=scored, generated=generated, judged=judged, ann=ann, embedding=_usage(embedder).since(before), timings=timings,
        ks=ks, k=k, index_name=str(cfg.index.name), judge_name=str(cfg.judge.name),
        n_resamples=int(cfg.eval.bootstrap_resamples), seed=int(cfg.eval.seed))
    extra = summary.document_trec(frame, questions, scored.qrels, cell_id) if "document" in scored.units else {}
    lines = work.get_or("run_lines", memo.key(reranked.key), lambda: summary.run_lines(frame)) \
        if reranked.key is not None else None
    return CellResult(frame, metrics, summary.run_trec(frame, cell_id, lines),
                      summary.qrels_trec(questions, indexed.searchable, scored.qrels), extra)
