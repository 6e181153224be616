"""Embeddings from any OpenAI-compatible ``/v1/embeddings`` endpoint (OpenAI, vLLM, TEI, Ollama,
LiteLLM, llama.cpp's server with embeddings on).

A sweep should run with the embedder a team ships. Texts go in batches (``batch_size``) to the
endpoint, at most ``concurrency`` requests at a time; a request is retried with exponential
backoff on connection errors, timeouts, 429 and 5xx, and each has a timeout. Vectors are kept in
the same persistent content-addressed cache as the local models' (``$RAG_BENCH_CACHE/
embeddings.sqlite``), keyed by the endpoint's identity -- URL, model, dimensions -- and the text,
so a re-run calls nothing. The API key is read from the environment variable ``api_key_env``
names; it is never in the config, the identity or a cache key.

An endpoint that cannot answer (after the retries; :mod:`rag_bench.http`: a deadline per request,
no redirect across hosts), answers garbage (not the embeddings layout, a vector of the wrong
dimension, of strings or all zeros, NaN, indices that are not each text's once, fewer vectors than
texts) stops the cell with an :class:`~rag_bench.errors.EndpointError` naming the endpoint (exit 2;
nothing written, nothing of the reply cached).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from rag_bench import budget
from rag_bench.embedding.base import NOTICE_TEXTS, EmbedStats
from rag_bench.embedding.cache import EmbeddingCache, default_cache_dir, text_key, vector_bytes, vector_from_bytes
from rag_bench.errors import ConfigError, EndpointError
from rag_bench.http import check_settings, check_url, is_json_int, is_json_number, post_json
from rag_bench.storage import get_or_compute

log = logging.getLogger(__name__)

class OpenAIEmbedder:
    """Parameters
    ----------
    base_url:
        e.g. ``http://127.0.0.1:8080/v1`` (``/embeddings`` is appended).
    model:
        Model name the endpoint expects.
    dimensions:
        Ask for vectors of this size (models that support it); None: the model's own. Every vector
        returned must have one size (this one when given).
    api_key_env:
        Name of the environment variable holding the key (never the key itself in config).
    query_prefix, document_prefix:
        Prepended to questions and to chunk texts before embedding (and part of the cache key).
    batch_size, concurrency, timeout_s, max_retries, backoff_s:
        Texts per request, requests in flight, seconds per request (the whole request, reply
        included), retries and first backoff.
    normalize:
        L2-normalise vectors (cosine = inner product, as the FAISS inner-product indexes need).
    cache, cache_dir:
        The persistent vector cache (default ``$RAG_BENCH_CACHE`` or ``~/.cache/rag_bench``).
    """

    def __init__(self, base_url: str | None = None, model: str = "local", dimensions: int | None = None,
                 api_key_env: str = "OPENAI_API_KEY", query_prefix: str = "", document_prefix: str = "",
                 batch_size: int = 64, concurrency: int = 2, timeout_s: float = 60.0, max_retries: int = 3,
                 backoff_s: float = 1.0, normalize: bool = True, cache: bool = True,
                 cache_dir: str | None = None) -> None:
        url = check_url("embedder", base_url)
        for name, value, low in (("batch_size", batch_size, 1), ("concurrency", concurrency, 1)):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ConfigError(f"embedder.{name} must be an integer >= {low}, got {value!r}")
        if dimensions is not None and (isinstance(dimensions, bool) or not isinstance(dimensions, int)
                                       or dimensions < 1):
            raise ConfigError(f"embedder.dimensions must be an integer >= 1 or null, got {dimensions!r}")
        timeout_s, max_retries, backoff_s = check_settings("embedder", timeout_s=timeout_s, max_retries=max_retries,
                                                           backoff_s=backoff_s)
        self.url = url.rstrip("/") + "/embeddings"
        self.model, self.dimensions, self.api_key_env = model, dimensions, api_key_env
        self.query_prefix, self.document_prefix = query_prefix, document_prefix
        self.batch_size, self.concurrency = batch_size, concurrency
        self.timeout_s, self.max_retries, self.backoff_s = timeout_s, max_retries, backoff_s
        self.normalize = bool(normalize)
        # What determines the vectors: where, which model, which size. Not the key, not timeouts.
        self.identity = f"openai|{self.url}|{model}|{dimensions}"
        self._cache_path = Path(cache_dir or default_cache_dir()) / "embeddings.sqlite" if cache else None
        self._cache: EmbeddingCache | None = None
        self._dim: int | None = dimensions
        self._requested = self._cache_hits = self._encoded = 0
        self._encode_s = 0.0
        self.calls = self.retries = self.tokens = 0

    @property
    def cache(self) -> EmbeddingCache | None:
        """The persistent cache, opened on first use (building the embedder, as ``--plan`` does,
        creates no folder)."""
        if self._cache is None and self._cache_path is not None:
            self._cache = EmbeddingCache(self._cache_path)
        return self._cache

    def usage(self) -> EmbedStats:
        """Texts requested, served from the cache and embedded by the endpoint, and the time spent."""
        return EmbedStats(self._requested, self._cache_hits, self._encoded, self._encode_s)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of chunk texts, ``(len(texts), dim)`` float32."""
        return self._embed(texts, self.document_prefix, "chunks")

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of questions."""
        return self._embed(texts, self.query_prefix, "questions")

    def _embed(self, texts: Sequence[str], prefix: str, what: str = "texts") -> np.ndarray:
        self._requested += len(texts)
        if not texts:
            return np.zeros((0, self._dim or 0), np.float32)
        key_of = {t: text_key(self.identity, prefix, t) for t in texts}
        text_of = {k: t for t, k in key_of.items()}

        def compute(todo: list[str]) -> Iterable[tuple[str, np.ndarray]]:
            if len(todo) >= NOTICE_TEXTS:  # as the local embedder: the console is not silent meanwhile
                log.info("embedding %d %s with %s at %s", len(todo), what, self.model, self.url)
            held = budget.hold("embedder", 0, units=len(todo))  # search.budget_usd: its texts' price, before
            t0 = time.perf_counter()
            vectors = self.encode_raw([prefix + text_of[k] for k in todo])
            self._encode_s += time.perf_counter() - t0
            self._encoded += len(todo)
            budget.charge(held, 0, seconds=time.perf_counter() - t0, units=len(todo))
            return zip(todo, vectors)

        got = get_or_compute(self.cache, list(dict.fromkeys(key_of.values())), compute=compute,
                             encode=vector_bytes, decode=vector_from_bytes)
        self._cache_hits += sum(key_of[t] in got.found for t in texts)
        out = np.stack([got.values[key_of[t]] for t in texts]).astype(np.float32, copy=False)
        if out.shape[1] != (self._dim or out.shape[1]):
            raise self._error(f"the cache holds vectors of size {out.shape[1]} for {self.identity} but the endpoint "
                              f"now returns {self._dim}", "clear the cache (rag-bench cache verify --repair) or set "
                              "embedder.dimensions")
        self._dim = out.shape[1]
        if self.normalize:
            norms = np.linalg.norm(out, axis=1, keepdims=True)
            out = (out / np.where(norms == 0, 1, norms)).astype(np.float32)
        return out

    def encode_raw(self, texts: Sequence[str]) -> np.ndarray:
        """The endpoint's vectors for ``texts`` (no cache, no normalisation), in order."""
        batches = [list(texts[i:i + self.batch_size]) for i in range(0, len(texts), self.batch_size)]
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            parts = list(pool.map(self._request, batches))
        if len({p.shape[1] for p in parts}) > 1:  # batches answered concurrently before the size was known
            raise self._error(f"vectors of sizes {sorted({p.shape[1] for p in parts})} in one run",
                              "set embedder.dimensions, or check embedder.model")
        return np.concatenate(parts, axis=0) if parts else np.zeros((0, self._dim or 0), np.float32)

    def _error(self, what: str, fix: str) -> EndpointError:
        return EndpointError(f"embedder endpoint {self.url} (model {self.model!r}): {what}; nothing was written "
                             f"-- fix: {fix}")

    def _request(self, batch: list[str]) -> np.ndarray:
        body: dict[str, Any] = {"model": self.model, "input": batch}
        if self.dimensions is not None:
            body["dimensions"] = self.dimensions
        reply = post_json(self.url, body, timeout_s=self.timeout_s, max_retries=self.max_retries,
                          backoff_s=self.backoff_s, api_key_env=self.api_key_env)
        self.calls += reply.attempts
        self.retries += reply.attempts - 1
        if reply.fatal:
            raise self._error(reply.reason, reply.fix)
        if reply.body is None:
            raise self._error(f"no embeddings after {reply.attempts} attempt(s) ({reply.reason})",
                              "check that the server is up and serves embeddings (llama.cpp: --embedding), "
                              "embedder.base_url and embedder.model; raise embedder.timeout_s for a slow server")
        return self._parse(reply.body, len(batch))

    def _parse(self, payload: bytes, count: int) -> np.ndarray:
        """The vectors of one response, in input order, checked: ``data[i].embedding`` lists of
        numbers, one per input by an integer ``index`` (each once), all of one size
        (``dimensions`` when set), finite in float32, none all zeros; ``usage.prompt_tokens`` a
        count when given. Anything else is the endpoint's error: nothing of the reply is kept."""
        doc, order, rows = self._layout(payload)
        self._check_numbering(order, rows, count)
        tokens = self._prompt_tokens(doc)
        self._check_rows(order, rows)
        vectors = self._vectors(self._matrix(order, rows, count), count)
        if tokens is not None:
            self.tokens += tokens
        self._dim = vectors.shape[1]
        return vectors

    def _layout(self, payload: bytes) -> tuple[Any, list[Any], list[Any]]:
        """The response's JSON, each item's ``index`` (its position when absent) and ``embedding``."""
        try:
            doc = json.loads(payload)
            items = doc["data"]
            if not isinstance(items, list) or not all(isinstance(it, dict) for it in items):
                raise TypeError("data is not a list of objects")
            return doc, [it.get("index", i) for i, it in enumerate(items)], [it["embedding"] for it in items]
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise self._error(f"the response is not the embeddings layout ({type(exc).__name__}: "
                              f"{str(exc)[:120]}; starts {payload[:80]!r})",
                              "point embedder.base_url at an OpenAI-compatible /v1 (…/v1/embeddings)") from None

    def _check_numbering(self, order: list[Any], rows: list[Any], count: int) -> None:
        """One vector per text, their indices numbering the texts 0..count-1 once each."""
        if len(rows) != count:
            raise self._error(f"{len(rows)} vectors for {count} texts", "check the endpoint's batch limit (lower "
                              "embedder.batch_size)")
        if not all(is_json_int(i) for i in order) or sorted(order) != list(range(count)):
            raise self._error(f"the indices {order[:8]!r}{' ...' if count > 8 else ''} do not number the {count} "
                              f"texts 0..{count - 1} once each", "check the endpoint: each data[].index is the "
                              "position of its text in the request, an integer")

    def _prompt_tokens(self, doc: Any) -> int | None:
        """``usage.prompt_tokens``: a count, or None when the response gives none."""
        usage = doc.get("usage") if isinstance(doc, dict) else None
        tokens = usage.get("prompt_tokens") if isinstance(usage, dict) else None
        if tokens is not None and not (is_json_int(tokens) and tokens >= 0):
            raise self._error(f"usage.prompt_tokens is {tokens!r}, not a count", "check the endpoint")
        return tokens

    def _check_rows(self, order: list[Any], rows: list[Any]) -> None:
        """Each vector a list of numbers, one per text (not one per token)."""
        if rows and isinstance(rows[0], list) and rows[0] and isinstance(rows[0][0], list):
            raise self._error("one vector per token, not one per text (the server does not pool)",
                              "serve the model with a pooling type (llama.cpp's server: --pooling mean; "
                              "llama-cpp-python: pooling_type=1)")
        wrong = [i for i, row in zip(order, rows) if not isinstance(row, list) or not all(map(is_json_number, row))]
        if wrong:
            raise self._error(f"the vectors of texts {sorted(wrong)[:5]} are not lists of numbers (strings, booleans "
                              "or nulls)", "check embedder.model and the endpoint")

    def _matrix(self, order: list[Any], rows: list[Any], count: int) -> np.ndarray:
        """The vectors in input order, one size (``dimensions`` when set, else the size seen before)."""
        ordered: list[Any] = [None] * count
        for i, row in zip(order, rows):
            ordered[i] = row
        try:
            matrix = np.asarray(ordered, dtype=np.float64)
        except (TypeError, ValueError):
            raise self._error("vectors of different sizes or not numbers", "check embedder.model") from None
        want = self._dim
        if matrix.ndim != 2 or matrix.shape[1] == 0 or (want is not None and matrix.shape[1] != want):
            got = matrix.shape[1] if matrix.ndim == 2 else "none"
            raise self._error(f"vectors of size {got}, expected {want if want is not None else 'one size > 0'}",
                              "set embedder.dimensions to the model's size, or check embedder.model")
        return matrix

    def _vectors(self, matrix: np.ndarray, count: int) -> np.ndarray:
        """``matrix`` in float32: finite, and no vector all zeros."""
        with np.errstate(over="ignore"):
            vectors = matrix.astype(np.float32)
        if not np.isfinite(vectors).all():  # also a finite value beyond float32's range
            raise self._error("vectors hold NaN or infinite values", "check the model served")
        zero = np.flatnonzero(~vectors.any(axis=1))
        if zero.size:
            raise self._error(f"all-zero vectors for {zero.size} of {count} texts (texts {zero[:5].tolist()}): a "
                              "vector without a direction matches nothing", "check the model served and its input "
                              "limits")
        return vectors

    @property
    def dim(self) -> int:
        """Vector size (asks the endpoint once when not yet known)."""
        if self._dim is None:
            self.embed_queries(["dimension probe"])
        assert self._dim is not None
        return self._dim
