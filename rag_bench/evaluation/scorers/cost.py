"""Cost (metrics.json ``cost``): what the run spent -- texts embedded (and served by the embedding
cache), answers served by the generation cache, generator tokens per question. The judge's cost is
the judge scorer's. Figures, each with its direction (a cache's hits depend on earlier runs:
descriptive)."""

from __future__ import annotations

from typing import Any

from rag_bench.evaluation.run import SystemRun
from rag_bench.evaluation.scorer import Context, Measure, Part, Settings, figures

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

    def measures(self, run: SystemRun, settings: Settings) -> list[Measure]:
        """Embedding cost always; generation's when the run answered."""
        return [*EMBEDDING, *(GENERATION if run.answered else ())]

    def score(self, context: Context) -> list[Part]:
        """The embedder's usage during the run; the generation cache's hits and the tokens per question."""
        run = context.run
        e = run.embedding
        values: dict[str, Any] = {REQUESTS.key: e.requested, CACHE_HITS.key: e.cache_hits, COMPUTED.key: e.encoded,
                                  EMBED_S.key: round(e.encode_s, 6)}
        if run.answered:
            gens = [q.generation for q in run.questions if q.generation is not None]
            values[GENERATIONS_CACHED.key] = sum(g.cached for g in gens)  # depends on the cache, not the config
            tokens = tokens_per_question(gens)
            if tokens is not None:
                values[GENERATOR_TOKENS.key] = tokens
        return [Part("cost", values=values)]


SCORER = Cost()
