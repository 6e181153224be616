"""One cell, computed: build the components, run the stages in order, summarise. No writing here.

Each stage (:mod:`rag_bench.runner.stages`) takes the results of the stages before it and returns
a frozen result; together they are the cell's :class:`~rag_bench.evaluation.run.SystemRun`, which
the cell's :class:`~rag_bench.evaluation.evaluation.Evaluation` scores into the cell's files. Work shared
between cells lives in the :class:`~rag_bench.memo.SharedWork` passed in; the keys below say what
determines each piece (see :mod:`rag_bench.memo`).
"""

from __future__ import annotations

from typing import Any

from omegaconf import DictConfig, OmegaConf

from rag_bench import memo
from rag_bench.cells import CellResult
from rag_bench.embedding.base import EmbedStats
from rag_bench.evaluation.evaluation import Evaluation
from rag_bench.evaluation.results import Answered, Generated, Judged
from rag_bench.evaluation.run import SystemRun
from rag_bench.memo import SharedWork
from rag_bench.records import Dataset
from rag_bench.reranking.base import check_depth
from rag_bench.runner import contracts, stages
from rag_bench.runner.config import build, component_provenance, wants
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
    stages.tune(indexed=indexed, questions=questions)  # index.target_recall: before anything is searched
    retrieved = stages.retrieve(indexed=indexed, questions=questions, depth=depth, work=work,
                                questions_key=questions_key)
    reranker_key = _key(what("reranker"), *([what("embedder")] if wants(cfg.reranker, "reranker", "embedder") else []))
    reranked = stages.rerank(reranker=reranker, key=reranker_key, retrieved=retrieved, indexed=indexed,
                             questions=questions, work=work)

    evaluation = Evaluation.from_config(cfg)
    generator = build(cfg.generator, "generator")
    answered: Answered | None = None
    judge: Any = None  # built only when there are answers to judge
    if not is_null(generator):
        answered = stages.answer(generator=generator, questions=questions, reranked=reranked, indexed=indexed,
                                 parents=chunked.parents, k=k, expand_parents=bool(cfg.pipeline.expand_parents),
                                 token_budget=int(cfg.pipeline.token_budget))
        judge = build(cfg.judge, "judge", embedder=embedder)
    ann = stages.ann(indexed=indexed, questions=questions, ks=ks, work=work, questions_key=questions_key)

    timings = {"chunk_s": chunked.seconds, "index_s": indexed.seconds, "retrieve_s": sum(retrieved.latency_ms) / 1000}
    if reranked.prefetch_s is not None:
        timings.update(rerank_prefetch_s=reranked.prefetch_s, rerank_s=sum(reranked.latency_ms) / 1000)
    run = SystemRun(corpus=dataset, chunks=chunked.chunks, indexed=indexed, retrieved=retrieved, reranked=reranked,
                    answered=answered, ann=ann, timings=timings, index_name=str(cfg.index.name),
                    usage=lambda: _usage(embedder).since(before))
    def judging(generated: Generated) -> Judged | None:  # the judge we built, handed to the evaluation
        return stages.judge(judge=judge, questions=questions, generated=generated)

    return evaluation.evaluate(run, dataset, cell_id, judge=judging, work=work)
