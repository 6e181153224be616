"""Relevance grading: the graded judgments of a run's final rankings, derived from the evidence spans
(what trec_eval's qrels are to a run), read by every scorer that needs to know which passages are
relevant.

A passage's grade is the highest grade of the evidence spans it is relevant to
(:func:`rag_bench.metrics.relevance.relevant_chunks`: overlap, section or facts, ``eval.relevance``,
``eval.min_coverage``); binary measures count grades >= ``eval.relevance_level`` (trec_eval's
``-l``). ``min_relevant`` (an external system, whose passages are not a chunking of the corpus)
counts at least that many relevant passages for an answerable question with evidence at the level,
so a miss scores 0. A gold quote the cell's parser lost (:attr:`Question.lost`) is a relevant item
no passage is: it counts in ``n_relevant`` and the ideal ranking at its grade and is never retrieved
(qrels.trec lists it as ``lost:<doc_id>:<n>``, an id no run holds, so trec_eval agrees). Grading
depends on the final rankings and those settings only: cells that share them (a sweep over ``k``,
the generator or the judge) share it through the shared work.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rag_bench import memo
from rag_bench.domain import Question
from rag_bench.evaluation.run import SystemRun
from rag_bench.evaluation.settings import Settings
from rag_bench.memo import SharedWork
from rag_bench.metrics.relevance import ChunkIndex, relevant_chunks


@dataclass(frozen=True)
class Graded:
    """One question's final ranking, judged: the grade of each ranked passage (rank order), how
    many passages are relevant at the relevance level (``min_relevant`` padding included), every
    positive grade (the ideal ranking), the passage judgments (passage index -> grade), whether
    each evidence span has any relevant passage in the corpus (``found``), whether the question has
    evidence at the level (``judged``), the 1-based rank of its first relevant passage, and the
    grades of the gold quotes the parse lost (``lost``: relevant, never retrievable)."""

    levels: np.ndarray
    n_relevant: float
    ideal: list[int]
    qrels: dict[int, int]
    found: np.ndarray
    judged: bool
    first_relevant: int | None
    lost: tuple[int, ...] = ()


@dataclass(frozen=True)
class Grades:
    """Every question's :class:`Graded`, in the run's order, and their records.parquet columns
    (the final ranking's ids, scores and spans, and its judgments)."""

    questions: tuple[Graded, ...]
    columns: Mapping[str, list[Any]]


def grade(run: SystemRun, settings: Settings, work: SharedWork | None = None) -> Grades:
    """The run's final rankings graded (module docstring), once per final rankings and grading
    settings when ``work`` is given and the run names its rankings."""
    if work is None or run.ranking_key is None:
        return _grade(run, settings)
    key = memo.key(run.dataset.fingerprint, run.ranking_key, settings.min_coverage, settings.relevance,
                   settings.relevance_level, run.min_relevant)
    return work.get_or("graded", key, lambda: _grade(run, settings, work))


Relevance = tuple[np.ndarray, np.ndarray, np.ndarray]  # relevant_chunks: indices, their grades, spans found


def relevance(run: SystemRun, settings: Settings, work: SharedWork | None = None) -> Callable[[Question], Relevance]:
    """Each question's relevant chunks among the run's passages (:func:`relevant_chunks`, read-only
    arrays). They depend on the passages, the question and the grading settings, not on the
    ranking: with ``work`` they are found once per passages object and question, for every
    ranking of one chunking and index (its retrievers' depths, rerankers, k) -- the passages are
    held with them, so the object they were found for is the one asked about."""
    passages = run.passages

    def made() -> tuple[Any, ChunkIndex, dict[Any, Relevance]]:
        return passages, ChunkIndex(passages), {}

    # Keyed by the passages' id: the entry holds them, so no other object takes that id while it lives.
    _, index, found = made() if work is None else work.get_or(
        "relevance", memo.key(id(passages), run.dataset.fingerprint, settings.min_coverage, settings.relevance), made)

    def of(q: Question) -> Relevance:
        key = (q.qid, q.evidence, q.facts)  # what relevant_chunks reads of the question
        got = found.get(key)
        if got is None:
            got = relevant_chunks(q, index, min_coverage=settings.min_coverage, mode=settings.relevance,
                                  documents=run.corpus)
            for array in got:
                array.flags.writeable = False
            found[key] = got
        return got

    return of


def _grade(run: SystemRun, settings: Settings, work: SharedWork | None = None) -> Grades:
    passages, level = run.passages, settings.relevance_level
    relevant = relevance(run, settings, work)
    graded: list[Graded] = []
    columns: dict[str, list[Any]] = {name: [] for name in ("chunk_ids", "scores", "relevant", "chunk_spans", "grades",
                                                           "n_relevant", "first_relevant_rank")}
    # A chunk's span, one dict per chunk shared by every ranking that holds it (read, never changed;
    # the graded columns are shared by the cells of one ranking already): ~2,000 a squad2-normans cell
    spans: dict[int, dict[str, Any]] = {}
    for qr in run.questions:
        q = qr.question
        rel, grades, found = relevant(q)
        grade_of = dict(zip(rel.tolist(), grades.tolist()))
        ranked = qr.ranked.indices
        levels = np.array([grade_of.get(j, 0) for j in ranked], np.float64)
        is_rel = levels >= level
        lost = tuple(x.grade for x in q.lost) if q.answerable else ()
        n_relevant = int(np.sum(grades >= level)) + sum(g >= level for g in lost)
        gold = [s.grade for s in q.evidence] + list(lost)
        judged = q.answerable and any(g >= level for g in gold)
        padding = max(0, run.min_relevant - n_relevant) if judged else 0
        first = int(np.argmax(is_rel)) + 1 if is_rel.any() else None
        graded.append(Graded(levels, n_relevant + padding,
                             [g for g in grades.tolist() if g > 0] + list(lost)
                             + ([max(gold)] * padding if padding else []),
                             grade_of, found, bool(judged), first, lost))
        for j in ranked:
            if j not in spans:
                c = passages[j]
                spans[j] = {"doc_id": c.doc_id, "start": c.start, "end": c.end}
        columns["chunk_ids"].append([passages[j].chunk_id for j in ranked])
        columns["scores"].append(list(qr.ranked.scores))
        columns["relevant"].append(is_rel.tolist())
        columns["chunk_spans"].append([spans[j] for j in ranked])
        columns["grades"].append(levels.astype(np.int64).tolist())
        columns["n_relevant"].append(int(n_relevant + padding))
        columns["first_relevant_rank"].append(first)
    return Grades(tuple(graded), columns)


def ideal_matrix(ideals: Sequence[list[int]]) -> np.ndarray:
    """The ideal rankings' grades as a ``(questions, width)`` array, best first, zero padded."""
    width = max((len(g) for g in ideals), default=0)
    out = np.zeros((len(ideals), max(width, 1)))
    for i, g in enumerate(ideals):
        out[i, :len(g)] = sorted(g, reverse=True)
    return out


def level_matrix(levels: Sequence[Sequence[float] | np.ndarray], depth: int) -> np.ndarray:
    """Ranked grades as a ``(questions, depth)`` array, zero padded (at least one column)."""
    out = np.zeros((len(levels), max(depth, 1)))
    for i, lv in enumerate(levels):
        out[i, :len(lv)] = lv
    return out
