"""Sentence-transformers embedder: packaged offline model by default, any local path or hub id.

Vectors are L2-normalised here (not by the model), so the cosine of two vectors is their dot
product whatever the model's own modules do. Queries and documents get separate prefixes: models
such as e5 ("query: " / "passage: ") or nomic ("search_query: " / "search_document: ") silently
lose quality without them.

``backend`` picks the engine: ``torch`` (default; sentence-transformers, the reference) or
``onnx`` (:mod:`rag_bench.embedding.onnx_backend`: a local ONNX export, int8-quantised by default,
~5x the throughput on 2 cores at mean cosine ~0.993 to torch). The backend is part of the embedder's
``identity`` and so of every embedding cache key; the torch identity is the one it always was
(``<folder>@<weights hash>``), so vectors cached before the option existed are still found, and
torch and onnx vectors never mix.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

from rag_bench import budget
from rag_bench.embedding.base import NOTICE_TEXTS, EmbedStats
from rag_bench.embedding.cache import EmbeddingCache, default_cache_dir, text_key, vector_bytes, vector_from_bytes
from rag_bench.embedding.models import PACKAGED_MODELS, load_model, resolve_model, weights_hash
from rag_bench.embedding.onnx_backend import QUANTIZE_CHOICES, OnnxEncoder, Quantize, load_encoder
from rag_bench.errors import ConfigError
from rag_bench.memo import sharing_enabled as memo_enabled
from rag_bench.storage import get_or_compute

log = logging.getLogger(__name__)

Backend = Literal["torch", "onnx"]
BACKENDS: tuple[str, ...] = ("torch", "onnx")
# Vectors an embedder keeps in memory (oldest dropped first): ~1.5 KB each at 384 dimensions, so
# ~100 MB, enough for every chunker's chunks of a corpus of a few thousand passages.
MEMO_VECTORS = 65_536


_BAR_LOCK = threading.Lock()


@contextlib.contextmanager
def _transient_bar(module_name: str) -> Iterator[None]:
    """sentence-transformers' ``Batches`` bar, cleared when the encoding ends (``leave=False``)
    instead of left above the sweep's bar and cell lines: its module's ``trange`` for the call.
    The encoding itself is the same single call (its batches, hence its vectors, unchanged)."""
    module = sys.modules.get(module_name)
    original = getattr(module, "trange", None)
    if module is None or original is None:
        yield
        return
    with _BAR_LOCK:
        module.trange = functools.partial(original, leave=False)  # type: ignore[attr-defined]
        try:
            yield
        finally:
            module.trange = original  # type: ignore[attr-defined]


class SentenceTransformerEmbedder:
    """Parameters
    ----------
    model:
        A packaged model name (default ``all-MiniLM-L6-v2``), a local folder, or a hub id.
    query_prefix, document_prefix:
        Prepended to questions and to chunk texts before encoding (and part of the cache key).
    batch_size:
        Encoding batch size.
    normalize:
        L2-normalise vectors (cosine = inner product). Keep true for the FAISS inner-product indexes.
    cache:
        Use the persistent cache at ``cache_dir`` (default ``$RAG_BENCH_CACHE`` or ``~/.cache/rag_bench``).
    backend:
        ``torch`` (sentence-transformers) or ``onnx`` (onnxruntime over a local export of the same
        folder, cached under ``cache_dir/onnx`` even when ``cache`` is false).
    quantize, per_channel:
        onnx only: ``int8`` (dynamic signed int8 MatMul weights, per output channel unless
        ``per_channel`` is false) or ``none`` (the fp32 export).
    threads:
        onnx only: onnxruntime intra-op threads (None: one per physical core).
    """

    def __init__(self, model: str = "all-MiniLM-L6-v2", query_prefix: str = "", document_prefix: str = "",
                 batch_size: int = 64, normalize: bool = True, cache: bool = True, cache_dir: str | None = None,
                 device: str = "cpu", backend: Backend = "torch", quantize: Quantize = "int8",
                 per_channel: bool = True, threads: int | None = None) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ConfigError(f"embedder.batch_size must be an integer >= 1, got {batch_size!r}")
        if backend not in BACKENDS:
            raise ConfigError(f"embedder.backend must be one of {', '.join(BACKENDS)}, got {backend!r} -- fix: "
                              "embedder.backend=torch (sentence-transformers) or embedder.backend=onnx (onnxruntime)")
        if quantize not in QUANTIZE_CHOICES:
            raise ConfigError(f"embedder.quantize must be one of {', '.join(QUANTIZE_CHOICES)}, got {quantize!r} -- "
                              "fix: embedder.quantize=int8")
        if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
            raise ConfigError(f"embedder.threads must be an integer >= 1 or null, got {threads!r} -- fix: "
                              "embedder.threads=null (one per physical core)")
        self.backend, self.quantize, self.per_channel, self.threads = backend, quantize, bool(per_channel), threads
        self._cache_dir = Path(cache_dir or default_cache_dir())
        self.model_path = resolve_model(model)
        self.model_name = model  # as configured (a packaged model's folder is named `model`)
        self.query_prefix, self.document_prefix = query_prefix, document_prefix
        self.batch_size, self.normalize, self.device = batch_size, bool(normalize), device
        self._cache_path = self._cache_dir / "embeddings.sqlite" if cache else None
        self._cache: EmbeddingCache | None = None
        self._requested = self._cache_hits = self._encoded = 0
        self._encode_s = 0.0
        self._identity: str | None = None
        self._memo: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()

    @property
    def cache(self) -> EmbeddingCache | None:
        """The persistent cache, opened on first use (a BM25-only run never creates it)."""
        if self._cache is None and self._cache_path is not None:
            self._cache = EmbeddingCache(self._cache_path)
        return self._cache

    @property
    def identity(self) -> str:
        """Model identity for cache keys: resolved path + weights hash, then for onnx the backend,
        its settings, the onnxruntime version and the exported file's hash.

        The torch identity is exactly what it was before backends existed (cached vectors stay valid).
        """
        if self._identity is None:
            ident = f"{self.model_path}@{weights_hash(self.model_path)}"
            if self.backend == "onnx":
                import onnxruntime

                enc = self.encoder
                quant = "none" if self.quantize == "none" else \
                    f"int8,{'per_channel' if self.per_channel else 'per_tensor'}"
                ident += f"|onnx|quantize={quant}|ort={onnxruntime.__version__}|file={enc.file.sha256[:16]}"
            self._identity = ident
        return self._identity

    def usage(self) -> EmbedStats:
        """Texts requested, served from the cache and encoded so far, and the encoding time."""
        return EmbedStats(self._requested, self._cache_hits, self._encoded, self._encode_s)

    @property
    def model(self) -> Any:
        """The loaded SentenceTransformer (shared by every embedder of the process)."""
        return load_model(self.model_path, self.device, weights_hash(self.model_path))

    @property
    def encoder(self) -> OnnxEncoder:
        """backend=onnx: the onnxruntime encoder (exported on first use, then from the disk cache)."""
        if not Path(self.model_path).is_dir():
            raise ConfigError(f"embedder.backend=onnx exports a local model folder, and {self.model_path!r} is not one "
                              f"-- fix: give a local folder or one of {sorted(PACKAGED_MODELS)}")
        return load_encoder(self.model_path, weights_hash(self.model_path), self.quantize, self.per_channel,
                            str(self._cache_dir), self.threads)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of chunk texts, ``(len(texts), dim)`` float32."""
        return self._embed(texts, self.document_prefix, "chunks")

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of questions, ``(len(texts), dim)`` float32."""
        return self._embed(texts, self.query_prefix, "questions")

    def encode_raw(self, texts: Sequence[str]) -> np.ndarray:
        """Encode with the model, no cache, no prefix handling (the model's own output)."""
        if self.backend == "onnx":
            return self.encoder.encode(texts, self.batch_size)
        show = len(texts) > 4 * self.batch_size and sys.stderr.isatty()
        with _transient_bar(type(self.model).encode.__module__) if show else contextlib.nullcontext():
            out = self.model.encode(list(texts), batch_size=self.batch_size, convert_to_numpy=True,
                                    normalize_embeddings=False, show_progress_bar=show)
        return np.asarray(out, dtype=np.float32)

    def _embed(self, texts: Sequence[str], prefix: str, what: str = "texts") -> np.ndarray:
        self._requested += len(texts)
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        # Vectors this embedder already read or encoded, by (prefix, text): a reranker's per-question
        # calls and every cell's questions ask again for what the cache gave a moment before. Only
        # with the persistent cache on (a memo hit is a text the cache holds, counted as a cache hit
        # as before) and sharing on: RAG_BENCH_SHARE=0 and cache=false still encode everything.
        memo = self._memo if self.cache is not None and memo_enabled() else None
        raw: dict[str, np.ndarray] = {}
        if memo is not None:
            for t in texts:
                v = memo.get((prefix, t))
                if v is not None:
                    raw[t] = v
        rest = [t for t in texts if t not in raw] if raw else texts
        if rest:
            key_of = {t: text_key(self.identity, prefix, t) for t in rest} if self.cache is not None else \
                {t: t for t in rest}
            text_of = {k: t for t, k in key_of.items()}

            def encode(todo: list[str]) -> Iterable[tuple[str, np.ndarray]]:
                # Each distinct missing text is encoded once, even if it repeats in this batch.
                if len(todo) >= NOTICE_TEXTS:  # else the console is silent through the load and encoding
                    log.info("embedding %d %s with %s%s", len(todo), what, self.model_name,
                             " (cached for the next cells)" if self.cache is not None else "")
                held = budget.hold("embedder", 0, units=len(todo))  # search.budget_usd: charged its seconds after
                t0 = time.perf_counter()
                encoded = self.encode_raw([prefix + text_of[k] for k in todo])
                self._encode_s += time.perf_counter() - t0
                self._encoded += len(todo)
                budget.charge(held, 0, seconds=time.perf_counter() - t0, units=len(todo))
                return zip(todo, encoded)

            got = get_or_compute(self.cache, [key_of[t] for t in rest], compute=encode, encode=vector_bytes,
                                 decode=vector_from_bytes)
            self._cache_hits += sum(key_of[t] in got.found for t in rest)
            for t in rest:
                raw[t] = got.values[key_of[t]]
            if memo is not None:
                memo.update(((prefix, t), raw[t]) for t in rest)
                while len(memo) > MEMO_VECTORS:
                    memo.popitem(last=False)
        self._cache_hits += len(texts) - len(rest)
        out = np.stack([raw[t] for t in texts]).astype(np.float32, copy=False)
        if self.normalize:
            norms = np.linalg.norm(out, axis=1, keepdims=True)
            out = (out / np.where(norms == 0, 1, norms)).astype(np.float32)
        return out

    @property
    def dim(self) -> int:
        """Embedding dimension."""
        if self.backend == "onnx":
            return self.encoder.dim
        model = self.model  # sentence-transformers 6 renamed it (the old name warns FutureWarning)
        return int((getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension)())
