"""A cell's records.parquet, metrics.json, run.trec and qrels.trec, built from its stage results.

metrics.json sections (docs/contract.md §5) hold the measures of :mod:`rag_bench.metrics.measures`:
each per-question measure is averaged over the questions where it is defined, with its n and a
95% bootstrap CI keyed by the measure's canonical name (``ci["retrieval/hit@5"]``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from rag_bench.data.files import describe_files
from rag_bench.embedding.base import EmbedStats
from rag_bench.evaluation.results import Chunked, Generated, Indexed, Judged, Qrels, Reranked, Retrieved, Scored
from rag_bench.evaluation.scorers import evidence, failure_labels, judge
from rag_bench.metrics import measures
from rag_bench.metrics.bootstrap import bootstrap_cis
from rag_bench.metrics.measures import Measure
from rag_bench.records import Chunk, Dataset, Question
from rag_bench.stats.threshold import auroc, best_f1_threshold

CORRECT = measures.CORRECT


def records(*, scored: Scored, retrieved: Retrieved, reranked: Reranked, generated: Generated | None,
            judged: Judged | None) -> pd.DataFrame:
    """One row per question: the stages' columns side by side (generation's ``failure`` label
    replaces the retrieval one), then the per-question latencies. A new frame; inputs untouched."""
    latency: dict[str, Any] = {"retrieve_ms": retrieved.latency_ms}
    if reranked.latency_ms:
        latency["rerank_ms"] = reranked.latency_ms
    later = [part.frame for part in (generated, judged) if part is not None]
    later.append(pd.DataFrame(latency, index=scored.frame.index))
    # Frames side by side (pandas keeps their blocks, ~2 ms a cell less than rebuilding the columns
    # one Series at a time); a later stage's column replaces an earlier one, in the earlier one's place.
    out = [scored.frame]
    for part in later:
        given = [c for c in part.columns if any(c in o.columns for o in out)]
        for c in given:
            i = next(i for i, o in enumerate(out) if c in o.columns)
            out[i] = out[i].assign(**{c: part[c]})
        out.append(part.drop(columns=given) if given else part)
    return pd.concat(out, axis=1)


def aggregate(frame: pd.DataFrame, sections: dict[str, list[Measure]], *, n_resamples: int,
              seed: int) -> dict[str, Any]:
    """``{section: {name: mean}}`` plus ``n`` and ``ci`` keyed ``section/name``.

    Means skip NaN (undefined) questions; ``n`` is the number of questions averaged.
    """
    out: dict[str, Any] = {"n": {}, "ci": {}}
    listed = [(section, m) for section, ms in sections.items() for m in ms]
    values = np.empty((len(frame), len(listed)))
    for j, (_, m) in enumerate(listed):
        values[:, j] = frame[m.column].to_numpy(dtype=np.float64)
    # Every CI from one call: measures defined on the same questions share one resample gather.
    cis = bootstrap_cis(values, n_resamples=n_resamples, seed=seed)
    for section in sections:
        out[section] = {}
    for j, (section, m) in enumerate(listed):
        v = values[:, j]
        defined = v[~np.isnan(v)]
        out[section][m.name] = float(defined.mean()) if defined.size else None
        out["n"][m.key] = int(defined.size)
        out["ci"][m.key] = [float(cis[j, 0]), float(cis[j, 1])] if defined.size else None
    return out


def by_tag(frame: pd.DataFrame, tag_measures: Sequence[Measure] = (*measures.TAG, *measures.TAG_ANSWER)) \
        -> dict[str, dict[str, Any]]:
    """Mean of key ranking and answer measures per question tag (``{tag: {name: mean, "n": count}}``;
    ``n``: the tag's questions with any of them defined, so an unanswerable tag counts its questions
    by their refusal measures).

    Shows *where* a configuration wins: paraphrases, exact identifiers, multi-hop questions, and
    whether off-topic questions are refused.
    """
    out: dict[str, dict[str, Any]] = {}
    cols = [m.column for m in tag_measures if m.column in frame]
    # Column by column: selecting several columns of a frame with object columns copies it (~1 ms).
    values = (np.column_stack([frame[c].to_numpy(dtype=np.float64) for c in cols]) if cols
              else np.empty((len(frame), 0)))
    any_defined = ~np.isnan(values).all(axis=1) if cols else np.zeros(len(frame), bool)
    tag_lists = list(frame["tags"])
    for tag in sorted({t for ts in tag_lists for t in ts}):
        rows = np.fromiter((tag in ts for ts in tag_lists), bool, len(tag_lists)) & any_defined
        if not rows.any():
            continue
        v = values[rows]
        # Same arithmetic as aggregate(): the mean of the defined values; a measure no question of the
        # tag defines is left out (an unanswerable tag has no ranking measure), never a NaN.
        out[tag] = {m: float(x[~np.isnan(x)].mean()) for m, x in zip(cols, v.T) if (~np.isnan(x)).any()}
        out[tag]["n"] = int(rows.sum())
    return out


def conditional_table(frame: pd.DataFrame, k: int) -> dict[str, Any]:
    """"Answer correct when retrieval hit vs miss" (hit = a relevant chunk in the top k), with denominators."""
    correct = frame[CORRECT.column].to_numpy(np.float64)
    keep = frame["answerable"].to_numpy(bool) & ~np.isnan(correct)
    hit = frame["first_relevant_rank"].to_numpy(np.float64, na_value=np.inf) <= k
    out = {}
    for name, part in (("hit", keep & hit), ("miss", keep & ~hit)):
        n = int(part.sum())
        c = int(correct[part].sum())
        out[name] = {"n": n, "correct": c, "rate": c / n if n else None}
    return {"k": k, **out}


def threshold_analysis(frame: pd.DataFrame) -> dict[str, float | None]:
    """Can the top-1 retrieval score alone separate answerable from unanswerable questions?"""
    top = np.array([s[0] if len(s) else np.nan for s in frame["scores"]], dtype=float)
    y = frame["answerable"].to_numpy(bool)
    keep = ~np.isnan(top)
    a = auroc(top[keep], y[keep])
    t, f1 = best_f1_threshold(top[keep], y[keep])
    auc_m, thr_m, f1_m = measures.THRESHOLD
    clean = {auc_m.name: a, thr_m.name: t, f1_m.name: f1}
    return {k: (None if v is None or np.isnan(v) else float(v)) for k, v in clean.items()}


def _percentiles(prefix: str, ms: Sequence[float]) -> dict[str, float]:
    return {f"{prefix}_p50_ms": float(np.percentile(ms, 50)), f"{prefix}_p95_ms": float(np.percentile(ms, 95))}


def summarize(*, frame: pd.DataFrame, dataset: Dataset, chunked: Chunked, indexed: Indexed, retrieved: Retrieved,
              reranked: Reranked, scored: Scored, generated: Generated | None, judged: Judged | None, ann: dict[str, Any] | None,
              embedding: EmbedStats, timings: dict[str, float], ks: Sequence[int], k: int, index_name: str,
              judge_name: str, n_resamples: int, seed: int) -> dict[str, Any]:
    """metrics.json of a cell from its records (``frame``) and stage results."""
    cut = evidence.cutoffs(ks, k)
    sections: dict[str, list[Measure]] = {}
    for unit in scored.units:  # the ranking units the cell reports (eval.unit)
        sections[unit.section] = measures.retrieval_measures(ks, unit.families)
    sections[evidence.SECTION] = evidence.section_measures(cut)
    if generated is not None:
        sections.update({"generation": list(measures.GENERATION), "citation": list(measures.CITATION),
                         "abstention": list(measures.ABSTENTION)})
        if judged is not None and judged.metrics:
            sections[judge.SECTION] = judge.judge_measures(judged.metrics)
    metrics = aggregate(frame, sections, n_resamples=n_resamples, seed=seed)
    if judged is not None and judged.metrics:  # judged measures: two-level CIs and judge_consistency
        got = judge.statistics(frame, judged.metrics, n_resamples=n_resamples, seed=seed)
        for part in (judge.SECTION, "ci", "n"):
            metrics[part].update(got[part])
    metrics.setdefault("abstention", {}).update(threshold_analysis(frame))
    if generated is not None:
        metrics["conditional"] = conditional_table(frame, k)
        metrics["methods"] = {measures.FAITHFULNESS.name: "lexical_support_proxy", "judge": judge_name}
    metrics["by_tag"] = by_tag(frame)
    if ann is not None:
        metrics["ann"] = {**ann, "index": index_name}
    metrics["security"] = {m.name: int(frame[m.name].sum()) for m in measures.SECURITY}

    latency: dict[str, Any] = {name: round(v, 6) for name, v in timings.items()}
    lat = np.asarray(retrieved.latency_ms)
    latency.update({"retrieve_p50_ms": float(np.percentile(lat, 50)) if lat.size else None,
                    "retrieve_p95_ms": float(np.percentile(lat, 95)) if lat.size else None})
    if reranked.latency_ms:
        latency.update(_percentiles("rerank", reranked.latency_ms))
    metrics["latency"] = latency
    metrics["cost"] = {"embedding_requests": embedding.requested, "embedding_cache_hits": embedding.cache_hits,
                       "embeddings_computed": embedding.encoded, "embed_s": round(embedding.encode_s, 6)}

    metrics[failure_labels.SECTION] = failure_labels.tally(frame, generated=generated is not None)

    answerable = frame["answerable"].to_numpy(bool)
    evaluated = int(np.sum(answerable & (frame["n_relevant"].to_numpy() > 0)))
    counts: dict[str, Any] = {
        "documents": len(dataset.documents), "chunks": sum(not c.is_parent for c in chunked.chunks),
        "searchable_chunks": len(indexed.searchable), "questions": len(dataset.questions),
        "answerable": int(answerable.sum()), "unanswerable": int((~answerable).sum()),
        "evaluated": evaluated, "excluded_no_relevant_chunk": int(answerable.sum()) - evaluated,
        # Answerable questions with no relevant evidence at all (a BEIR query judged only with grade 0).
        "excluded_no_relevant": int(sum(q.answerable and not q.evidence for q in dataset.questions)),
        "depth": retrieved.depth, "k": k,
    }
    for unit in scored.units:
        counts.update(unit.counts(frame, answerable, ks))
    if generated is not None:
        g = generated.counts
        latency.update(generate_s=round(g.wall_s, 6), seconds_per_question=g.seconds_per_question)
        counts.update(endpoint_calls=g.endpoint_calls, endpoint_failures=g.endpoint_failures,
                      unparseable=g.unparseable, retries=g.retries)
        metrics["cost"]["generations_cached"] = g.generations_cached  # depends on the cache, not the config
        if g.tokens_per_question is not None:
            metrics["cost"][measures.GENERATOR_TOKENS.name] = g.tokens_per_question
    if judged is not None:
        counts.update(judge_attempted=judged.attempted, judge_failures=judged.failures, judge_calls=judged.calls)
        metrics["cost"].update(judge_calls=judged.calls, judge_tokens_in=judged.tokens_in,
                               judge_tokens_out=judged.tokens_out, judge_s=judged.seconds)
    metrics["counts"] = counts
    metrics["dataset_fingerprint"] = dataset.fingerprint
    metrics["dataset_files"] = describe_files(dataset.files)  # what the fingerprint covers
    metrics["warnings"] = sanity_warnings(frame, metrics, k, external=index_name == "external")
    if judged is not None and judged.failures:
        metrics["warnings"].append(judge.failure_warning(frame, judged.failures, judged.attempted))
    return metrics


def sanity_warnings(frame: pd.DataFrame, metrics: dict[str, Any], k: int, *, external: bool = False) -> list[str]:
    """Signs that a number is degenerate for this data, so a user notices before trusting a table:
    retrieval that matched nothing for answerable questions (an unanswerable, off-topic question
    that matches nothing is retrieval working), answers all wrong although the evidence reached the
    context, measures averaged over no question. ``external``: an application's outputs, for which
    advice about our retrievers' settings would be wrong."""
    out = []
    security = metrics.get("security", {})
    _, from_retriever, from_reranker, _ = measures.SECURITY
    for stage, m in (("retriever", from_retriever), ("reranker", from_reranker)):
        dropped = security.get(m.name, 0)
        if dropped:
            out.append(f"SECURITY: the {stage} returned {dropped} chunk(s) the asker may not read; they were dropped "
                       "before the context, the generator and every file of the cell -- fix: the "
                       f"{stage} must apply the access filter it is given (security.unauthorized_retrievals fails "
                       "the release policy)")
    top = np.array([s[0] if len(s) else np.nan for s in frame["scores"]], dtype=float)
    answerable = frame["answerable"].to_numpy(bool) if "answerable" in frame else np.ones(len(frame), bool)
    zero = int(np.sum((top == 0) & answerable))
    if zero:
        fix = ("check the passages the system returned for them" if external else
               "for BM25 (no question token is in the index), check retriever.language, or the questions' script "
               "and tokenizer")
        out.append(f"{zero} of {int(answerable.sum())} answerable questions have a top retrieval score of 0: "
                   f"the retrieval matched nothing for them -- {fix}")
    n = metrics.get("n", {})
    for m in (*measures.TAG[:1], measures.DOC_NDCG.at(10)):
        if m.key in n and n[m.key] == 0:
            out.append(f"{m.key} is averaged over 0 questions: no answerable question has a relevant "
                       f"{'chunk' if m.section == 'retrieval' else 'document'} -- check the evidence and eval.min_coverage")
    if "generation" in metrics:
        for m in (CORRECT, measures.CITATION_PRECISION):
            if n.get(m.key) == 0:
                out.append(f"{m.key} is computed on 0 questions"
                           + (" (no question has facts or references)" if m.section == "generation" else ""))
        correct = frame[CORRECT.column].to_numpy(np.float64)
        defined = ~np.isnan(correct)
        in_context = defined & (frame["first_relevant_rank"].fillna(np.inf).to_numpy() <= k)
        if defined.any() and np.nansum(correct) == 0 and in_context.sum() >= defined.sum() / 2:
            out.append(f"generation/correct is 0 although the evidence reached the context for {int(in_context.sum())} "
                       f"of {int(defined.sum())} questions -- check eval.answer_match (contains suits long answers; "
                       "em and f1 suit short ones) and the generator's output")
    return out


def run_lines(frame: pd.DataFrame) -> list[str]:
    """The lines of :func:`run_trec` without their tag (cells with the same final rankings share them)."""
    return [f"{qid} Q0 {cid} {rank} {score!r}" for qid, ids, scores in
            zip(frame["qid"], frame["chunk_ids"], frame["scores"])
            for rank, (cid, score) in enumerate(zip(ids, scores), start=1)]


def run_trec(frame: pd.DataFrame, tag: str, lines: Sequence[str] | None = None) -> str:
    """The cell's run in TREC format (chunk ids, strictly decreasing scores), tagged ``tag``;
    ``lines``: :func:`run_lines` of ``frame`` when already made."""
    lines = run_lines(frame) if lines is None else lines
    end = f" {tag}\n"
    return end.join(lines) + end if lines else ""


def qrels_trec(questions: Sequence[Question], chunks: Sequence[Chunk], qrels: Qrels) -> str:
    """The derived chunk-level qrels in TREC format, each relevant chunk at its grade."""
    lines = [f"{questions[i].qid} 0 {chunks[j].chunk_id} {g}" for i, rel in qrels.chunks.items()
             for j, g in sorted(rel.items())]
    return "\n".join(lines) + ("\n" if lines else "")
