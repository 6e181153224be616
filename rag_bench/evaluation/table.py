"""records.parquet: one row per question -- what the run did (its question, rankings, context,
answer, cost, latencies) beside what the scorers measured -- in the documented column order.

The run's own columns come from here (:func:`run_parts`); each scorer's from its :class:`Part`.
Columns are grouped by slot in :data:`LAYOUT` (docs/contract.md §5); a scorer with a slot of its
own (a plugin's) comes after them, in the order the scorers ran.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from rag_bench.domain import Answer, Question
from rag_bench.evaluation.grade import Grades
from rag_bench.evaluation.run import SystemRun
from rag_bench.evaluation.scorer import Part
from rag_bench.generation.base import Generation

LAYOUT = ("question", "ranking", "security", "document", "evidence", "label", "ranking_measures",
          "document_measures", "retrieved", "answers", "generation", "citation", "claims", "abstention", "answer", "clarify",
          "generation_cost",
          "judge", "latency")


def run_parts(run: SystemRun, grades: Grades) -> list[Part]:
    """The run's own columns: the question, its final ranking judged, the first stage's ranking,
    what the generator was handed and answered and what that cost, and the stages' latencies."""
    parts = [_question_part([qr.question for qr in run.questions]),
             Part("ranking", grades.columns),
             Part("retrieved", {"retrieved_ids": [[run.passages[i].chunk_id for i in qr.retrieved.indices]
                                                  for qr in run.questions]})]
    if run.answered:
        parts += _answer_parts(run)
    parts.append(_latency_part(run))
    return parts


def _question_part(questions: Sequence[Question]) -> Part:
    """``question``: each question's id, text, answerability, expected outcome, tags, asker and history."""
    return Part("question", {"qid": [q.qid for q in questions], "question": [q.question for q in questions],
                             "answerable": [q.answerable for q in questions],
                             "expects": [q.outcome for q in questions], "tags": [list(q.tags) for q in questions],
                             "asker": [q.asker.label if q.asker else None for q in questions],
                             **history_column(questions)})


def _answer_parts(run: SystemRun) -> list[Part]:
    """``answers`` (what the generator was handed and what it answered) and ``generation_cost``."""
    answers = [q.answer for q in run.questions]
    gens = [q.generation for q in run.questions]
    assert all(a is not None for a in answers) and all(g is not None for g in gens)
    return [_answers_part(run, [a for a in answers if a is not None]),
            _cost_part([g for g in gens if g is not None])]


def _answers_part(run: SystemRun, a_: Sequence[Answer]) -> Part:
    """``answers``: each question's context (chunk ids and texts) and its parsed answer."""
    qs = run.questions
    return Part("answers", {
        "context_ids": [[p.chunk_id for p in q.context or ()] for q in qs],
        "context_texts": [[p.text for p in q.context or ()] for q in qs],
        "answer": [a.text for a in a_], "citations": [list(a.citations) for a in a_],
        "refused": [a.refused for a in a_], "clarification": [a.clarification for a in a_],
        "parse_error": [a.parse_error for a in a_],
        "generation_error": [a.error for a in a_], "raw_output": [a.raw for a in a_]})


def _cost_part(g_: Sequence[Generation]) -> Part:
    """``generation_cost``: each question's generation time, cache hit and tokens."""
    return Part("generation_cost", {"generate_s": [g.seconds for g in g_], "generation_cached": [g.cached for g in g_],
                                    "tokens_in": [g.tokens_in for g in g_], "tokens_out": [g.tokens_out for g in g_]})


def _latency_part(run: SystemRun) -> Part:
    """``latency``: retrieval's time per question, reranking's when it ran, the judge's when there is one."""
    latency: dict[str, list[Any]] = {"retrieve_ms": [qr.retrieve_ms for qr in run.questions]}
    if any(qr.rerank_ms is not None for qr in run.questions):
        latency["rerank_ms"] = [qr.rerank_ms for qr in run.questions]
    if run.judge is not None:  # the judge's own time per question, apart from the asker's wait (latency.judge_ms)
        latency["judge_ms"] = [1000.0 * qr.judge.seconds if qr.judge is not None and qr.judge.calls > 0 else None
                               for qr in run.questions]
    return Part("latency", latency)


def history_column(questions: Sequence[Question]) -> dict[str, list[Any]]:
    """``history``: each question's earlier turns (``[{"role", "content"}]``, oldest first, every
    turn, not the prompt's window), when the dataset has a conversation question; none otherwise
    (single-turn cells keep their columns)."""
    if not any(q.history for q in questions):
        return {}
    return {"history": [[{"role": t.role, "content": t.content} for t in q.history] for q in questions]}


def records(parts: Sequence[Part], n: int) -> pd.DataFrame:
    """The records frame of ``n`` questions: every part's columns, slot by slot (:data:`LAYOUT`, then
    other slots in order), each part's columns in its own order; a column given again replaces the
    earlier one in its place."""
    order = {slot: i for i, slot in enumerate(LAYOUT)}
    ranked = sorted(range(len(parts)), key=lambda i: (order.get(parts[i].slot, len(order) + i), i))
    columns: dict[str, Any] = {}
    for i in ranked:
        columns.update(parts[i].columns)
    return pd.DataFrame(columns, index=pd.RangeIndex(n))
