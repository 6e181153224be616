"""Answer matching (metrics.json ``generation``): the answer against the question's facts and
reference answers (containment, SQuAD v2 EM/F1 and its HasAns/NoAns splits), its length, its
lexical support by the passages it cites and whether it kept the JSON answer contract; with the
citation and abstention columns (:mod:`.citations`, :mod:`.abstention`) and the final failure
label, the per-question answer columns of a cell."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from rag_bench.evaluation.results import Answered, Generated, GenerationCounts
from rag_bench.evaluation.scorers import failure_labels
from rag_bench.evaluation.scorers.abstention import abstention_columns
from rag_bench.evaluation.scorers.citations import PRECISION, citation_columns
from rag_bench.evaluation.scorers.failure_labels import final_label
from rag_bench.metrics import measures
from rag_bench.metrics.generation import AnswerMatch, correctness, faithfulness, match_answer, squad_v2
from rag_bench.records import Answer, Question


def answer_columns(q: Question, a: Answer, passages: Sequence[Any], *, ok: bool, answer_match: str,
                   f1_threshold: float) -> dict[str, float]:
    """One question's ``generation`` measures, by their columns, in the registry's order."""
    nan = float("nan")
    match = match_answer(a, q.facts, q.answers) if ok and q.answerable else AnswerMatch(nan, nan, nan, nan, nan)
    # SQuAD v2 over all questions, and its HasAns/NoAns splits as their own columns (means over
    # the questions where each is defined, like every measure).
    sq_em, sq_f1 = squad_v2(a, q.answers, answerable=q.answerable) if ok else (nan, nan)
    has = (sq_em, sq_f1) if q.answerable else (nan, nan)
    no = (nan, nan) if q.answerable else (sq_em, sq_f1)
    value = {
        "correct": correctness(match, answer_match, f1_threshold=f1_threshold), "answer_recall": match.answer_recall,
        "exact_match": match.exact_match, "token_f1": match.token_f1, "squad_exact": sq_em, "squad_f1": sq_f1,
        "squad_hasans_exact": has[0], "squad_hasans_f1": has[1], "squad_noans_exact": no[0],
        "squad_noans_f1": no[1], "facts_present": match.facts_present, "answer_words": match.words,
        "faithfulness": faithfulness(a, passages) if ok and not a.parse_error else np.nan,
        "unparseable": float(a.parse_error is not None) if ok else np.nan,
    }
    return {m.column: value[m.family] for m in measures.GENERATION}


CORRECT = measures.family("generation", "correct")


def tokens_per_question(generations: Sequence[Any]) -> float | None:
    """Generator tokens (prompt + completion, a missing count as 0) per question, mean -- the float
    the mean of records.parquet's ``tokens_in + tokens_out`` gives (integer sums are exact), so
    metrics.json ``cost/generator_tokens`` and a cell read back from its records agree; None
    without questions.

    >>> from types import SimpleNamespace as G
    >>> tokens_per_question([G(tokens_in=10, tokens_out=3), G(tokens_in=None, tokens_out=2)])
    7.5
    """
    if not generations:
        return None
    return float(sum((g.tokens_in or 0) + (g.tokens_out or 0) for g in generations)) / len(generations)


def score_answers(*, answered: Answered, questions: Sequence[Question], retrieval_labels: Sequence[str | None],
                  min_coverage: float, answer_match: str = "auto", f1_threshold: float = 0.5) -> Generated:
    """Per question: what the system answered, the answer, citation and abstention measures, the
    generation's cost and the final failure label; and the stage's counts. ``answer_match``
    decides which answer-matching measure is ``correct``
    (:func:`~rag_bench.metrics.generation.correctness`)."""
    rows: list[dict[str, Any]] = []
    for q, it, a, g, label in zip(questions, answered.items, answered.answers, answered.generations,
                                  retrieval_labels):
        ok = a.error is None
        scores = answer_columns(q, a, it.passages, ok=ok, answer_match=answer_match, f1_threshold=f1_threshold)
        cites = citation_columns(a, it.passages, q.evidence, ok=ok, answerable=q.answerable, min_coverage=min_coverage)
        rows.append({
            "context_ids": [p.chunk_id for p in it.passages], "context_texts": [p.text for p in it.passages],
            "answer": a.text, "citations": list(a.citations),
            "refused": a.refused, "parse_error": a.parse_error, "generation_error": a.error, "raw_output": a.raw,
            **scores, **cites, **abstention_columns(a, ok=ok, answerable=q.answerable),
            "generate_s": g.seconds, "generation_cached": g.cached, "tokens_in": g.tokens_in,
            "tokens_out": g.tokens_out,
            failure_labels.COLUMN: final_label(q.answerable, label, a, scores[CORRECT.column], cites[PRECISION.column]),
        })
    gens, answers = answered.generations, answered.answers
    calls = [g for g in gens if not g.cached and g.attempts > 0]  # real model/endpoint calls
    counts = GenerationCounts(
        endpoint_calls=len(calls), endpoint_failures=sum(g.error is not None for g in calls),
        generations_cached=sum(g.cached for g in gens), unparseable=int(sum(a.parse_error is not None for a in answers)),
        retries=sum(max(0, g.attempts - 1) for g in calls), wall_s=answered.wall_s, questions=len(questions),
        tokens_per_question=tokens_per_question(gens))
    return Generated(pd.DataFrame(rows, index=range(len(rows))), counts)
