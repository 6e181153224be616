"""Per-question retrieval scoring of one cell: relevance, ranking and evidence measures, retrieval label,
security counts per stage (:func:`score`, from the run's rankings)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from rag_bench import memo
from rag_bench.data.evidence import section_span
from rag_bench.evaluation.results import Indexed, Judgment, Qrels, RankingUnit, Reranked, Retrieved, Scored
from rag_bench.evaluation.scorers import evidence as evidence_scorer
from rag_bench.evaluation.scorers import failure_labels, security
from rag_bench.memo import SharedWork
from rag_bench.metrics.ranking import ranking_metrics
from rag_bench.metrics.relevance import ChunkIndex, relevant_chunks
from rag_bench.records import Chunk, Dataset, Document, Question, Ranking


def _section_spans(q: Question, documents: Mapping[str, Document]) -> list[tuple[int, int]]:
    spans = []
    for ev in q.evidence:
        doc = documents[ev.doc_id]
        secs = [s for s in doc.sections if s.heading_path == ev.heading_path and ev.heading_path]
        spans.append(section_span(doc, secs[0]) if secs else (ev.start, ev.end))
    return spans


def _ideal(grades: list[list[int]]) -> np.ndarray:
    width = max((len(g) for g in grades), default=0)
    out = np.zeros((len(grades), max(width, 1)))
    for i, g in enumerate(grades):
        out[i, :len(g)] = sorted(g, reverse=True)
    return out


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
                    units: Sequence[RankingUnit] = (), attribute_chunking: bool = True,
                    min_relevant: int = 0) -> tuple[pd.DataFrame, Qrels]:
    """One row per question with ranked chunk ids, graded relevance, measures and failure label.

    Chunk grades are the highest grade of the evidence spans a chunk is relevant to; binary
    measures (hit, precision, recall, MRR, MAP) count grades >= ``relevance_level`` (trec_eval's
    ``-l``), nDCG uses every positive grade with ``gain``. Each ranking unit of ``units`` (a
    :class:`RankingUnit`: chunks, documents) judges the ranking its way and gets its ranking
    measures (columns prefixed by the unit's ``prefix``). ``min_relevant`` (external systems, whose
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
    columns = list(frame.columns)
    evidence = columns[base.head:len(columns) - len(base.metric_columns)]
    extra: dict[str, Any] = {}
    if k not in base.ks:
        for q, r in zip(questions, rankings):
            for name, value in evidence_scorer.columns(q, [chunks[j] for j in r.indices[:k]], [k],
                                                       min_coverage=min_coverage).items():
                extra.setdefault(name, []).append(value)
        evidence = [m.column for m in evidence_scorer.evidence_measures(sorted([*base.ks, k]))]
    extra[failure_labels.COLUMN] = failure_labels.retrieval_labels(
        questions, base.found, base.judged, frame["first_relevant_rank"].tolist(), k,
        attribute_chunking=attribute_chunking)
    final = [*columns[:base.head], *evidence, failure_labels.COLUMN, *base.metric_columns]
    # A copy of the shared base frame with the new columns put in place (assign, then selecting the
    # columns in order, copied the frame twice: ~0.5 ms a cell).
    out = frame.copy()
    for name in sorted(extra, key=final.index):
        out.insert(final.index(name), name, extra[name])
    return out


def score_ranked(*, questions: Sequence[Question], chunks: Sequence[Chunk], rankings: Sequence[Ranking],
                 documents: Mapping[str, Document], ks: Sequence[int], min_coverage: float,
                 relevance: str, gain: str = "linear", relevance_level: int = 1,
                 units: Sequence[RankingUnit] = (), min_relevant: int = 0) -> RankedScores:
    """The k-independent part of :func:`score_retrieval` (its arguments, without ``k``)."""
    index = ChunkIndex(chunks)
    depth = max(len(r.indices) for r in rankings) if rankings else 0
    nq = len(questions)
    cut = sorted(set(ks))
    qrels = Qrels({}, {})
    judged_by_unit: list[list[Judgment]] = [[] for _ in units]
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
        is_rel = ranked_grades >= relevance_level
        n_relevant = int(np.sum(grades >= relevance_level))
        judged = q.answerable and any(s.grade >= relevance_level for s in q.evidence)
        padding = max(0, min_relevant - n_relevant) if judged else 0
        chunk = Judgment(ranked_grades, n_relevant + padding,
                         [g for g in grades.tolist() if g > 0]
                         + ([max(s.grade for s in q.evidence)] * padding if padding else []), {}, grade_of)
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
            "n_relevant": int(chunk.n_relevant), "first_relevant_rank": first,
            security.UNAUTHORIZED.column: unauthorized,
            security.STALE.column: sum(documents[c.doc_id].archived for c in top),
        }
        for unit, judged_unit in zip(units, judged_by_unit):
            j = unit.judge(q, top, r.scores, chunk, relevance_level)
            getattr(qrels, unit.qrels_field)[i] = j.qrels
            row.update(j.columns)
            judged_unit.append(j)
        row.update(evidence_scorer.columns(q, top, cut, min_coverage=min_coverage))
        rows.append(row)
        found_all.append(found)
        judged_all.append(bool(judged))
    frame = pd.DataFrame(rows)
    head = len(frame.columns) - len(evidence_scorer.evidence_measures(cut))
    answerable = np.array([q.answerable for q in questions], bool)
    metric_columns: dict[str, np.ndarray] = {}
    for unit, judgments in zip(units, judged_by_unit):
        lv = np.zeros((nq, max(depth, 1)))
        for i, j in enumerate(judgments):
            lv[i, : len(j.levels)] = j.levels
        nr = np.array([j.n_relevant for j in judgments], np.float64).reshape(nq)
        per_q = ranking_metrics(levels=lv, n_relevant=nr, ideal=_ideal([j.grades for j in judgments]), ks=list(ks),
                                gain=gain, relevance_level=relevance_level)
        evaluated = answerable & (nr > 0)
        metric_columns.update({unit.prefix + name: np.where(evaluated, values, np.nan)
                               for name, values in per_q.items()})
    frame = pd.concat([frame, pd.DataFrame(metric_columns, index=frame.index)], axis=1)
    return RankedScores(frame, qrels, tuple(found_all), tuple(judged_all), tuple(cut), head, tuple(metric_columns))


def score(*, questions: Sequence[Question], dataset: Dataset, indexed: Indexed, retrieved: Retrieved,
          reranked: Reranked, ks: Sequence[int], k: int, min_coverage: float, relevance: str,
          gain: str, relevance_level: int = 1, units: Sequence[RankingUnit] = (),
          attribute_chunking: bool = True, min_relevant: int = 0, work: SharedWork | None = None,
          scored_units: Sequence[RankingUnit] | None = None) -> Scored:
    """Per-question graded relevance, ranking measures (per unit), evidence measures and the
    retrieval label (``attribute_chunking=False`` when the chunks are not the whole corpus's, as
    for an external system's passages: ``chunking`` cannot be told from ``retrieval_miss``; then
    ``min_relevant=1`` makes a question the system missed score 0 instead of being left out).
    The part that does not depend on ``k`` is computed once per final ranking and scoring
    parameters in ``work`` (cells that differ only in ``k`` or after retrieval share it).
    ``units`` are the ranking units reported, ``scored_units`` those whose measure columns the
    records hold (default: ``units``)."""
    searchable = indexed.searchable
    columns_of = tuple(units if scored_units is None else scored_units)

    def ranked() -> RankedScores:
        return score_ranked(questions=questions, chunks=searchable, rankings=reranked.rankings,
                            documents=dataset.documents, ks=ks, min_coverage=min_coverage, relevance=relevance,
                            gain=gain, relevance_level=relevance_level, units=columns_of, min_relevant=min_relevant)

    if work is not None and reranked.key is not None:
        key = memo.key(dataset.fingerprint, reranked.key, list(ks), min_coverage, relevance, gain, relevance_level,
                       [u.name for u in columns_of], min_relevant)
        base = work.get_or("scored", key, ranked)
    else:
        base = ranked()
    frame = at_k(base, questions=questions, chunks=searchable, rankings=reranked.rankings, k=k,
                 min_coverage=min_coverage, attribute_chunking=attribute_chunking)
    frame = frame.assign(retrieved_ids=[[searchable[i].chunk_id for i in r.indices] for r in retrieved.rankings])
    # Security per stage: what each component returned that the asker may not read (dropped
    # before anything downstream saw it); unauthorized_retrievals counts those as well as any
    # unreadable chunk left in the final ranking (an external system's passages).
    n = len(questions)
    frame = security.with_stage_counts(frame, retrieved.unauthorized or [0] * n, reranked.unauthorized or [0] * n)
    return Scored(frame, base.qrels, tuple(units))
