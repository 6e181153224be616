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

from rag_bench.evaluation.grade import Grades
from rag_bench.evaluation.run import SystemRun
from rag_bench.evaluation.scorer import Part

LAYOUT = ("question", "ranking", "security", "document", "evidence", "label", "ranking_measures",
          "document_measures", "retrieved", "answers", "generation", "citation", "abstention", "generation_cost",
          "judge", "latency")


def run_parts(run: SystemRun, grades: Grades) -> list[Part]:
    """The run's own columns: the question, its final ranking judged, the first stage's ranking,
    what the generator was handed and answered and what that cost, and the stages' latencies."""
    questions = [qr.question for qr in run.questions]
    parts = [Part("question", {"qid": [q.qid for q in questions], "question": [q.question for q in questions],
                               "answerable": [q.answerable for q in questions], "tags": [list(q.tags) for q in questions],
                               "asker": [q.asker.label if q.asker else None for q in questions]}),
             Part("ranking", grades.columns),
             Part("retrieved", {"retrieved_ids": [[run.passages[i].chunk_id for i in qr.retrieved.indices]
                                                  for qr in run.questions]})]
    if run.answered:
        answers: dict[str, list[Any]] = {name: [] for name in (
            "context_ids", "context_texts", "answer", "citations", "refused", "parse_error", "generation_error",
            "raw_output")}
        cost: dict[str, list[Any]] = {name: [] for name in ("generate_s", "generation_cached", "tokens_in",
                                                              "tokens_out")}
        for qr in run.questions:
            a, g, context = qr.answer, qr.generation, qr.context or ()
            assert a is not None and g is not None
            row: tuple[tuple[str, Any], ...] = (
                ("context_ids", [p.chunk_id for p in context]), ("context_texts", [p.text for p in context]),
                ("answer", a.text), ("citations", list(a.citations)), ("refused", a.refused),
                ("parse_error", a.parse_error), ("generation_error", a.error), ("raw_output", a.raw))
            for name, value in row:
                answers[name].append(value)
            spent: tuple[tuple[str, Any], ...] = (("generate_s", g.seconds), ("generation_cached", g.cached),
                                                  ("tokens_in", g.tokens_in), ("tokens_out", g.tokens_out))
            for name, value in spent:
                cost[name].append(value)
        parts += [Part("answers", answers), Part("generation_cost", cost)]
    latency: dict[str, list[Any]] = {"retrieve_ms": [qr.retrieve_ms for qr in run.questions]}
    if any(qr.rerank_ms is not None for qr in run.questions):
        latency["rerank_ms"] = [qr.rerank_ms for qr in run.questions]
    parts.append(Part("latency", latency))
    return parts


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
