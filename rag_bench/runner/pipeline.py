"""Compute one cell: chunk, index, retrieve, score. Pure computation; writing is elsewhere.

Work shared between cells of a sweep is cached in-process, keyed by the config that determines
it: chunks per (dataset, chunker), an index per (chunks, retriever, embedder, index params),
rankings per (index, depth D), reranked rankings per (rankings, reranker), the ANN report per
index. A sweep over ``k`` or ``eval.*`` re-chunks, re-indexes, re-retrieves and re-ranks nothing.
Each cache is a small LRU, so memory stays bounded; the sweeper
(:mod:`rag_bench.runner.sweeper`) orders cells so that those sharing work run back to back.
Across processes the persistent caches (embeddings, generations, judge verdicts) share the
expensive work.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from omegaconf import DictConfig, OmegaConf
from tqdm import tqdm

from rag_bench import memo
from rag_bench.errors import EndpointError
from rag_bench.generation.none import NoGenerator
from rag_bench.judging.none import NoJudge
from rag_bench.memo import Lru
from rag_bench.records import Chunk, Dataset, Ranking
from rag_bench.reranking.base import apply_rerank
from rag_bench.retrieval.base import AccessFilter
from rag_bench.runner.config import build, wants
from rag_bench.runner.generation_stage import (
    ANSWERABLE_LABELS,
    GENERATION_COLUMNS,
    UNANSWERABLE_LABELS,
    conditional_table,
    run_generation,
    run_judge,
    threshold_analysis,
)
from rag_bench.runner.scoring import RETRIEVAL_LABELS, TAG_METRICS, aggregate, by_tag, score_retrieval

log = logging.getLogger(__name__)


_CHUNKS = Lru(4)
_INDEXES = Lru(2)
_EMBEDDERS = Lru(2)
# Per (index, depth): rankings and their measured latencies; per (rankings, reranker): reranked.
_RANKINGS = Lru(8)
_RERANKED = Lru(8)
_ANN = Lru(8)


def _key(*nodes: Any) -> str:
    return memo.key(*(OmegaConf.to_container(n, resolve=True) if isinstance(n, DictConfig) else n for n in nodes))


@dataclass(frozen=True)
class CellResult:
    """Everything a cell folder holds, computed."""

    records: pd.DataFrame
    metrics: dict[str, Any]
    run_trec: str
    qrels_trec: str


def _embedder(cfg: DictConfig) -> Any:
    # One embedder object per config and process: its model stays loaded across cells.
    return _EMBEDDERS.get_or(_key(cfg.embedder), lambda: build(cfg.embedder, "embedder"))


def run_pipeline(cfg: DictConfig, dataset: Dataset, cell_id: str) -> CellResult:
    """Run the retrieval pipeline of one cell on ``dataset`` and score it."""
    timings: dict[str, float] = {}
    docs = list(dataset.documents.values())
    embedder = _embedder(cfg)
    before = dataclasses.replace(embedder.stats)

    t0 = time.perf_counter()
    chunk_key = [dataset.fingerprint, cfg.chunker] + ([cfg.embedder] if wants(cfg.chunker, "chunker", "embedder")
                                                      else [])
    chunks: list[Chunk] = _CHUNKS.get_or(_key(*chunk_key),
                                         lambda: build(cfg.chunker, "chunker", embedder=embedder).chunk(docs))
    timings["chunk_s"] = time.perf_counter() - t0

    include_archived = bool(cfg.pipeline.include_archived)
    t0 = time.perf_counter()

    def make_index() -> tuple[Any, list[Chunk], AccessFilter]:
        searchable = [c for c in chunks if not c.is_parent
                      and (include_archived or not dataset.documents[c.doc_id].archived)]
        retriever = build(cfg.retriever, "retriever", embedder=embedder, index=build(cfg.index, "index"))
        retriever.fit(searchable)
        return retriever, searchable, AccessFilter(searchable, dataset.documents)

    uses = [cfg[g] for g in ("embedder", "index") if wants(cfg.retriever, "retriever", g)]
    index_key = _key(dataset.fingerprint, chunk_key, cfg.retriever, *uses, include_archived)
    retriever, searchable, access = _INDEXES.get_or(index_key, make_index)
    timings["index_s"] = time.perf_counter() - t0

    reranker = build(cfg.reranker, "reranker", embedder=embedder)
    reranker = reranker if reranker.depth > 0 else None
    ks = sorted(set(cfg.eval.ks))
    depth = max(ks + [int(cfg.pipeline.k)] + ([reranker.depth] if reranker else []))
    questions = list(dataset.questions)

    def retrieve() -> tuple[list[Ranking], list[float]]:
        per_q: list[float] = []
        out: list[Ranking] = []
        for q in tqdm(questions, desc="retrieve", unit="q", disable=None, leave=False):
            t = time.perf_counter()
            out.extend(retriever.search([q], depth, access))
            per_q.append((time.perf_counter() - t) * 1000)
        return out, per_q

    # Cells that differ only in k (or in eval/generation settings) share one retrieval at depth D,
    # and one rerank of it; latencies are those measured when the work was done.
    ranking_key = _key(index_key, depth)
    rankings, per_q_ms = _RANKINGS.get_or(ranking_key, retrieve)
    timings["retrieve_s"] = sum(per_q_ms) / 1000
    retrieved = [list(r.indices) for r in rankings]

    rerank_ms: list[float] = []
    if reranker is not None:
        def rerank() -> tuple[list[Ranking], list[float], float]:
            reranked, ms = [], []
            t = time.perf_counter()
            if hasattr(reranker, "prefetch"):  # bi-encoders: embed all shortlists in one batched pass
                reranker.prefetch(questions, [[searchable[i] for i in r.indices[: reranker.depth]] for r in rankings])
            prefetch_s = time.perf_counter() - t
            for q, r in zip(questions, rankings):
                t = time.perf_counter()
                shortlist = [searchable[i] for i in r.indices[: reranker.depth]]
                (scores,) = reranker.scores([q], [shortlist])
                reranked.append(apply_rerank(r, scores))
                ms.append((time.perf_counter() - t) * 1000)
            return reranked, ms, prefetch_s

        rankings, rerank_ms, timings["rerank_prefetch_s"] = _RERANKED.get_or(_key(ranking_key, cfg.reranker, *(
            [cfg.embedder] if wants(cfg.reranker, "reranker", "embedder") else [])), rerank)
        timings["rerank_s"] = sum(rerank_ms) / 1000

    t0 = time.perf_counter()
    frame, qrels = score_retrieval(questions=questions, chunks=searchable, rankings=rankings,
                                   documents=dataset.documents, ks=ks, k=int(cfg.pipeline.k),
                                   min_coverage=float(cfg.eval.min_coverage), relevance=str(cfg.eval.relevance),
                                   gain=str(cfg.eval.gain))
    frame["retrieved_ids"] = [[searchable[i].chunk_id for i in r] for r in retrieved]
    generator = build(cfg.generator, "generator")
    gen_info: dict[str, Any] | None = None
    if not isinstance(generator, NoGenerator):
        gen_info = run_generation(
            generator=generator, questions=questions, rankings=rankings, searchable=searchable,
            parents={c.chunk_id: c for c in chunks if c.is_parent}, k=int(cfg.pipeline.k),
            expand_parents=bool(cfg.pipeline.expand_parents), token_budget=int(cfg.pipeline.token_budget),
            min_coverage=float(cfg.eval.min_coverage), frame=frame)
        judge = build(cfg.judge, "judge", embedder=embedder)
        if not isinstance(judge, NoJudge):
            gen_info.update(run_judge(judge=judge, questions=questions, frame=frame))
            rate = gen_info["judge_failures"] / max(1, gen_info["judge_attempted"])
            if rate > judge.max_failure_rate:
                raise EndpointError(f"judge: {gen_info['judge_failures']} of {gen_info['judge_attempted']} judgements "
                                    f"failed ({rate:.0%} > judge.max_failure_rate={judge.max_failure_rate}); first "
                                    f"reason: {next(f for f in frame['judge_failures'] if f)} -- fix: check the judge "
                                    "endpoint or raise judge.max_failure_rate")
    frame["retrieve_ms"] = per_q_ms
    if rerank_ms:
        frame["rerank_ms"] = rerank_ms
    timings["score_s"] = time.perf_counter() - t0

    cut = sorted(set(ks) | {int(cfg.pipeline.k)})
    retrieval_cols = [f"{m}@{kk}" for m in ("hit", "precision", "recall", "mrr", "ndcg") for kk in ks] + \
        ["mrr", "ndcg", "map"]
    evidence_cols = [f"{m}@{kk}" for m in ("evidence_recall", "complete") for kk in cut]
    sections = {"retrieval": retrieval_cols, "evidence": evidence_cols}
    if gen_info is not None:
        sections.update(GENERATION_COLUMNS)
        judged = [c for c in frame.columns if c.startswith("judge_") and c != "judge_failures"]
        if judged:
            sections["judge"] = judged
    metrics = aggregate(frame, sections, n_resamples=int(cfg.eval.bootstrap_resamples), seed=int(cfg.eval.seed))
    metrics.setdefault("abstention", {}).update(threshold_analysis(frame))
    if gen_info is not None:
        metrics["conditional"] = conditional_table(frame, int(cfg.pipeline.k))
        metrics["methods"] = {"faithfulness": "lexical_support_proxy", "judge": str(cfg.judge.name)}
    metrics["by_tag"] = by_tag(frame, [m for m in TAG_METRICS if m in frame])
    if hasattr(retriever, "ann_report"):
        report = _ANN.get_or(_key(index_key, ks), lambda: retriever.ann_report(questions, ks, access))
        metrics["ann"] = {**report, "index": str(cfg.index.name)}
    answerable = frame["answerable"].to_numpy(bool)
    evaluated = int(np.sum(answerable & (frame["n_relevant"].to_numpy() > 0)))
    metrics["security"] = {"unauthorized_retrievals": int(frame["unauthorized_retrievals"].sum()),
                           "stale_retrievals": int(frame["stale_retrievals"].sum())}
    lat = np.asarray(per_q_ms)
    metrics["latency"] = {**{k: round(v, 6) for k, v in timings.items()},
                          "retrieve_p50_ms": float(np.percentile(lat, 50)) if lat.size else None,
                          "retrieve_p95_ms": float(np.percentile(lat, 95)) if lat.size else None}
    if rerank_ms:
        metrics["latency"].update(rerank_p50_ms=float(np.percentile(rerank_ms, 50)),
                                  rerank_p95_ms=float(np.percentile(rerank_ms, 95)))
    after = embedder.stats
    metrics["cost"] = {"embedding_requests": after.requested - before.requested,
                       "embedding_cache_hits": after.cache_hits - before.cache_hits,
                       "embeddings_computed": after.encoded - before.encoded,
                       "embed_s": round(after.encode_s - before.encode_s, 6)}
    labels = frame["failure"].value_counts()
    names = RETRIEVAL_LABELS if gen_info is None else ANSWERABLE_LABELS + UNANSWERABLE_LABELS[1:]
    metrics["failures"] = {label: int(labels.get(label, 0)) for label in names}
    if gen_info is not None:
        metrics["latency"].update(generate_s=round(gen_info["generate_wall_s"], 6),
                                  seconds_per_question=gen_info["seconds_per_question"])
    metrics["counts"] = {
        "documents": len(docs), "chunks": sum(not c.is_parent for c in chunks),
        "searchable_chunks": len(searchable), "questions": len(questions),
        "answerable": int(answerable.sum()), "unanswerable": int((~answerable).sum()),
        "evaluated": evaluated, "excluded_no_relevant_chunk": int(answerable.sum()) - evaluated,
        "depth": depth, "k": int(cfg.pipeline.k),
    }
    if gen_info is not None:
        metrics["counts"].update({k: v for k, v in gen_info.items() if not k.endswith("_s") and
                                  k not in ("seconds_per_question", "generations_cached")})
        metrics["cost"]["generations_cached"] = gen_info["generations_cached"]  # depends on the cache, not the config
    return CellResult(frame, metrics, _run_trec(frame, cell_id), _qrels_trec(questions, searchable, qrels))


def _run_trec(frame: pd.DataFrame, tag: str) -> str:
    lines = []
    for qid, ids, scores in zip(frame["qid"], frame["chunk_ids"], frame["scores"]):
        for rank, (cid, score) in enumerate(zip(ids, scores), start=1):
            lines.append(f"{qid} Q0 {cid} {rank} {score!r} {tag}")
    return "\n".join(lines) + ("\n" if lines else "")


def _qrels_trec(questions: list[Any], chunks: list[Chunk], qrels: dict[int, list[int]]) -> str:
    lines = [f"{questions[i].qid} 0 {chunks[j].chunk_id} 1" for i, rel in qrels.items() for j in rel]
    return "\n".join(lines) + ("\n" if lines else "")
