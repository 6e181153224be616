"""Per-question retrieval scoring of one cell: relevance, ranking and evidence measures, retrieval label."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
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


@dataclass(frozen=True)
class Qrels:
    """Derived judgments of one cell: per question index, graded relevant chunks (chunk index →
    grade) and graded relevant documents (doc id → grade)."""

    chunks: dict[int, dict[int, int]]
    documents: dict[int, dict[str, int]]


def _ideal(grades: list[list[int]]) -> np.ndarray:
    width = max((len(g) for g in grades), default=0)
    out = np.zeros((len(grades), max(width, 1)))
    for i, g in enumerate(grades):
        out[i, :len(g)] = sorted(g, reverse=True)
    return out


def document_ranking(ranked: Sequence[Chunk], scores: Sequence[float]) -> tuple[list[str], list[float]]:
    """The chunk ranking as a document ranking: each document at the rank of its first (best)
    chunk, with that chunk's score (max score per document, first occurrence order).

    >>> c = [Chunk(f"{d}#{i}", d, 0, 1, "x") for i, d in enumerate("abab")]
    >>> document_ranking(c, [4.0, 3.0, 2.0, 1.0])
    (['a', 'b'], [4.0, 3.0])
    """
    seen: dict[str, float] = {}
    for c, sc in zip(ranked, scores):
        seen.setdefault(c.doc_id, float(sc))
    return list(seen), list(seen.values())


@dataclass(frozen=True)
class RankedScores:
    """The per-question scoring of one ranking that does not depend on the cell's ``k``: cells
    that differ only in ``k`` (or in what comes after retrieval) share it (:func:`at_k`)."""

    frame: pd.DataFrame             # every column but the k-dependent ones
    qrels: Qrels
    found: tuple[np.ndarray, ...]   # per question: is any chunk relevant to evidence span i
    judged: tuple[bool, ...]        # per question: has evidence at the relevance level
    ks: tuple[int, ...]
    head: int                       # columns of ``frame`` before the evidence columns at ks
    metric_columns: tuple[str, ...]  # the ranking-measure columns (last in the frame)


def score_retrieval(*, questions: Sequence[Question], chunks: Sequence[Chunk], rankings: Sequence[Ranking],
                    documents: Mapping[str, Document], ks: Sequence[int], k: int, min_coverage: float,
                    relevance: str, gain: str = "linear", relevance_level: int = 1,
                    units: Sequence[str] = ("chunk",), attribute_chunking: bool = True,
                    min_relevant: int = 0) -> tuple[pd.DataFrame, Qrels]:
    """One row per question with ranked chunk ids, graded relevance, measures and failure label.

    Chunk grades are the highest grade of the evidence spans a chunk is relevant to; binary
    measures (hit, precision, recall, MRR, MAP) count grades >= ``relevance_level`` (trec_eval's
    ``-l``), nDCG uses every positive grade with ``gain``. With ``"document"`` in ``units`` the
    chunk ranking is also turned into a document ranking (:func:`document_ranking`) and scored
    against document grades (columns ``doc_*``). ``min_relevant`` (external systems, whose
    passages are not the corpus's chunks) counts at least that many relevant chunks for an
    answerable question with evidence at the level, so a miss scores 0. Also returns the derived qrels.
    """
    base = score_ranked(questions=questions, chunks=chunks, rankings=rankings, documents=documents, ks=ks,
                        min_coverage=min_coverage, relevance=relevance, gain=gain, relevance_level=relevance_level,
                        units=units, min_relevant=min_relevant)
    return at_k(base, questions=questions, chunks=chunks, rankings=rankings, k=k, min_coverage=min_coverage,
                attribute_chunking=attribute_chunking), base.qrels


def at_k(base: RankedScores, *, questions: Sequence[Question], chunks: Sequence[Chunk], rankings: Sequence[Ranking],
         k: int, min_coverage: float, attribute_chunking: bool = True) -> pd.DataFrame:
    """The frame of :func:`score_retrieval` from the k-independent ``base``: evidence measures at
    ``k`` (when ``k`` is not one of the ks) and the retrieval label at ``k``."""
    frame = base.frame
    evidence_recall, complete = measures.EVIDENCE
    columns = list(frame.columns)
    evidence = columns[base.head:len(columns) - len(base.metric_columns)]
    extra: dict[str, Any] = {}
    if k not in base.ks:
        pairs = [evidence_coverage(q, [chunks[j] for j in r.indices[:k]], min_coverage=min_coverage)
                 for q, r in zip(questions, rankings)]
        extra = {evidence_recall.at(k).name: [p[0] for p in pairs], complete.at(k).name: [p[1] for p in pairs]}
        order = sorted([*base.ks, k])
        evidence = [m.at(kk).name for kk in order for m in (evidence_recall, complete)]
    first = frame["first_relevant_rank"].tolist()
    extra["failure"] = [
        "unjudged" if q.answerable and q.evidence and not judged else
        retrieval_label(q, found if attribute_chunking else np.ones_like(found),
                        None if f is None or f != f else int(f), k)
        for q, found, judged, f in zip(questions, base.found, base.judged, first)]
    final = [*columns[:base.head], *evidence, "failure", *base.metric_columns]
    # A copy of the shared base frame with the new columns put in place (assign, then selecting the
    # columns in order, copied the frame twice: ~0.5 ms a cell).
    out = frame.copy()
    for name in sorted(extra, key=final.index):
        out.insert(final.index(name), name, extra[name])
    return out


def score_ranked(*, questions: Sequence[Question], chunks: Sequence[Chunk], rankings: Sequence[Ranking],
                 documents: Mapping[str, Document], ks: Sequence[int], min_coverage: float,
                 relevance: str, gain: str = "linear", relevance_level: int = 1,
                 units: Sequence[str] = ("chunk",), min_relevant: int = 0) -> RankedScores:
    """The k-independent part of :func:`score_retrieval` (its arguments, without ``k``)."""
    index = ChunkIndex(chunks)
    depth = max(len(r.indices) for r in rankings) if rankings else 0
    nq = len(questions)
    cut = sorted(set(ks))
    evidence_recall, complete = measures.EVIDENCE
    cut_names = [(kk, evidence_recall.at(kk).name, complete.at(kk).name) for kk in cut]
    levels = np.zeros((nq, max(depth, 1)))
    doc_levels = np.zeros((nq, max(depth, 1)))
    n_rel, doc_n_rel = np.zeros(nq), np.zeros(nq)
    grades_all: list[list[int]] = []
    doc_grades_all: list[list[int]] = []
    qrels = Qrels({}, {})
    rows: list[dict[str, Any]] = []
    found_all: list[np.ndarray] = []
    judged_all: list[bool] = []
    readable: dict[tuple[Any, str], bool] = {}  # (asker key, doc id) -> may read: one ACL check each
    for i, (q, r) in enumerate(zip(questions, rankings, strict=True)):
        sec = _section_spans(q, documents) if relevance == "section" else None
        rel, grades, found = relevant_chunks(q, index, min_coverage=min_coverage, mode=relevance, section_spans=sec)
        grade_of = dict(zip(rel.tolist(), grades.tolist()))
        qrels.chunks[i] = grade_of
        ranked = np.asarray(r.indices, np.int64)
        ranked_grades = np.array([grade_of.get(j, 0) for j in ranked.tolist()], np.float64)
        levels[i, : ranked.size] = ranked_grades
        is_rel = ranked_grades >= relevance_level
        n_rel[i] = int(np.sum(grades >= relevance_level))
        judged = q.answerable and any(s.grade >= relevance_level for s in q.evidence)
        padding = max(0, min_relevant - int(n_rel[i])) if judged else 0
        n_rel[i] += padding
        grades_all.append([g for g in grades.tolist() if g > 0]
                          + ([max(s.grade for s in q.evidence)] * padding if padding else []))
        top = [chunks[j] for j in ranked]
        first = int(np.argmax(is_rel)) + 1 if is_rel.any() else None
        who = q.asker.key if q.asker else None
        unauthorized = 0
        for c in top:
            may = readable.get((who, c.doc_id))
            if may is None:
                may = readable[(who, c.doc_id)] = documents[c.doc_id].readable_by(q.asker)
            unauthorized += not may
        row: dict[str, Any] = {
            "qid": q.qid, "question": q.question, "answerable": q.answerable, "tags": list(q.tags),
            "asker": q.asker.label if q.asker else None,
            "chunk_ids": [c.chunk_id for c in top], "scores": list(r.scores), "relevant": is_rel.tolist(),
            "chunk_spans": [{"doc_id": c.doc_id, "start": c.start, "end": c.end} for c in top],
            "grades": ranked_grades.astype(np.int64).tolist(),
            "n_relevant": int(n_rel[i]), "first_relevant_rank": first,
            "unauthorized_retrievals": unauthorized,
            "stale_retrievals": sum(documents[c.doc_id].archived for c in top),
        }
        if "document" in units:
            doc_grade: dict[str, int] = {}
            for span in q.evidence:
                doc_grade[span.doc_id] = max(doc_grade.get(span.doc_id, 0), span.grade)
            qrels.documents[i] = doc_grade
            doc_ids, doc_scores = document_ranking(top, r.scores)
            doc_levels[i, : len(doc_ids)] = [doc_grade.get(d, 0) for d in doc_ids]
            doc_n_rel[i] = sum(g >= relevance_level for g in doc_grade.values())
            doc_grades_all.append([g for g in doc_grade.values() if g > 0])
            row.update(doc_ids=doc_ids, doc_scores=doc_scores)
        for kk, er_name, comp_name in cut_names:
            row[er_name], row[comp_name] = evidence_coverage(q, top[:kk], min_coverage=min_coverage)
        rows.append(row)
        found_all.append(found)
        judged_all.append(bool(judged))
    frame = pd.DataFrame(rows)
    head = len(frame.columns) - 2 * len(cut)
    answerable = np.array([q.answerable for q in questions], bool)
    parts = [("chunk", "", levels, n_rel, grades_all)]
    if "document" in units:
        parts.append(("document", "doc_", doc_levels, doc_n_rel, doc_grades_all))
    metric_columns: dict[str, np.ndarray] = {}
    for _, prefix, lv, nr, gr in parts:
        per_q = ranking_metrics(levels=lv, n_relevant=nr, ideal=_ideal(gr), ks=list(ks), gain=gain,
                                relevance_level=relevance_level)
        evaluated = answerable & (nr > 0)
        metric_columns.update({prefix + name: np.where(evaluated, values, np.nan) for name, values in per_q.items()})
    frame = pd.concat([frame, pd.DataFrame(metric_columns, index=frame.index)], axis=1)
    return RankedScores(frame, qrels, tuple(found_all), tuple(judged_all), tuple(cut), head, tuple(metric_columns))
