"""Per-question retrieval scoring of one cell: relevance, ranking and evidence measures, retrieval label."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from rag_bench.data.evidence import section_span
from rag_bench.metrics import measures
from rag_bench.metrics.ranking import ranking_metrics
from rag_bench.metrics.relevance import ChunkIndex, evidence_coverage, relevant_chunks
from rag_bench.records import Chunk, Document, Question, Ranking
from rag_bench.runner.labels import retrieval_label


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
    cut = sorted(set(ks) | {k})
    evidence_recall, complete = measures.EVIDENCE
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
        for kk in cut:
            er, comp = evidence_coverage(q, top[:kk], min_coverage=min_coverage)
            row[evidence_recall.at(kk).name], row[complete.at(kk).name] = er, comp
        row["failure"] = retrieval_label(q, found, first, k)
        rows.append(row)
    ideal = (np.arange(max(int(n_rel.max(initial=0)), 1))[None, :] < n_rel[:, None]).astype(float)
    per_q = ranking_metrics(levels=levels, n_relevant=n_rel, ideal=ideal, ks=list(ks), gain=gain)
    evaluated = np.array([q.answerable for q in questions]) & (n_rel > 0)
    frame = pd.DataFrame(rows)
    for name, values in per_q.items():
        frame[name] = np.where(evaluated, values, np.nan)
    return frame, qrels
