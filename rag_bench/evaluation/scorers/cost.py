"""Cost (metrics.json ``cost``): what the run spent -- texts embedded (and served by the embedding
cache), answers served by the generation cache, generator tokens per question. The judge's cost is
the judge scorer's. Figures, each with its direction (a cache's hits depend on earlier runs:
descriptive).

With a price table (``prices.*``: :mod:`rag_bench.evaluation.prices`) the money too: dollars per
question, per correct answer and per 1,000 questions, and each stage's share per question (lower is
better). An unpriced model or local stage leaves its share and the totals out, with a warning
naming the config key to set, and metrics.json ``cost/unpriced`` (text) saying which: never 0. records.parquet
``usd`` holds each question's dollars (the report resamples the money axis from it).
"""

from __future__ import annotations

from typing import Any

from rag_bench.evaluation import prices as pricing
from rag_bench.evaluation.run import SystemRun
from rag_bench.evaluation.scorer import Measure, Part, ScoringInput, Settings, figures

EMBEDDING = figures("cost", (
    ("embedding_requests", False, "texts sent to the embedder, cache hits included"),
    ("embedding_cache_hits", None, "texts served by the embedding cache (depends on earlier runs)"),
    ("embeddings_computed", False, "texts the embedder encoded in this run"),
    ("embed_s", False, "seconds spent encoding"),
))
GENERATION = figures("cost", (
    ("generations_cached", None, "answers served by the generation cache (depends on earlier runs)"),
    ("generator_tokens", False, "generator tokens (prompt + completion) per question, mean; cached answers count "
     "their original tokens (the leaderboard's tie rule reads it)"),
))
MONEY = figures("cost", (
    ("usd_per_question", False, "US dollars per question: every priced share (generator, judge, embedder, reranker, "
     "retrieval compute) of the run over its questions; absent when any is unpriced"),
    ("usd_per_correct_answer", False, "US dollars per correct answer (generation/correct = 1): the run's dollars "
     "over its correct answers; absent when unpriced or none is correct"),
    ("usd_per_1k_queries", False, "US dollars per 1,000 questions (1000 x usd_per_question)"),
    *((f"usd_{share}", False, f"US dollars per question spent by the {share}"
       + (" (compute seconds at prices.usd_per_hour)" if share == "retrieval" else
          " transform (the generator's tokens or seconds it took, at the generator's price)" if share == "query"
          else "")) for share in pricing.SHARES),
))
USD_PER_QUESTION, USD_PER_CORRECT, USD_PER_1K = MONEY[:3]
SHARE = {share: m for share, m in zip(pricing.SHARES, MONEY[3:])}
UNPRICED = "unpriced"  # metrics.json cost/unpriced: what could not be priced and the keys to set (text)
USD_COLUMN = "usd"  # records.parquet: each question's dollars
REQUESTS, CACHE_HITS, COMPUTED, EMBED_S = EMBEDDING
GENERATIONS_CACHED, GENERATOR_TOKENS = GENERATION


def tokens_per_question(generations: list[Any]) -> float | None:
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


class Cost:
    """The scorer of the ``cost`` figures of embedding and generation."""

    name = "cost"
    requires: tuple[str, ...] = ()  # what every run has: its rankings and questions

    def measures(self, run: SystemRun, settings: Settings) -> list[Measure]:
        """Embedding cost always; generation's when the run answered; the money with a price table."""
        return [*EMBEDDING, *(GENERATION if run.answered else ()), *(MONEY if settings.prices is not None else ())]

    def score(self, scoring: ScoringInput) -> list[Part]:
        """The embedder's usage during the run; the generation cache's hits and the tokens per question."""
        run = scoring.run
        e = run.embedding
        values: dict[str, Any] = {REQUESTS.key: e.requested, CACHE_HITS.key: e.cache_hits, COMPUTED.key: e.encoded,
                                  EMBED_S.key: round(e.encode_s, 6)}
        if run.answered:
            gens = [q.generation for q in run.questions if q.generation is not None]
            values[GENERATIONS_CACHED.key] = sum(g.cached for g in gens)  # depends on the cache, not the config
            tokens = tokens_per_question(gens)
            if tokens is not None:
                values[GENERATOR_TOKENS.key] = tokens
        if scoring.settings.prices is None:
            return [Part("cost", values=values)]
        return [money(scoring, values)]


def money(scoring: ScoringInput, values: dict[str, Any]) -> Part:
    """The cost part with the money of the run under the cell's price table: the totals only when
    every share is priced, each priced share, the questions' dollars, the warning and the
    ``unpriced`` list otherwise."""
    run, table = scoring.run, scoring.settings.prices
    assert table is not None
    bill = pricing.bill(run, table)
    for share, usd in bill.shares.items():
        values[SHARE[share].key] = usd
    columns: dict[str, Any] = {}
    if bill.total is not None and run.questions:
        values[USD_PER_QUESTION.key] = bill.total / len(run.questions)
        values[USD_PER_1K.key] = 1000.0 * bill.total / len(run.questions)
        correct = scoring.columns.get("correct") if run.answered else None
        per_correct = pricing.per_correct(bill.total, correct)
        if per_correct is not None:
            values[USD_PER_CORRECT.key] = per_correct
        columns[USD_COLUMN] = list(bill.per_question or ())
    said = "; ".join(bill.unpriced)
    warnings: tuple[str, ...] = (f"cost: unpriced, so no $ per question -- {said} (docs/metrics.md, cost in money; "
                                 "conf/prices/example.yaml)",) if bill.unpriced else ()
    warnings += bill.notes
    return Part("cost", columns=columns, values=values, warnings=warnings,
                sections={"cost": {UNPRICED: said}} if bill.unpriced else {})


SCORER = Cost()
