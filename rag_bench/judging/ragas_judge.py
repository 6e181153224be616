"""ragas LLM judge against any OpenAI-compatible endpoint: every ragas collection metric that
needs only that endpoint (and our offline embedder), selected with ``judge.metrics=[...]``.

Each (metric, question, answer, contexts, reference) is judged ``samples`` times, each sample an
independent call with its own seed (``seed + sample index``), each cached under its index
(successes only), so a re-run reuses them and raising ``samples`` computes only the new ones; a
metric that compares embeddings is keyed by the embedder's identity as well. The item's score is
the mean of the samples that succeeded; every sample is kept for the two-level bootstrap.
Every failure is recorded per question with its reason and counted; when the failure rate
exceeds ``max_failure_rate`` the cell fails instead of reporting scores computed on a biased
subset. A metric that needs a reference is not attempted for a question without one (it is not
a failure). ``concurrency`` bounds the judge calls in flight (a pool: a call starts as soon as one
ends). Tokens (the endpoint's ``usage``) and seconds are counted per item. Each request carries the metric's
output schema (``response_format``), so a server that decodes to it (llama.cpp's) returns a
judgement that parses instead of free JSON that fails validation. ragas' own telemetry is off;
its tiktoken-based paths (which download a file) are not used. Needs ``pip install 'rag-bench-harness[judge]'``.

``claim_faithfulness`` (ours, :mod:`rag_bench.judging.claim_judge`) runs on the same path: its
jobs are one per claim (and sample), each call cached and accounted like a ragas metric's; the
sample's value is the share of claims supported and fails when one of its calls does.
"""

from __future__ import annotations

import asyncio
import contextvars
import hashlib
import json
import os
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag_bench import budget
from rag_bench.errors import ConfigError
from rag_bench.http import MAX_REPLY_BYTES, check_settings, check_url, is_json_int
from rag_bench.judging.base import JudgeResult, JudgeSample
from rag_bench.judging.claim_judge import ClaimCall, claim_calls, judge_claim
from rag_bench.judging.claim_judge import prompt as claim_prompt
from rag_bench.redaction import redact, remember
from rag_bench.storage import BlobStore, default_cache_dir, get_or_compute


@dataclass(frozen=True)
class RagasMetric:
    """One ragas collection metric: its class, the sample fields its ``ascore`` takes, whether it
    compares embeddings, and the range of its score."""

    cls: str
    inputs: tuple[str, ...]
    embeddings: bool = False
    # ragas computes scores from the judge's verdicts and ratings without checking them: a model
    # that answers verdict 10**15 where the prompt asks for 0/1 gets context precision 10**15.
    # Cosine-based scores (embeddings) can be negative.
    bounds: tuple[float, float] = (0.0, 1.0)
    # Judged one call per claim of the answer (rag_bench.judging.claim_judge), not by a ragas class.
    per_claim: bool = False

    @property
    def needs_reference(self) -> bool:
        """Whether the question must have a reference answer (or facts)."""
        return "reference" in self.inputs


# Our name -> ragas.metrics.collections class (ragas 0.4.3). Fields: user_input = the question,
# response = the answer, retrieved_contexts = the passages handed to the generator, reference =
# the question's first reference answer, else its facts joined.
RAGAS_METRICS = {
    "faithfulness": RagasMetric("Faithfulness", ("user_input", "response", "retrieved_contexts")),
    "response_relevancy": RagasMetric("AnswerRelevancy", ("user_input", "response"), embeddings=True,
                                      bounds=(-1.0, 1.0)),
    "context_precision": RagasMetric("ContextPrecision", ("user_input", "reference", "retrieved_contexts")),
    "context_precision_without_reference": RagasMetric("ContextPrecisionWithoutReference",
                                                       ("user_input", "response", "retrieved_contexts")),
    "context_recall": RagasMetric("ContextRecall", ("user_input", "retrieved_contexts", "reference")),
    "context_entity_recall": RagasMetric("ContextEntityRecall", ("reference", "retrieved_contexts")),
    "context_relevance": RagasMetric("ContextRelevance", ("user_input", "retrieved_contexts")),
    "response_groundedness": RagasMetric("ResponseGroundedness", ("response", "retrieved_contexts")),
    "factual_correctness": RagasMetric("FactualCorrectness", ("response", "reference")),
    "answer_correctness": RagasMetric("AnswerCorrectness", ("user_input", "response", "reference"), embeddings=True,
                                      bounds=(-1.0, 1.0)),
    "answer_accuracy": RagasMetric("AnswerAccuracy", ("user_input", "response", "reference")),
    "noise_sensitivity": RagasMetric("NoiseSensitivity", ("user_input", "response", "reference", "retrieved_contexts")),
}
# Ours, on the same endpoint and code path: one call per claim (rag_bench.judging.claim_judge).
CLAIM_METRICS = {
    "claim_faithfulness": RagasMetric("ClaimFaithfulness", ("response", "retrieved_contexts"), per_claim=True),
}
JUDGE_METRICS = {**RAGAS_METRICS, **CLAIM_METRICS}  # every name judge.metrics accepts
# The LLM calls one judgement makes, where ragas 0.4.3's code states it (search.max_llm_calls counts
# them before the batch): Faithfulness asks for the answer's statements, then verdicts on them (one
# call when there is no statement); AnswerRelevancy generates `strictness` questions (3, ragas' default,
# which we keep), one call each; a claim of claim_faithfulness is one call. The other metrics' calls
# depend on their inputs (ContextPrecision: one per context...) and are counted after the batch.
CALLS_PER_JUDGEMENT = {"faithfulness": 2, "response_relevancy": 3, "claim_faithfulness": 1}
METRICS = ("faithfulness", "response_relevancy")  # the default selection
RESPONSE_FORMATS = ("json_object", "json")


# A job: (item, metric, sample index, claim index); WHOLE for a metric judged on the whole item.
Job = tuple[int, str, int, int]
WHOLE = -1


def _shown(sample: JudgeSample, call: ClaimCall) -> list[str]:
    """The passages the judge reads for one claim (its cited ones, else all)."""
    return [sample.contexts[n - 1] for n in call.shown]


def _verdict(value: Any) -> int | None:
    return None if value is None else int(value)


def _fields(sample: JudgeSample) -> dict[str, Any]:
    return {"user_input": sample.user_input, "response": sample.answer, "retrieved_contexts": list(sample.contexts),
            "reference": sample.reference}


# The usage counter of the judge call running in this asyncio task (set per task, read by the hook).
_USAGE: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar("judge_usage", default=None)


async def _count_usage(response: Any) -> None:
    """httpx response hook: add an OpenAI-style completion's ``usage`` to the current call's counter."""
    usage = _USAGE.get()
    if usage is None or response.status_code != 200:
        return
    await response.aread()
    try:
        got = json.loads(response.content).get("usage") or {}
        counts: list[Any] = [got.get("prompt_tokens"), got.get("completion_tokens")]
    except (ValueError, TypeError, AttributeError):
        return  # not a completion (or no usage reported): nothing to count
    # Only counts: Infinity, 1.9, true or "12" are the endpoint's garbage, not tokens.
    usage["tokens_in"] += counts[0] if is_json_int(counts[0]) and counts[0] > 0 else 0
    usage["tokens_out"] += counts[1] if is_json_int(counts[1]) and counts[1] > 0 else 0


def _count_calls(llm: Any) -> None:
    """Count each of ``llm``'s calls (what ragas and the claim judge ask it: one completion, its
    re-asks and retries not apart, as a generator call's) in the current judge job's counter."""
    inner = llm.agenerate

    async def agenerate(*args: Any, **kwargs: Any) -> Any:
        usage = _USAGE.get()
        if usage is not None:
            usage["calls"] += 1
        return await inner(*args, **kwargs)

    llm.agenerate = agenerate


def _deadline_transport(seconds: float) -> Any:
    """An httpx transport whose every request -- the reply's last byte included -- ends within
    ``seconds`` (httpx's timeout bounds each read: a reply sent a byte at a time never trips it)
    or fails with httpx's ReadTimeout, which the OpenAI client retries; a reply larger than
    :data:`~rag_bench.http.MAX_REPLY_BYTES` fails too."""
    import httpx

    class DeadlineTransport(httpx.AsyncHTTPTransport):
        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            async def whole() -> httpx.Response:
                response = await super(DeadlineTransport, self).handle_async_request(request)
                parts, size = [], 0
                try:
                    async for chunk in response.stream:  # type: ignore[union-attr]
                        size += len(chunk)
                        if size > MAX_REPLY_BYTES:
                            raise httpx.DecodingError(f"the reply is larger than {MAX_REPLY_BYTES >> 20} MiB",
                                                      request=request)
                        parts.append(chunk)
                finally:
                    await response.aclose()
                return httpx.Response(response.status_code, headers=response.headers,
                                      stream=httpx.ByteStream(b"".join(parts)), extensions=response.extensions)

            try:
                return await asyncio.wait_for(whole(), seconds)
            except asyncio.TimeoutError:
                raise httpx.ReadTimeout(f"timed out: no complete reply within judge.timeout_s={seconds:g} s (the "
                                        "deadline of the whole request)", request=request) from None

    return DeadlineTransport()


def embedder_identity(embedder: Any) -> str:
    """What names an embedder in a judge cache key: its ``identity`` (model and weights), else its
    class with its own configuration (public attributes of plain values), so two embedders of one
    class configured differently never share a judgement."""
    ident = getattr(embedder, "identity", None)
    if ident is not None:
        return str(ident)
    cls = type(embedder)
    own = {k: v for k, v in sorted(vars(embedder).items()) if not k.startswith("_")
           and isinstance(v, (str, int, float, bool, type(None), tuple, list))} if hasattr(embedder, "__dict__") else {}
    return f"{cls.__module__}.{cls.__qualname__}{json.dumps(own, sort_keys=True, default=str)}"


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
        Names in :data:`RAGAS_METRICS` (default ``faithfulness``, ``response_relevancy``).
    timeout_s, max_retries:
        Per judge call: ``timeout_s`` bounds each request whole (the reply's last byte included); a
        request that times out, cannot connect or gets 429/5xx is retried up to
        ``max_retries`` times, and so is a completion that does not fit the metric's output schema
        (re-asked with the validation error).
    concurrency:
        Judge calls in flight at once (1 suits a small local server).
    response_format:
        ``json_object`` (default): ``{"type": "json_object", "schema": <the metric's output
        schema>}``, as the generator sends it; llama.cpp's server turns the schema into a grammar.
        ``json``: ``{"type": "json_object"}`` with the schema in the prompt only (ragas' own
        choice), for an endpoint that rejects a schema there.
    max_tokens:
        Cap on each judge completion (a small model can otherwise ramble to its context limit).
    max_failure_rate:
        Share of attempted judgements that may fail before the cell fails.
    samples:
        Independent judge calls per item (each with seed ``seed + index``); the item's score is
        their mean and the cell's interval resamples them (two-level bootstrap).
    seed, temperature:
        The first sample's seed; the sampling temperature (None: ragas' default, 0.01 -- samples
        then differ only as much as the endpoint's seeded sampling lets them).
    embedder:
        Injected from the ``embedder`` group (response relevancy compares embeddings).
    """

    def __init__(self, base_url: str | None = None, model: str = "local", api_key_env: str = "OPENAI_API_KEY",
                 metrics: Sequence[str] = METRICS, timeout_s: float = 120.0, max_retries: int = 1,
                 max_failure_rate: float = 0.2, concurrency: int = 1, max_tokens: int = 1024,
                 response_format: str = "json_object", samples: int = 1, seed: int = 0,
                 temperature: float | None = None, embedder: Any = None) -> None:
        check_url("judge", base_url)
        bad = [m for m in metrics if m not in JUDGE_METRICS]
        if bad or not metrics:
            raise ConfigError(f"judge.metrics: unknown {bad} -- fix: a subset of {sorted(JUDGE_METRICS)}")
        if isinstance(concurrency, bool) or not isinstance(concurrency, int) or not 1 <= concurrency <= 64:
            raise ConfigError(f"judge.concurrency must be an integer in [1, 64], got {concurrency!r}")
        self.concurrency = concurrency
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 16:
            raise ConfigError(f"judge.max_tokens must be an integer >= 16, got {max_tokens!r}")
        self.max_tokens = max_tokens
        if response_format not in RESPONSE_FORMATS:
            raise ConfigError(f"judge.response_format must be one of {', '.join(RESPONSE_FORMATS)}, got "
                              f"{response_format!r}")
        self.response_format = response_format
        if isinstance(samples, bool) or not isinstance(samples, int) or not 1 <= samples <= 100:
            raise ConfigError(f"judge.samples must be an integer in [1, 100], got {samples!r} -- fix: judge.samples=3")
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise ConfigError(f"judge.seed must be an integer, got {seed!r}")
        if temperature is not None and (isinstance(temperature, bool) or not isinstance(temperature, (int, float))
                                        or not 0 <= temperature <= 2):
            raise ConfigError(f"judge.temperature must be null or in [0, 2], got {temperature!r}")
        self.samples, self.seed = samples, seed
        self.temperature = None if temperature is None else float(temperature)
        timeout_s, max_retries, _ = check_settings("judge", timeout_s=timeout_s, max_retries=max_retries)
        if not (isinstance(max_failure_rate, (int, float)) and 0 <= max_failure_rate <= 1):
            raise ConfigError(f"judge.max_failure_rate must be in [0, 1], got {max_failure_rate!r}")
        self.base_url, self.model, self.api_key_env = base_url, model, api_key_env
        self.metrics, self.timeout_s, self.max_retries = tuple(metrics), float(timeout_s), int(max_retries)
        self.max_failure_rate, self.embedder = float(max_failure_rate), embedder
        self.identity: dict[str, Any] = {"judge": "ragas", "url": base_url, "model": model, "max_tokens": max_tokens,
                                         "response_format": response_format}
        # Keys of judgements made before these settings existed stay valid for their defaults.
        if seed:
            self.identity["seed"] = seed
        if self.temperature is not None:
            self.identity["temperature"] = self.temperature

    def _scorers(self, sample: int = 0) -> dict[str, Any]:
        os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")
        try:
            import instructor
            import ragas.metrics.collections as collections
            from openai import AsyncOpenAI
            from ragas.llms import InstructorLLM
        except ImportError as exc:
            raise ConfigError("judge=ragas needs ragas -- fix: pip install 'rag-bench-harness[judge]'") from exc
        import httpx

        key = os.environ.get(self.api_key_env)
        remember(key)  # a failure's reason (an echoed request) is stored
        # No redirect is followed (the key stays with judge.base_url's host), and timeout_s bounds a
        # whole request, not each read.
        client = AsyncOpenAI(base_url=self.base_url, api_key=key or "not-needed", timeout=self.timeout_s,
                             max_retries=self.max_retries,
                             http_client=httpx.AsyncClient(timeout=self.timeout_s, follow_redirects=False,
                                                           transport=_deadline_transport(self.timeout_s),
                                                           event_hooks={"response": [_count_usage]}))
        # What ragas' llm_factory builds for an OpenAI client, but with our mode: it picks JSON (the
        # schema only in the prompt), and a small model under a free JSON grammar rarely fits it.
        mode = {"json_object": instructor.Mode.JSON_SCHEMA, "json": instructor.Mode.JSON}[self.response_format]
        # max_retries goes to instructor's create(), which counts attempts; its default (3) re-asked
        # every invalid completion twice whatever judge.max_retries said.
        extra: dict[str, Any] = {"seed": self.seed + sample}
        if self.temperature is not None:
            extra["temperature"] = self.temperature
        llm = InstructorLLM(client=instructor.from_openai(client, mode=mode), model=self.model, provider="openai",
                            max_tokens=self.max_tokens, max_retries=1 + self.max_retries, **extra)
        _count_calls(llm)
        out: dict[str, Any] = {}
        for name in self.metrics:
            spec = JUDGE_METRICS[name]
            if spec.per_claim:
                out[name] = llm  # claim_judge.judge_claim asks it directly, one call per claim
                continue
            kwargs: dict[str, Any] = {"llm": llm}
            if spec.embeddings:
                kwargs["embeddings"] = _Embeddings(self.embedder).adapter
            out[name] = getattr(collections, spec.cls)(**kwargs)
        return out

    def _key(self, metric: str, s: JudgeSample, sample: int = 0) -> str:
        """The cache key of one judgement: judge identity, metric, the item, the embedder's identity
        (metrics that compare embeddings) and the sample index (sample 0 keeps the key judgements
        had before samples existed)."""
        parts: list[Any] = [self.identity, metric, s.user_input, s.answer, list(s.contexts), s.reference]
        if JUDGE_METRICS[metric].embeddings and self.embedder is not None:
            # A score that compares embeddings depends on the embedder too (other metrics keep their keys).
            parts.append({"embedder": embedder_identity(self.embedder)})
        if sample:
            parts.append({"sample": sample})
        return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()

    def _claim_key(self, metric: str, claim: str, passages: Sequence[str], sample: int = 0) -> str:
        """The cache key of one claim's judgement: judge identity, metric, the request's prompt
        (instruction, the passages shown, the claim; not the question or the rest of the answer: the
        call reads neither, and a changed instruction is a new judgement) and the sample index; the
        same claim on the same passages is one judgement wherever it occurs."""
        parts: list[Any] = [self.identity, metric, {"prompt": claim_prompt(claim, passages)}]
        if sample:
            parts.append({"sample": sample})
        return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()

    def judge(self, samples: Sequence[JudgeSample | None], cache_dir: str | Path | None = None) -> list[JudgeResult]:
        """Judge each sample (None = nothing to judge, e.g. a refusal) on every applicable metric,
        ``self.samples`` times each. A job is ``(item, metric, sample index, claim)``: claim
        :data:`WHOLE` for a ragas metric (one judgement of the item), else the index of the claim in
        :func:`~rag_bench.judging.claim_judge.claim_calls` (one call each; the sample's value is the
        share of claims supported, and fails when one of its calls does)."""
        cache = JudgeCache(Path(cache_dir or default_cache_dir()) / "judgements.sqlite")
        calls = {i: claim_calls(s.answer, len(s.contexts), s.citations) for i, s in enumerate(samples) if s is not None} \
            if any(JUDGE_METRICS[m].per_claim for m in self.metrics) else {}
        keys = self._job_keys(samples, calls)
        results = [JudgeResult() for _ in samples]
        first = {k: job for job, k in reversed(list(keys.items()))}  # who is judged for a repeated sample
        failures: dict[str, str] = {}

        def judge_all(todo: list[str]) -> Iterator[tuple[str, float | None]]:
            return self._judge_all(samples, calls, todo, first, results, failures)

        got = get_or_compute(cache, list(keys.values()), compute=judge_all, encode=lambda v: json.dumps(v).encode(),
                             decode=json.loads, keep=lambda v: v is not None, each=True)
        self._record_samples(keys, got.values, failures, results)
        self._record_claims(calls, keys, got.values, results)
        for r in results:
            for m, values in r.samples.items():
                ok = [v for v in values if v is not None]
                r.scores[m] = sum(ok) / len(ok) if ok else None
        return results

    def _job_keys(self, samples: Sequence[JudgeSample | None], calls: dict[int, tuple[ClaimCall, ...]]) \
            -> dict[Job, str]:
        """Each job's cache key: every sample on every metric it applies to (a metric that needs a
        reference skips a sample without one), ``self.samples`` times, per claim for a per-claim metric."""
        keys: dict[Job, str] = {}
        for i, s in enumerate(samples):
            if s is None:
                continue
            for m in self.metrics:
                spec = JUDGE_METRICS[m]
                if spec.needs_reference and not s.reference:
                    continue
                for n in range(self.samples):
                    if not spec.per_claim:
                        keys[(i, m, n, WHOLE)] = self._key(m, s, n)
                        continue
                    for c, call in enumerate(calls[i]):  # no claim: nothing to judge, not a failure
                        keys[(i, m, n, c)] = self._claim_key(m, call.claim.text, _shown(s, call), n)
        return keys

    def _judge_all(self, samples: Sequence[JudgeSample | None], calls: dict[int, tuple[ClaimCall, ...]],
                   todo: list[str], first: dict[str, Job], results: list[JudgeResult],
                   failures: dict[str, str]) -> Iterator[tuple[str, float | None]]:
        """Judge the keys the cache does not hold, each outcome as it completes (a failure as None, its
        reason in ``failures``), each call's usage added to its item's result."""
        # search.max_llm_calls / budget_usd: the calls known before are counted before (all fit, or
        # none is made); the rest, and the money, after the batch (rag_bench.budget)
        known = [CALLS_PER_JUDGEMENT.get(first[k][1]) for k in todo]
        held = budget.hold("judge", sum(c for c in known if c is not None))
        made, tokens_in, tokens_out, seconds = 0, 0, 0, 0.0
        for k, outcome, usage in self._pool(samples, [first[k] for k in todo], todo, calls):
            item = results[first[k][0]]
            item.calls += 1
            item.tokens_in += usage["tokens_in"]
            item.tokens_out += usage["tokens_out"]
            item.seconds += usage["seconds"]
            made, tokens_in, tokens_out = made + usage["calls"], tokens_in + usage["tokens_in"], \
                tokens_out + usage["tokens_out"]
            seconds += usage["seconds"]
            if isinstance(outcome, BaseException):
                if not isinstance(outcome, Exception):
                    raise outcome  # KeyboardInterrupt and friends stop the run
                # any judge failure is recorded with its reason, never raised
                failures[k] = redact(f"{type(outcome).__name__}: {outcome}")[:300]
                yield k, None
            else:
                yield k, outcome
        budget.charge(held, made, tokens_in, tokens_out, seconds)

    def _record_samples(self, keys: dict[Job, str], got: Mapping[str, Any], failures: dict[str, str],
                        results: list[JudgeResult]) -> None:
        """Each sample's value per item and metric (a per-claim metric's: the share of claims
        supported), and the first failure of each item's metric with where it happened."""
        parts: dict[tuple[int, str, int], list[tuple[int, str]]] = {}
        for (i, m, n, c), k in keys.items():
            parts.setdefault((i, m, n), []).append((c, k))
        for (i, m, n), jobs in parts.items():
            values = [got.get(k) for _, k in jobs]
            if jobs[0][0] == WHOLE:
                value = values[0]
            else:  # ragas' faithfulness: supported statements / statements
                value = None if any(v is None for v in values) else sum(values) / len(values)  # type: ignore[arg-type]
            results[i].samples.setdefault(m, []).append(value)
            failed = [(c, k) for c, k in jobs if k in failures]
            if failed and m not in results[i].failures:
                prefix = f"sample {n}: " if self.samples > 1 else ""
                c, k = failed[0]
                where = f"claim {c + 1} of {len(jobs)}: " if c != WHOLE else ""
                results[i].failures[m] = prefix + where + failures[k]

    def _record_claims(self, calls: dict[int, tuple[ClaimCall, ...]], keys: dict[Job, str], got: Mapping[str, Any],
                       results: list[JudgeResult]) -> None:
        """Each item's claims under a per-claim metric: the claim, its citations, the passages shown
        and each sample's verdict."""
        for i, cs in calls.items():
            for m in self.metrics:
                if JUDGE_METRICS[m].per_claim and cs:
                    results[i].claims[m] = [
                        {"claim": call.claim.text, "start": call.claim.start, "end": call.claim.end,
                         "cited": list(call.cited), "passages": list(call.shown),
                         "verdicts": [_verdict(got.get(keys[(i, m, n, c)])) for n in range(self.samples)]}
                        for c, call in enumerate(cs)]

    def _pool(self, samples: Sequence[JudgeSample | None], jobs: list[Job], keys: list[str],
              calls: dict[int, tuple[ClaimCall, ...]] | None = None) -> Iterator[tuple[str, Any, dict[str, Any]]]:
        """Every job's outcome (a score or the exception) as it completes, with at most
        ``concurrency`` calls in flight: a bounded pool on one event loop (the async client is bound
        to it), the next call starting as soon as one ends. ``calls``: each item's claims (jobs of a
        per-claim metric)."""
        loop = asyncio.new_event_loop()
        try:
            scorers = {n: self._scorers(n) for n in sorted({job[2] for job in jobs})}
            gate = asyncio.Semaphore(self.concurrency)

            async def one(job: Job, key: str) -> tuple[str, Any, dict[str, Any]]:
                i, m, n, c = job
                async with gate:
                    usage = {"tokens_in": 0, "tokens_out": 0, "seconds": 0.0, "calls": 0}
                    _USAGE.set(usage)  # this task's own context: the response hook adds its tokens here
                    t0 = time.perf_counter()
                    try:
                        if c == WHOLE:
                            outcome: Any = await self._score(scorers[n][m], m, samples[i])
                        else:
                            call, s = (calls or {})[i][c], samples[i]
                            assert s is not None  # a claim job is made for an item to judge only
                            outcome = await judge_claim(scorers[n][m], call.claim.text, _shown(s, call))
                    except BaseException as exc:  # noqa: BLE001 -- returned, judged by the caller
                        outcome = exc
                    usage["seconds"] = time.perf_counter() - t0
                    return key, outcome, usage

            pending = {loop.create_task(one(job, k)) for job, k in zip(jobs, keys)}
            while pending:
                done, pending = loop.run_until_complete(asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED))
                for task in done:
                    yield task.result()
        finally:  # stopped early (an interrupt): cancel what is still in flight and let it unwind
            left = asyncio.all_tasks(loop)
            for task in left:
                task.cancel()
            if left:
                loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))
            loop.close()

    @staticmethod
    async def _score(scorer: Any, metric: str, sample: JudgeSample | None) -> float:
        if sample is None:
            raise ValueError("nothing to judge")
        fields = _fields(sample)
        res = await scorer.ascore(**{f: fields[f] for f in JUDGE_METRICS[metric].inputs})
        value = float(res.value)
        if value != value:  # NaN: ragas could not score (e.g. no statements extracted)
            raise ValueError("judge returned no score (NaN)")
        lo, hi = JUDGE_METRICS[metric].bounds
        if not lo <= value <= hi:  # the judge broke the prompt's contract (e.g. a verdict that is not 0/1)
            raise ValueError(f"judge score {value!r} is outside [{lo:g}, {hi:g}]")
        return value
