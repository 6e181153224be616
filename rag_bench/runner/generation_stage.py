"""The generation half of a cell: contexts, prompts, (cached) generation, answer metrics,
failure labels from the full attribution order, and the hit-vs-correct table."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from rag_bench.generation.answer import parse_answer
from rag_bench.generation.base import GenerationInput, generate_cached
from rag_bench.generation.context import build_context
from rag_bench.generation.prompt import build_prompt
from rag_bench.metrics.generation import citation_precision, citation_recall, faithfulness, is_correct
from rag_bench.records import Answer, Chunk, Question, Ranking
from rag_bench.stats.threshold import auroc, best_f1_threshold

# Attribution order (ARCHITECTURE §4); "error" = the generator call failed (counted, reported,
# kept out of quality denominators).
ANSWERABLE_LABELS = ("chunking", "retrieval_miss", "ranking", "error", "false_refusal", "generation",
                     "citation", "correct")
UNANSWERABLE_LABELS = ("error", "correct_refusal", "hallucinated_answer")
GENERATION_COLUMNS = {"generation": ["correct", "faithfulness", "unparseable"],
                      "citation": ["citation_precision", "citation_recall", "invalid_citations"],
                      "abstention": ["correct_refusal_rate", "unsupported_answer_rate", "false_refusal_rate"]}


def run_generation(*, generator: Any, questions: Sequence[Question], rankings: Sequence[Ranking],
                   searchable: Sequence[Chunk], parents: Mapping[str, Chunk], k: int, expand_parents: bool,
                   token_budget: int, min_coverage: float, frame: pd.DataFrame) -> dict[str, Any]:
    """Add answer columns and final failure labels to ``frame``; return counts and timings."""
    items = []
    for q, r in zip(questions, rankings):
        passages = build_context([searchable[i] for i in r.indices], k=k, parents=parents,
                                 expand_parents=expand_parents, token_budget=token_budget)
        items.append(GenerationInput(q.question, tuple(passages), build_prompt(q.question, passages)))
    t0 = time.perf_counter()
    gens = generate_cached(generator, items)
    wall = time.perf_counter() - t0
    answers = [Answer("", error=g.error, raw=g.raw) if g.error else parse_answer(g.raw, len(it.passages))
               for g, it in zip(gens, items)]
    rows: list[dict[str, Any]] = []
    for q, it, a, g, label in zip(questions, items, answers, gens, frame["failure"]):
        ok = a.error is None
        right = is_correct(a, q.facts, q.answers) if ok else False
        cp = citation_precision(a, it.passages, q.evidence, min_coverage=min_coverage) if ok else np.nan
        row = {
            "context_ids": [p.chunk_id for p in it.passages], "context_texts": [p.text for p in it.passages],
            "answer": a.text, "citations": list(a.citations),
            "refused": a.refused, "parse_error": a.parse_error, "generation_error": a.error, "raw_output": a.raw,
            "correct": float(right) if ok and q.answerable else np.nan,
            "faithfulness": faithfulness(a, it.passages) if ok and not a.parse_error else np.nan,
            "unparseable": float(a.parse_error is not None) if ok else np.nan,
            "citation_precision": cp,
            "citation_recall": citation_recall(a, it.passages, q.evidence, min_coverage=min_coverage)
            if ok and q.answerable else np.nan,
            "invalid_citations": float(a.invalid_citations) if ok else np.nan,
            "correct_refusal_rate": float(a.refused) if ok and not q.answerable else np.nan,
            "unsupported_answer_rate": float(not a.refused) if ok and not q.answerable else np.nan,
            "false_refusal_rate": float(a.refused) if ok and q.answerable else np.nan,
            "generate_s": g.seconds, "generation_cached": g.cached, "tokens_in": g.tokens_in,
            "tokens_out": g.tokens_out,
        }
        row["failure"] = final_label(q.answerable, label, a, right, cp)
        rows.append(row)
    for col in rows[0] if rows else []:
        frame[col] = [r[col] for r in rows]
    calls = [g for g in gens if not g.cached and g.attempts > 0]  # real model/endpoint calls
    return {"endpoint_calls": len(calls), "endpoint_failures": sum(g.error is not None for g in calls),
            "generations_cached": sum(g.cached for g in gens),
            "unparseable": int(sum(a.parse_error is not None for a in answers)), "generate_wall_s": wall,
            "seconds_per_question": wall / max(1, len(questions)),
            "retries": sum(max(0, g.attempts - 1) for g in calls)}


def final_label(answerable: bool, retrieval_label: str | None, answer: Answer, correct: bool,
                cite_precision: float) -> str:
    """First label that applies, in ARCHITECTURE §4 order (plus ``error`` for failed calls)."""
    if not answerable:
        if answer.error:
            return "error"
        return "correct_refusal" if answer.refused else "hallucinated_answer"
    if retrieval_label in ("chunking", "retrieval_miss", "ranking"):
        return retrieval_label
    if answer.error:
        return "error"
    if answer.refused:
        return "false_refusal"
    if not correct:
        return "generation"
    if not answer.citations or not cite_precision > 0:
        return "citation"  # right answer, but no cited passage holds the evidence
    return "correct"


def conditional_table(frame: pd.DataFrame, k: int) -> dict[str, Any]:
    """"Answer correct when retrieval hit vs miss" (hit = a relevant chunk in the top k), with denominators."""
    ans = frame[frame["answerable"] & frame["correct"].notna()]
    hit = ans["first_relevant_rank"].fillna(np.inf) <= k
    out = {}
    for name, part in (("hit", ans[hit]), ("miss", ans[~hit])):
        n = int(len(part))
        c = int(part["correct"].sum())
        out[name] = {"n": n, "correct": c, "rate": c / n if n else None}
    return {"k": k, **out}


def threshold_analysis(frame: pd.DataFrame) -> dict[str, float | None]:
    """Can the top-1 retrieval score alone separate answerable from unanswerable questions?"""
    top = np.array([s[0] if len(s) else np.nan for s in frame["scores"]], dtype=float)
    y = frame["answerable"].to_numpy(bool)
    keep = ~np.isnan(top)
    a = auroc(top[keep], y[keep])
    t, f1 = best_f1_threshold(top[keep], y[keep])
    clean = {"top1_auroc": a, "top1_best_f1_threshold": t, "top1_best_f1": f1}
    return {k: (None if v is None or np.isnan(v) else float(v)) for k, v in clean.items()}


def run_judge(*, judge: Any, questions: Sequence[Question], frame: pd.DataFrame) -> dict[str, Any]:
    """Judge every answered question (refusals, failed calls and unparseable outputs are not
    judged); add ``judge_<metric>`` and ``judge_failures`` columns; return counts."""
    from rag_bench.judging.ragas_judge import JudgeSample

    samples = []
    for q, row in zip(questions, frame.itertuples(index=False)):
        answered = (pd.isna(row.generation_error) and pd.isna(row.parse_error) and not row.refused
                    and bool(row.answer))
        samples.append(JudgeSample(q.question, row.answer, tuple(row.context_texts)) if answered else None)
    results = judge.judge(samples)
    for m in judge.metrics:
        frame[f"judge_{m}"] = [r.scores.get(m, np.nan) if r.scores.get(m) is not None else np.nan for r in results]
    frame["judge_failures"] = [json.dumps(r.failures) if r.failures else None for r in results]
    attempted = sum(len(r.scores) for r in results)
    failed = sum(len(r.failures) for r in results)
    return {"judge_attempted": attempted, "judge_failures": failed, "judge_calls": sum(r.calls for r in results)}
