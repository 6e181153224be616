"""Chunk ranking (metrics.json ``retrieval``): the final ranking of passages scored against the
passage grades derived from the evidence spans, with trec_eval's definitions
(:mod:`rag_bench.metrics.ranking`); run.trec and qrels.trec, on which ``trec_eval`` gives the same
numbers. The columns are always computed (the failure labels and the console read them); the
section is reported when ``eval.unit`` is ``chunk`` or ``both``.

A measure is defined for the answerable questions with a relevant passage at the relevance level;
the others are NaN (left out of n).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from rag_bench.evaluation.grade import Grades, ideal_matrix, level_matrix
from rag_bench.evaluation.run import SystemRun
from rag_bench.evaluation.scorer import Measure, Part, ScoringInput, Settings
from rag_bench.metrics.ranking import (
    average_precision,
    hit_at_k,
    ndcg_at_k,
    precision_at_k,
    recall_at_k,
    reciprocal_rank,
)

# The settings that change which passages are relevant, and so every ranking measure.
GRADED_BY = ("eval.relevance", "eval.min_coverage", "eval.relevance_level")
_PARAMS = (*GRADED_BY, "unit=chunk")


def _families(section: str, params: tuple[str, ...], unit: str) -> tuple[Measure, ...]:
    return (
        Measure("hit", section,
                description=f"a relevant {unit} in the top k (trec success_k)", cut="required", params=params),
        Measure("precision", section, description=f"relevant {unit}s in the top k / k", cut="required", params=params),
        Measure("recall", section,
                description=f"relevant {unit}s in the top k / all relevant {unit}s", cut="required", params=params),
        Measure("mrr", section,
                description=f"1 / rank of the first relevant {unit} (within k when cut)", cut="optional", params=params),
        Measure("ndcg", section, description="normalised discounted cumulative gain (within k when cut)",
                cut="optional", params=(*params, "eval.gain")),
        Measure("map", section, description="mean average precision over the whole ranking", params=params),
    )


RANKING = _families("retrieval", _PARAMS, "chunk")
HIT, PRECISION, RECALL, MRR, NDCG, MAP = RANKING


def kernels(lv: np.ndarray, n_rel: np.ndarray, ideal: np.ndarray, *, gain: str,
            level: int) -> dict[str, Callable[[int | None], np.ndarray]]:
    """Each ranking family's kernel over ``(questions, depth)`` levels, by family name."""
    return {
        HIT.family: lambda k: hit_at_k(lv, n_relevant=n_rel, k=k, relevance_level=level),  # type: ignore[arg-type]
        PRECISION.family: lambda k: precision_at_k(lv, n_relevant=n_rel, k=k, relevance_level=level),  # type: ignore[arg-type]
        RECALL.family: lambda k: recall_at_k(lv, n_relevant=n_rel, k=k, relevance_level=level),  # type: ignore[arg-type]
        MRR.family: lambda k: reciprocal_rank(lv, n_relevant=n_rel, k=k, relevance_level=level),
        NDCG.family: lambda k: ndcg_at_k(lv, ideal, k=k, gain=gain),
        MAP.family: lambda k: average_precision(lv, n_relevant=n_rel, relevance_level=level),
    }


def ranking_measures(ks: Sequence[int], families: Sequence[Measure] = RANKING) -> list[Measure]:
    """The ranking measures of a cell with cutoffs ``ks``: every cut family at every k, then the
    uncut (family-major: ``hit@1, hit@3, precision@1, ...``)."""
    cut = [f.at(k) for f in families if f.cut != "none" for k in ks]
    return cut + [f for f in families if f.cut != "required"]


def ranking_columns(levels: Sequence[Any], n_relevant: Sequence[float], ideals: Sequence[list[int]],
                    answerable: np.ndarray, settings: Settings, families: Sequence[Measure]) -> dict[str, np.ndarray]:
    """Per-question values of ``families`` at ``settings.ks`` (NaN where undefined: an
    unanswerable question, or no relevant item), by the measures' columns."""
    depth = max((len(lv) for lv in levels), default=0)
    lv = level_matrix(levels, depth)
    nr = np.asarray(n_relevant, np.float64).reshape(len(levels))
    run = kernels(lv, nr, ideal_matrix(ideals), gain=settings.gain, level=settings.relevance_level)
    evaluated = answerable & (nr > 0)
    return {m.column: np.where(evaluated, run[m.family](m.cutoff), np.nan)
            for m in ranking_measures(sorted(set(settings.ks)), families)}


def answerable(run: SystemRun) -> np.ndarray:
    """Which questions of the run are answerable."""
    return np.array([q.question.answerable for q in run.questions], bool)


class ChunkRanking:
    """The scorer of :data:`RANKING`, and the cell's run.trec and qrels.trec."""

    name = "retrieval"
    requires: tuple[str, ...] = ()  # what every run has: its rankings and questions

    def measures(self, run: SystemRun, settings: Settings) -> list[Measure]:
        """The ranking measures at ``eval.ks`` (when the chunk unit is reported)."""
        return ranking_measures(sorted(set(settings.ks))) if settings.unit in ("chunk", "both") else []

    def score(self, scoring: ScoringInput) -> list[Part]:
        """The ranking measures' columns, and the two TREC files."""
        run, settings, grades = scoring.run, scoring.settings, scoring.grades
        columns = scoring.shared(self.name, (sorted(set(settings.ks)), settings.gain), lambda: ranking_columns(
            [g.levels for g in grades.questions], [g.n_relevant for g in grades.questions],
            [g.ideal for g in grades.questions], answerable(run), settings, RANKING))
        lines = scoring.shared("run_lines", (), lambda: run_lines(run, grades))
        return [Part("ranking_measures", columns, files={
            "run.trec": run_trec(lines, scoring.cell_id), "qrels.trec": qrels_trec(run, grades)},
            warnings=tuple(_warnings(run, grades, columns, settings)))]


def _warnings(run: SystemRun, grades: Grades, columns: dict[str, np.ndarray], settings: Settings) -> list[str]:
    """Retrieval that matched nothing for answerable questions (an unanswerable, off-topic question
    that matches nothing is retrieval working); measures averaged over no question."""
    out = []
    top = np.array([s[0] if len(s) else np.nan for s in grades.columns["scores"]], dtype=float)
    ok = answerable(run)
    zero = int(np.sum((top == 0) & ok))
    if zero:
        fix = ("check the passages the system returned for them" if run.index_name == "external" else
               "for BM25 (no question token is in the index), check retriever.language, or the questions' script "
               "and tokenizer")
        out.append(f"{zero} of {int(ok.sum())} answerable questions have a top retrieval score of 0: "
                   f"the retrieval matched nothing for them -- {fix}")
    first = HIT.at(1)
    if settings.unit in ("chunk", "both") and first.column in columns and np.isnan(columns[first.column]).all():
        out.append(f"{first.key} is averaged over 0 questions: no answerable question has a relevant chunk "
                   "-- check the evidence and eval.min_coverage")
    return out


def run_lines(run: SystemRun, grades: Grades) -> list[str]:
    """The lines of run.trec without their tag (cells with the same final rankings share them)."""
    ids, scores = grades.columns["chunk_ids"], grades.columns["scores"]
    return [f"{qr.qid} Q0 {cid} {rank} {score!r}" for i, qr in enumerate(run.questions)
            for rank, (cid, score) in enumerate(zip(ids[i], scores[i]), start=1)]


def run_trec(lines: Sequence[str], tag: str) -> str:
    """The cell's run in TREC format (chunk ids, strictly decreasing scores), tagged ``tag``."""
    end = f" {tag}\n"
    return end.join(lines) + end if lines else ""


def qrels_trec(run: SystemRun, grades: Grades) -> str:
    """The derived passage-level qrels in TREC format, each relevant passage at its grade, and each
    gold quote the parse lost as ``lost:<doc_id>:<n>`` (relevant, in no run: trec_eval counts it)."""
    lines = []
    for i, qr in enumerate(run.questions):
        lines += [f"{qr.qid} 0 {run.passages[j].chunk_id} {g}" for j, g in sorted(grades.questions[i].qrels.items())]
        lines += [f"{qr.qid} 0 lost:{x.doc_id}:{n} {g}"
                  for n, (x, g) in enumerate(zip(qr.question.lost, grades.questions[i].lost), start=1)]
    return "\n".join(lines) + ("\n" if lines else "")


SCORER = ChunkRanking()
