"""Reranking by a ``/rerank`` service: the request shape Cohere, Jina, TEI, Infinity and
llama.cpp's server share (``{"model", "query", "documents", "top_n"}``).

Each question's shortlist is one request (at most ``concurrency`` in flight), with a timeout and
retries with exponential backoff on connection errors, timeouts, 429 and 5xx. The answer may be
Cohere's / Jina's ``{"results": [{"index", "relevance_score"}]}`` or TEI's ``[{"index", "score"}]``;
every shortlist item must get exactly one finite score. Scores are kept per (service identity,
question, text) in the same persistent pair cache as the cross-encoder's, so a re-run calls
nothing; identity = URL + model (the key only from ``api_key_env``). A service that answers
garbage (an index that is not an integer or not each document's once, a score that is not a
number) or nothing (after the retries; :mod:`rag_bench.http`: a deadline per request, no redirect
across hosts) stops the cell with an :class:`~rag_bench.errors.EndpointError` naming it; nothing
of such a reply is cached.
"""

from __future__ import annotations

import json
import struct
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from rag_bench import budget, memo
from rag_bench.domain import Chunk, Question
from rag_bench.errors import ConfigError, EndpointError
from rag_bench.http import check_settings, check_url, is_json_int, is_json_number, post_json
from rag_bench.reranking.base import check_depth
from rag_bench.reranking.cross_encoder import PairScoreCache, pair_key
from rag_bench.storage import default_cache_dir, get_or_compute


class RerankApiReranker:
    """Parameters
    ----------
    base_url:
        e.g. ``http://127.0.0.1:8080/v1`` (``/rerank`` is appended).
    model:
        Model name the service expects.
    depth:
        Shortlist size.
    api_key_env:
        Name of the environment variable holding the key (never the key itself in config).
    concurrency, timeout_s, max_retries, backoff_s:
        Requests in flight, seconds per request (the whole request, reply included), retries and
        first backoff.
    cache:
        Keep pair scores in ``$RAG_BENCH_CACHE/rerank_pairs.sqlite``.
    """

    def __init__(self, base_url: str | None = None, model: str = "local", depth: int = 20,
                 api_key_env: str = "OPENAI_API_KEY", concurrency: int = 2, timeout_s: float = 60.0,
                 max_retries: int = 3, backoff_s: float = 1.0, cache: bool = True) -> None:
        url = check_url("reranker", base_url)
        if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
            raise ConfigError(f"reranker.concurrency must be an integer >= 1, got {concurrency!r}")
        timeout_s, max_retries, backoff_s = check_settings("reranker", timeout_s=timeout_s, max_retries=max_retries,
                                                           backoff_s=backoff_s)
        self.url = url.rstrip("/") + "/rerank"
        self.model, self.depth, self.api_key_env = model, check_depth(depth), api_key_env
        self.concurrency, self.timeout_s = concurrency, timeout_s
        self.max_retries, self.backoff_s = max_retries, backoff_s
        self.identity = f"rerank|{self.url}|{model}"
        self._store = PairScoreCache(default_cache_dir() / "rerank_pairs.sqlite") if cache else None
        self.calls = self.retries = self.pairs_scored = 0

    def scores(self, questions: Sequence[Question], shortlists: Sequence[Sequence[Chunk]]) -> list[np.ndarray]:
        """The service's score per (question, chunk); pairs already scored are reused."""
        flat = [(q.question, c.text) for q, s in zip(questions, shortlists) for c in s]
        keys = [pair_key(self.identity, *pair) for pair in flat]
        pair_of = dict(zip(keys, flat))
        share = memo.sharing_enabled()

        def compute(todo: list[str]) -> Iterable[tuple[str, float]]:
            by_question: dict[str, list[str]] = {}
            for k in todo:
                by_question.setdefault(pair_of[k][0], []).append(k)
            groups = list(by_question.items())
            held = budget.hold("reranker", 0, units=len(groups))  # search.budget_usd: one call per question
            t0 = time.perf_counter()
            with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
                results = list(pool.map(lambda g: self._request(g[0], [pair_of[k][1] for k in g[1]]), groups))
            budget.charge(held, 0, seconds=time.perf_counter() - t0, units=len(groups))
            self.pairs_scored += len(todo)
            return [(k, float(v)) for (_, ks), values in zip(groups, results) for k, v in zip(ks, values)]

        got = get_or_compute(self._store if share else None, list(dict.fromkeys(keys)), compute=compute,
                             encode=lambda v: struct.pack("<d", v), decode=lambda b: struct.unpack("<d", b)[0])
        out, pos = [], 0
        for s in shortlists:
            out.append(np.array([got.values[k] for k in keys[pos:pos + len(s)]], dtype=np.float64))
            pos += len(s)
        return out

    def _error(self, what: str, fix: str) -> EndpointError:
        return EndpointError(f"reranker endpoint {self.url} (model {self.model!r}): {what}; nothing was written "
                             f"-- fix: {fix}")

    def _request(self, query: str, documents: list[str]) -> list[float]:
        body = {"model": self.model, "query": query, "documents": documents, "top_n": len(documents),
                "return_documents": False}
        reply = post_json(self.url, body, timeout_s=self.timeout_s, max_retries=self.max_retries,
                          backoff_s=self.backoff_s, api_key_env=self.api_key_env)
        self.calls += reply.attempts
        self.retries += reply.attempts - 1
        if reply.fatal:
            raise self._error(reply.reason, reply.fix)
        if reply.body is None:
            raise self._error(f"no scores after {reply.attempts} attempt(s) ({reply.reason})",
                              "check that the service is up, reranker.base_url and reranker.model; raise "
                              "reranker.timeout_s for a slow service")
        return self._parse(reply.body, len(documents))

    def _parse(self, payload: bytes, count: int) -> list[float]:
        """One finite score per document, by the integer ``index`` each result carries (each index
        once); a score is a JSON number, not a boolean or a string. Anything else is the service's
        error: nothing of the reply is kept."""
        try:
            doc: Any = json.loads(payload)
            results = doc["results"] if isinstance(doc, dict) else doc
            if not isinstance(results, list) or not all(isinstance(r, dict) for r in results):
                raise TypeError("results is not a list of objects")
            pairs = [(r["index"], r["relevance_score"] if "relevance_score" in r else r["score"]) for r in results]
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise self._error(f"the response is not a rerank result ({type(exc).__name__}: {str(exc)[:120]}; "
                              f"starts {payload[:80]!r})", "point reranker.base_url at a /rerank service "
                              "(Cohere, Jina, TEI or llama.cpp shape)") from None
        if len(pairs) != count:
            raise self._error(f"{len(pairs)} scores for {count} documents (each index once)",
                              "check the service's top_n limit")
        indices = [i for i, _ in pairs]
        if not all(is_json_int(i) for i in indices) or sorted(indices) != list(range(count)):
            raise self._error(f"the indices {indices[:8]!r}{' ...' if count > 8 else ''} do not number the {count} "
                              f"documents 0..{count - 1} once each", "check the service: each result's index is "
                              "the position of its document in the request, an integer")
        wrong = [v for _, v in pairs if not is_json_number(v)]
        if wrong:
            raise self._error(f"scores that are not numbers: {wrong[:5]!r}", "check the service and the model served")
        scores = [0.0] * count
        for i, v in pairs:
            scores[i] = float(v)
        if not np.isfinite(scores).all():
            raise self._error("scores hold NaN or infinite values", "check the model served")
        return scores
