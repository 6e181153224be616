"""Per-question retrieval scoring of one cell, then aggregates with n and bootstrap CIs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from rag_bench.data.evidence import section_span
from rag_bench.metrics.bootstrap import bootstrap_ci
from rag_bench.metrics.ranking import ranking_metrics
from rag_bench.metrics.relevance import ChunkIndex, evidence_coverage, relevant_chunks
from rag_bench.records import Chunk, Document, Question, Ranking

# Failure labels of the retrieval stage, in attribution order (ARCHITECTURE §4). Generation
# labels (false_refusal, generation, citation, correct) extend this list in the generation stage;
# until then an answerable question whose evidence reached the top k is labelled "in_context".
RETRIEVAL_LABELS = ("chunking", "retrieval_miss", "ranking", "in_context")


def _section_spans(q: Question, documents: Mapping[str, Document]) -> list[tuple[int, int]]:
    spans = []
    for ev in q.evidence:
        doc = documents[ev.doc_id]
        secs = [s for s in doc.sections if s.heading_path == ev.heading_path and ev.heading_path]
        spans.append(section_span(doc, secs[0]) if secs else (ev.start, ev.end))
    return spans


def score_retrieval(*, questions: Sequence[Question], chunks: Sequence[Chunk], rankings: Sequence[Ranking],
                    documents: Mapping[str, Document], ks: Sequence[int], k: int, min_coverage: float,
                    relevance: str, gain: str = "linear") -> tuple[pd.DataFrame, dict[int, list[int]]]:
    """One row per question with ranked chunk ids, relevance, metrics and failure label.

    Also returns the derived qrels: question index → relevant chunk indices.
    """
    index = ChunkIndex(chunks)
    depth = max(len(r.indices) for r in rankings) if rankings else 0
    nq = len(questions)
    levels = np.zeros((nq, max(depth, 1)))
    n_rel = np.zeros(nq)
    qrels: dict[int, list[int]] = {}
    rows: list[dict[str, Any]] = []
    for i, (q, r) in enumerate(zip(questions, rankings, strict=True)):
        sec = _section_spans(q, documents) if relevance == "section" else None
        rel, found = relevant_chunks(q, index, min_coverage=min_coverage, mode=relevance, section_spans=sec)
        qrels[i] = rel.tolist()
        ranked = np.asarray(r.indices, np.int64)
        is_rel = np.isin(ranked, rel)
        levels[i, : ranked.size] = is_rel
        n_rel[i] = rel.size
        top = [chunks[j] for j in ranked]
        first = int(np.argmax(is_rel)) + 1 if is_rel.any() else None
        row: dict[str, Any] = {
            "qid": q.qid, "question": q.question, "answerable": q.answerable, "tags": list(q.tags),
            "asker": q.asker.label if q.asker else None,
            "chunk_ids": [c.chunk_id for c in top], "scores": list(r.scores), "relevant": is_rel.tolist(),
            "n_relevant": int(rel.size), "first_relevant_rank": first,
            "unauthorized_retrievals": sum(not documents[c.doc_id].readable_by(q.asker) for c in top),
            "stale_retrievals": sum(documents[c.doc_id].archived for c in top),
        }
        for kk in sorted(set(ks) | {k}):
            er, comp = evidence_coverage(q, top[:kk], min_coverage=min_coverage)
            row[f"evidence_recall@{kk}"], row[f"complete@{kk}"] = er, comp
        row["failure"] = _label(q, found, first, k)
        rows.append(row)
    ideal = (np.arange(max(int(n_rel.max(initial=0)), 1))[None, :] < n_rel[:, None]).astype(float)
    per_q = ranking_metrics(levels=levels, n_relevant=n_rel, ideal=ideal, ks=list(ks), gain=gain)
    evaluated = np.array([q.answerable for q in questions]) & (n_rel > 0)
    frame = pd.DataFrame(rows)
    for name, values in per_q.items():
        frame[name] = np.where(evaluated, values, np.nan)
    return frame, qrels


def _label(q: Question, found: np.ndarray, first: int | None, k: int) -> str | None:
    if not q.answerable:
        return None
    if not found.all():
        return "chunking"
    if first is None:
        return "retrieval_miss"
    if first > k:
        return "ranking"
    return "in_context"


def aggregate(frame: pd.DataFrame, metric_columns: Mapping[str, Sequence[str]], *, n_resamples: int,
              seed: int) -> dict[str, Any]:
    """``{section: {metric: mean}}`` plus ``n`` and ``ci`` keyed ``section/metric``.

    Means skip NaN (undefined) questions; ``n`` is the number of questions averaged.
    """
    out: dict[str, Any] = {"n": {}, "ci": {}}
    for section, cols in metric_columns.items():
        out[section] = {}
        for col in cols:
            v = frame[col].to_numpy(dtype=np.float64)
            defined = v[~np.isnan(v)]
            key = f"{section}/{col}"
            out[section][col] = float(defined.mean()) if defined.size else None
            out["n"][key] = int(defined.size)
            lo, hi = bootstrap_ci(v, n_resamples=n_resamples, seed=seed)
            out["ci"][key] = [lo, hi] if defined.size else None
    return out


TAG_METRICS = ("hit@1", "hit@5", "mrr@10", "ndcg@10", "recall@10")


def by_tag(frame: pd.DataFrame, metrics: Sequence[str] = TAG_METRICS) -> dict[str, dict[str, Any]]:
    """Mean of key ranking metrics per question tag (``{tag: {metric: mean, "n": count}}``).

    Shows *where* a configuration wins: paraphrases, exact identifiers, multi-hop questions.
    """
    out: dict[str, dict[str, Any]] = {}
    cols = [m for m in metrics if m in frame]
    values = frame[cols].to_numpy(dtype=np.float64) if cols else np.empty((len(frame), 0))
    any_defined = ~np.isnan(values).all(axis=1) if cols else np.zeros(len(frame), bool)
    tag_lists = list(frame["tags"])
    for tag in sorted({t for ts in tag_lists for t in ts}):
        rows = np.fromiter((tag in ts for ts in tag_lists), bool, len(tag_lists)) & any_defined
        if not rows.any():
            continue
        v = values[rows]
        # Same arithmetic as aggregate(): the mean of the defined values (NaN when none is defined).
        out[tag] = {m: float(x[~np.isnan(x)].mean()) if (~np.isnan(x)).any() else float("nan")
                    for m, x in zip(cols, v.T)}
        out[tag]["n"] = int(rows.sum())
    return out
