"""ragas LLM judge (Faithfulness, ResponseRelevancy) against any OpenAI-compatible endpoint.

Each (metric, question, answer, contexts) is judged once and cached (successes only). Every
failure is recorded per question with its reason and counted; when the failure rate exceeds
``max_failure_rate`` the cell fails instead of reporting scores computed on a biased subset.
ragas' own telemetry is off; its tiktoken-based paths (which download a file) are not used.
Needs ``pip install 'rag_bench[judge]'``.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from rag_bench.errors import ConfigError
from rag_bench.judging.base import JudgeResult, JudgeSample
from rag_bench.storage import BlobStore, default_cache_dir, get_or_compute

METRICS = ("faithfulness", "response_relevancy")


class JudgeCache(BlobStore):
    """Judge scores by (judge identity, metric, inputs)."""

    table = "judgements"


class _Embeddings:
    """ragas embedding interface over rag_bench's embedder (offline, cached)."""

    def __init__(self, embedder: Any) -> None:
        from ragas.embeddings.base import BaseRagasEmbedding

        class Adapter(BaseRagasEmbedding):  # type: ignore[misc]
            def embed_text(self, text: str, **kwargs: Any) -> list[float]:
                return embedder.embed_queries([text])[0].tolist()

            async def aembed_text(self, text: str, **kwargs: Any) -> list[float]:
                return self.embed_text(text)

            def embed_texts(self, texts: list[str], **kwargs: Any) -> list[list[float]]:
                return embedder.embed_queries(list(texts)).tolist()

            async def aembed_texts(self, texts: list[str], **kwargs: Any) -> list[list[float]]:
                return self.embed_texts(texts)

        self.adapter = Adapter()


class RagasJudge:
    """Parameters
    ----------
    base_url, model, api_key_env:
        The judge endpoint (key read from the named environment variable).
    metrics:
        Subset of ``faithfulness``, ``response_relevancy``.
    timeout_s, max_retries:
        Per call.
    max_failure_rate:
        Share of attempted judgements that may fail before the cell fails.
    embedder:
        Injected from the ``embedder`` group (response relevancy compares embeddings).
    """

    def __init__(self, base_url: str | None = None, model: str = "local", api_key_env: str = "OPENAI_API_KEY",
                 metrics: Sequence[str] = METRICS, timeout_s: float = 120.0, max_retries: int = 1,
                 max_failure_rate: float = 0.2, embedder: Any = None) -> None:
        if not base_url:
            raise ConfigError("judge.base_url is not set -- fix: judge.base_url=http://HOST:PORT/v1")
        bad = [m for m in metrics if m not in METRICS]
        if bad or not metrics:
            raise ConfigError(f"judge.metrics: unknown {bad} -- fix: a subset of {list(METRICS)}")
        if not (isinstance(max_failure_rate, (int, float)) and 0 <= max_failure_rate <= 1):
            raise ConfigError(f"judge.max_failure_rate must be in [0, 1], got {max_failure_rate!r}")
        self.base_url, self.model, self.api_key_env = base_url, model, api_key_env
        self.metrics, self.timeout_s, self.max_retries = tuple(metrics), float(timeout_s), int(max_retries)
        self.max_failure_rate, self.embedder = float(max_failure_rate), embedder
        self.identity: dict[str, Any] = {"judge": "ragas", "url": base_url, "model": model}

    def _scorers(self) -> dict[str, Any]:
        os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")
        try:
            from openai import AsyncOpenAI
            from ragas.llms import llm_factory
            from ragas.metrics.collections import AnswerRelevancy, Faithfulness
        except ImportError as exc:
            raise ConfigError("judge=ragas needs ragas -- fix: pip install 'rag_bench[judge]'") from exc
        client = AsyncOpenAI(base_url=self.base_url, api_key=os.environ.get(self.api_key_env) or "not-needed",
                             timeout=self.timeout_s, max_retries=self.max_retries)
        llm = llm_factory(self.model, client=client)
        out: dict[str, Any] = {}
        if "faithfulness" in self.metrics:
            out["faithfulness"] = Faithfulness(llm=llm)
        if "response_relevancy" in self.metrics:
            out["response_relevancy"] = AnswerRelevancy(llm=llm, embeddings=_Embeddings(self.embedder).adapter)
        return out

    def _key(self, metric: str, s: JudgeSample) -> str:
        blob = json.dumps([self.identity, metric, s.question, s.answer, list(s.contexts)], sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()

    def judge(self, samples: Sequence[JudgeSample | None], cache_dir: str | Path | None = None) -> list[JudgeResult]:
        """Judge each sample (None = nothing to judge, e.g. a refusal)."""
        cache = JudgeCache(Path(cache_dir or default_cache_dir()) / "judgements.sqlite")
        keys = {(i, m): self._key(m, s) for i, s in enumerate(samples) if s is not None for m in self.metrics}
        results = [JudgeResult() for _ in samples]
        first = {k: im for im, k in reversed(list(keys.items()))}  # who is judged for a repeated sample
        failures: dict[str, str] = {}

        def judge_all(todo: list[str]) -> Iterator[tuple[str, float | None]]:
            scorers = self._scorers()
            loop = asyncio.new_event_loop()  # one loop: the async client is bound to it
            try:
                for k in todo:  # sequential: small local judges serve one request at a time
                    i, m = first[k]
                    results[i].calls += 1
                    try:
                        yield k, loop.run_until_complete(self._score(scorers[m], m, samples[i]))
                    except Exception as exc:  # any judge failure is recorded with its reason, never raised
                        failures[k] = f"{type(exc).__name__}: {str(exc)[:300]}"
                        yield k, None
            finally:
                loop.close()

        got = get_or_compute(cache, list(keys.values()), compute=judge_all, encode=lambda v: json.dumps(v).encode(),
                             decode=json.loads, keep=lambda v: v is not None, each=True)
        for (i, m), k in keys.items():
            results[i].scores[m] = got.values.get(k)
            if k in failures:
                results[i].failures[m] = failures[k]
        return results

    @staticmethod
    async def _score(scorer: Any, metric: str, sample: JudgeSample | None) -> float:
        if sample is None:
            raise ValueError("nothing to judge")
        if metric == "faithfulness":
            res = await scorer.ascore(user_input=sample.question, response=sample.answer,
                                      retrieved_contexts=list(sample.contexts))
        else:
            res = await scorer.ascore(user_input=sample.question, response=sample.answer)
        value = float(res.value)
        if value != value:  # NaN: ragas could not score (e.g. no statements extracted)
            raise ValueError("judge returned no score (NaN)")
        return value
