"""The counting behind ``rag-bench run -m … --plan``: the grid's cells composed, each cell's retrieval
run in-process, its texts and prompts looked up in the caches -- read, never written.

* The grid is the sweeper's (:func:`rag_bench.runner.grid.grid_overrides`: the experiment's
  ``hydra.sweeper.params`` and the command's overrides, expanded stage by stage) and each cell is
  composed as a cell is; a cell whose folder holds DONE is skipped, as the run skips it.
* Every other cell is built (:func:`rag_bench.runner.config.build_cell`) and run through the
  pipeline's own stages -- chunk, index, tune, retrieve, rerank -- with its embedder replaced by
  :class:`PlanEmbedder`: each text's cache key is the embedder's own (:func:`~rag_bench.embedding.cache.text_key`
  of its identity, prefix and text), looked up in the shard files and ``embeddings.sqlite`` opened
  read-only; nothing is encoded. A key not found is a text the run will embed; the cell gets a
  stand-in vector for it, and everything it ranks from then on is marked *inexact*.
* An exact cell's prompts are built as the generator stage builds them (context, prompt) and their
  generation-cache keys (:func:`~rag_bench.generation.base.cache_key`) looked up, read-only; an
  inexact cell's prompts count as a bound: questions x its distinct rankings.
* ``--plan=exact`` (``exact=True``): a missing vector is not replaced by a stand-in but computed in
  memory by the real local model (:meth:`SentenceTransformerEmbedder.encode_raw`, the call the
  embedder itself makes; never stored), so every cell's rankings, and so its prompts, are exact. The
  texts and the seconds are reported (the price of exactness). A remote embedder (an endpoint, paid
  per text) is never called: the plan counts what it would send and refuses (:class:`ExactRefused`).
* Nothing is written: SQLite files are opened read-only (``immutable=1`` when no WAL file exists, so
  not even a ``-wal``/``-shm`` file appears), no cache object that creates its folder is opened, no
  generator, judge or remote reranker is called.

The figures go to :mod:`rag_bench.search.plan` (pure) for money, time and the table.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from omegaconf import DictConfig, OmegaConf

from rag_bench.components import is_null
from rag_bench.embedding.cache import shards_only
from rag_bench.errors import ConfigError
from rag_bench.search.plan import CHARS_PER_TOKEN, EmbedWork, InMemory, JudgeWork, ParseWork, Plan, PromptWork
from rag_bench.storage import BlobStore, checksum, existing_secret, keyed_checksum, readable

log = logging.getLogger(__name__)

FAKE_DIM = 16  # the stand-in vectors' size when no vector of the embedder is cached


def stored_keys(path: Path, table: str, keys: Sequence[str], valid: Any = None,
                keyed: bool = False) -> dict[str, bytes]:
    """The rows of ``keys`` a rag_bench SQLite store holds (checksum and ``valid`` checked, as a
    lookup does), read without writing anything: ``immutable=1`` when no ``-wal`` file exists (then
    the file holds every row), else ``mode=ro``. A missing file holds nothing. ``keyed``: the store's
    checksums are HMACs under its folder's secret (the parse cache); without a secret no row counts."""
    out: dict[str, bytes] = {}
    unique = list(dict.fromkeys(keys))
    if not unique or not path.is_file():
        return out
    secret = existing_secret(path.parent) if keyed else None
    if keyed and secret is None:
        return out

    def intact(key: str, data: bytes, check: str) -> bool:
        made = keyed_checksum(secret, key, data) if secret is not None else checksum(data)
        return hmac.compare_digest(made, str(check))

    wal = path.with_name(path.name + "-wal").exists()
    uri = f"file:{path.resolve().as_posix()}?{'mode=ro' if wal else 'immutable=1'}"
    with readable(path):  # a damaged store: the run's DataError (exit 2, with the repair fix), not a traceback
        conn = sqlite3.connect(uri, uri=True)
        try:
            if not conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (table,)).fetchone():
                return out
            for i in range(0, len(unique), 500):
                part = unique[i:i + 500]
                for key, data, check in conn.execute(
                        f"SELECT key, data, checksum FROM {table} WHERE key IN ({','.join('?' * len(part))})", part):
                    if intact(str(key), bytes(data), check) and (valid is None or valid(data)):
                        out[str(key)] = bytes(data)
        finally:
            conn.close()
    return out


class ReadOnlyStore:
    """A rag_bench store as the plan uses it (the parse cache, a cross-encoder's pair scores): its
    rows read as :func:`stored_keys` reads them, nothing ever stored -- what the plan computes
    (a parse, a pair score) is used and forgotten."""

    def __init__(self, path: Path, table: str, keyed: bool = False) -> None:
        self.path, self.table, self.keyed = path, table, keyed

    def get_bytes(self, keys: Sequence[str]) -> dict[str, bytes]:
        return stored_keys(self.path, self.table, keys, keyed=self.keyed)

    def put_bytes(self, items: Any) -> None:
        return None


class VectorLookup:
    """Read-only lookups of embedding cache keys in one cache folder: its shard files first, then
    ``embeddings.sqlite`` (as :class:`~rag_bench.embedding.cache.EmbeddingCache` looks up), each key
    asked once per plan."""

    def __init__(self, folder: Path) -> None:
        from rag_bench.embedding.cache import SHARD_DIR, ShardSet

        self.folder = folder
        self.shards = ShardSet(folder / SHARD_DIR)  # opens files to read; creates nothing
        self.known: dict[str, bytes | None] = {}

    def get(self, keys: Sequence[str]) -> dict[str, bytes]:
        todo = [k for k in dict.fromkeys(keys) if k not in self.known]
        if todo:
            found = self.shards.get_bytes(todo)
            rest = [k for k in todo if k not in found]
            if not shards_only():  # as the run: with RAG_BENCH_CACHE_SHARDS=1 SQLite is never read
                found.update(stored_keys(self.folder / "embeddings.sqlite", "vectors", rest,
                                         valid=lambda d: len(d) > 0 and len(d) % 4 == 0))
            for k in todo:
                self.known[k] = found.get(k)
        return {k: v for k in keys if (v := self.known.get(k)) is not None}


@dataclass
class Ledger:
    """What the plan's embedders were asked, by embedder: distinct keys found and not found; and
    ``fakes``, every stand-in vector handed out (a cell whose stages received one is inexact).
    ``exact``: missing vectors are computed in memory (``computed``, by key; ``encoded`` texts in
    ``encode_s`` seconds) instead; ``refused``: an exact plan's missing texts of an embedder it does
    not run (a remote endpoint), by embedder."""

    lookups: dict[str, VectorLookup] = field(default_factory=dict)
    new: dict[str, set[str]] = field(default_factory=dict)
    cached: dict[str, set[str]] = field(default_factory=dict)
    fakes: int = 0
    approximate: set[str] = field(default_factory=set)
    exact: bool = False
    computed: dict[str, np.ndarray] = field(default_factory=dict)
    encoded: int = 0
    encode_s: float = 0.0
    load_s: float = 0.0  # loading the models an exact plan encoded with
    refused: dict[str, set[str]] = field(default_factory=dict)

    def lookup(self, folder: Path) -> VectorLookup:
        return self.lookups.setdefault(str(folder), VectorLookup(folder))


def _stand_in(key: str, dim: int) -> np.ndarray:
    """A unit vector from the key's hash: what an inexact cell ranks with (never cached, never shown)."""
    seed = int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "little")
    v = np.random.default_rng(seed).standard_normal(dim).astype(np.float32)
    return v / np.linalg.norm(v)


def runs_locally(inner: Any) -> bool:
    """An embedder an exact plan may run: a local model (sentence-transformers, torch or onnx), free
    but for its seconds. An endpoint (:class:`~rag_bench.embedding.openai_compat.OpenAIEmbedder`: an
    API priced per text, or a server) or any other embedder is not run by a plan."""
    from rag_bench.embedding.sentence_transformer import SentenceTransformerEmbedder

    return isinstance(inner, SentenceTransformerEmbedder)


def reranks_locally(reranker: Any) -> bool:
    """A reranker a plan may run: none, or one of the shipped local ones (a cross-encoder model,
    dense, MMR). A remote service (``rerank_api``: priced per call) or a reranker of the user's
    (which may call anything) is not run by a plan -- an allowlist, not a list of the paid ones."""
    from rag_bench.reranking.cross_encoder import CrossEncoderReranker
    from rag_bench.reranking.dense import DenseReranker
    from rag_bench.reranking.mmr import MmrReranker

    return is_null(reranker) or isinstance(reranker, (CrossEncoderReranker, DenseReranker, MmrReranker))


class ExactRefused(ConfigError):
    """``--plan=exact`` needs vectors of an embedder the plan does not run (exit 2)."""


class PlanEmbedder:
    """An embedder's stand-in for the plan: the real embedder's identity and prefixes give each
    text's cache key; cached vectors are returned as the cache has them, missing ones are counted
    (``ledger.new``) and replaced by stand-ins -- or, in an exact plan (``ledger.exact``) with a
    local model, encoded in memory by the model (:meth:`_encode`). Nothing is stored."""

    def __init__(self, inner: Any, name: str, ledger: Ledger) -> None:
        self._inner, self._name, self._ledger = inner, name, ledger
        folder = _cache_folder(inner)
        self._lookup = ledger.lookup(folder) if folder is not None else None
        self._dim: int | None = None
        self._fake_only = False  # the first vectors asked were all missing: every vector is a stand-in
        ledger.new.setdefault(name, set())
        ledger.cached.setdefault(name, set())

    @property
    def persistent(self) -> bool:
        return self._lookup is not None

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or "_inner" not in self.__dict__:
            raise AttributeError(name)
        return getattr(self._inner, name)

    def usage(self) -> Any:
        from rag_bench.embedding.base import EmbedStats

        return EmbedStats()

    def prime(self, questions: Sequence[str]) -> None:
        """Learn the size of the embedder's vectors before the first lookup, so that stand-ins and
        cached vectors agree: from cached question vectors if any, else (torch sentence-transformers)
        from the model, loaded but not run; else every vector of this embedder is a stand-in."""
        if self._dim is not None:
            return
        from rag_bench.embedding.cache import text_key

        prefix = str(getattr(self._inner, "query_prefix", "") or "")
        found = self._lookup.get([text_key(str(self._inner.identity), prefix, q) for q in questions]) \
            if self._lookup is not None else {}
        sizes = {len(v) // 4 for v in found.values()}
        if sizes:
            self._dim = max(sizes)
        elif getattr(self._inner, "backend", None) == "torch" and hasattr(type(self._inner), "model"):
            self._dim = int(self._inner.model.get_sentence_embedding_dimension())
        elif getattr(self._inner, "dimensions", None):
            self._dim = int(self._inner.dimensions)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._vectors(texts, str(getattr(self._inner, "document_prefix", "") or ""))

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._vectors(texts, str(getattr(self._inner, "query_prefix", "") or ""))

    def _vectors(self, texts: Sequence[str], prefix: str) -> np.ndarray:
        from rag_bench.embedding.cache import text_key

        if not texts:
            return np.zeros((0, self._dim or FAKE_DIM), np.float32)
        identity = str(self._inner.identity)
        keys = [text_key(identity, prefix, t) for t in texts]
        found = self._lookup.get(keys) if self._lookup is not None else {}
        self._ledger.cached[self._name].update(k for k in keys if k in found)
        self._ledger.new[self._name].update(k for k in keys if k not in found)
        computed = self._encode(keys, texts, prefix, found) if self._ledger.exact else {}
        if self._dim is None:
            sizes = {len(v) // 4 for v in found.values()} | {len(v) for v in computed.values()}
            self._dim = max(sizes) if sizes else FAKE_DIM
            self._fake_only = not sizes
        rows = []
        for k in keys:
            data = found.get(k)
            if k in computed:
                rows.append(computed[k])
            elif data is None or self._fake_only or len(data) != 4 * self._dim:
                self._ledger.fakes += 1
                rows.append(_stand_in(k, self._dim))
            else:
                rows.append(np.frombuffer(data, np.float32))
        out = np.stack(rows).astype(np.float32)
        if not getattr(self._inner, "normalize", True):  # as the embedder returns them
            return out
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return (out / np.where(norms == 0, 1, norms)).astype(np.float32)

    def _encode(self, keys: list[str], texts: Sequence[str], prefix: str, found: dict[str, bytes]) -> dict[str, np.ndarray]:
        """An exact plan's vectors for the keys not cached: those encoded earlier in this plan, and the
        rest encoded now, in one call of the model as the embedder makes it (its distinct missing texts,
        prefixed, in order: :meth:`~rag_bench.embedding.sentence_transformer.SentenceTransformerEmbedder._embed`),
        kept in memory only. An embedder the plan does not run: its texts recorded as refused."""
        ledger = self._ledger
        todo: dict[str, str] = {}
        for k, t in zip(keys, texts):
            if k not in found and k not in ledger.computed and k not in todo:
                todo[k] = t
        if todo and not runs_locally(self._inner):
            ledger.refused.setdefault(self._name, set()).update(todo)
            todo = {}
        if todo:
            t0 = time.perf_counter()
            _ = self._inner.encoder if self._inner.backend == "onnx" else self._inner.model  # loaded once per process
            ledger.load_s += time.perf_counter() - t0
            t0 = time.perf_counter()
            vectors = self._inner.encode_raw([prefix + t for t in todo.values()])
            ledger.encode_s += time.perf_counter() - t0
            ledger.encoded += len(todo)
            ledger.computed.update((k, np.asarray(v, np.float32)) for k, v in zip(todo, vectors))
        return {k: ledger.computed[k] for k in keys if k in ledger.computed}


def _cache_folder(inner: Any) -> Path | None:
    """The embedding cache folder an embedder reads (None: its persistent cache is off), found
    without opening the cache (which would create the folder)."""
    path = inner.__dict__.get("_cache_path", "absent")
    if path == "absent":
        cache = inner.__dict__.get("cache")
        path = getattr(cache, "path", None)
    return None if path is None else Path(path).parent


@dataclass
class _Prompts:
    """One generator config's prompts over the plan: exact keys new and cached, bound keys, tokens."""

    name: str
    price_name: str
    named_model: bool
    max_tokens: int | None
    stand_in: bool
    no_cache: bool
    new: dict[str, int] = field(default_factory=dict)  # key -> estimated input tokens
    cached: set[str] = field(default_factory=set)
    bound: dict[str, int] = field(default_factory=dict)
    per_cell: int = 0  # no cache: every cell's prompts
    per_cell_tokens: int = 0
    # The budget's bound of each prompt's input tokens (rag_bench.budget.request_bytes), by the same keys
    new_bytes: dict[str, int] = field(default_factory=dict)
    bound_bytes: dict[str, int] = field(default_factory=dict)
    per_cell_bytes: int = 0
    role: str = "answer"


def _tokens(prompt: Any) -> int:
    return int(round((len(prompt.system) + len(prompt.user)) / CHARS_PER_TOKEN))


def _model_name(node: Any) -> tuple[str, bool]:
    model = node.get("model") if hasattr(node, "get") else None
    named = isinstance(model, str) and bool(model)
    return (str(model) if named else str(node.get("name", "?"))), named


def make(args: list[str], command: str = "", exact: bool = False) -> tuple[Plan, Any, Any]:
    """The plan of ``rag-bench run -m ARGS`` with the price table and the measured rates it is
    printed with (:func:`rag_bench.search.plan.render`). ``exact``: vectors not cached are computed
    in memory (``--plan=exact``); raises :class:`ExactRefused` when they are a remote embedder's."""
    from rag_bench.evaluation.prices import from_config
    from rag_bench.parsing import files as parsing
    from rag_bench.runner import throughput
    from rag_bench.runner.grid import compose_cells, grid_overrides
    from rag_bench.storage import default_cache_dir

    overrides, jobs = grid_overrides(args)
    cfgs = compose_cells([[o for o in job if not o.lstrip("+~").startswith("hydra")] for job in jobs])
    counting = _Counting()
    counting.ledger.exact = exact
    store = parsing.cache_store
    # Documents a parser reads (PDF, HTML, Word) are parsed from the parse cache, or parsed here and
    # not stored: the plan writes no cache entry.
    parsing.cache_store = lambda: ReadOnlyStore(default_cache_dir() / "parses.sqlite", "parses", keyed=parsing.ParseCache.keyed)  # type: ignore[assignment,return-value]
    try:
        for cfg in cfgs:
            counting.cell(cfg)
    finally:
        parsing.cache_store = store
    if counting.ledger.refused:
        raise ExactRefused(_refusal(counting.ledger.refused, counting.embedder_urls, args))
    plan = counting.plan(command or "rag-bench run -m " + " ".join(args), cfgs, jobs)
    return plan, from_config(cfgs[0]) if cfgs else None, throughput.rates(throughput.read())


class _Counting:
    """The plan's state over the grid's cells (one SharedWork, as a sweep's process has)."""

    def __init__(self) -> None:
        from rag_bench.memo import SharedWork

        self.work = SharedWork()
        self.ledger = Ledger()
        self.embedders: dict[int, PlanEmbedder] = {}
        self.datasets: dict[str, Any] = {}
        self.parses: dict[str, ParseWork] = {}
        self.done = 0
        self.chunkings: set[str] = set()
        self.indexes: set[str] = set()
        self.tainted: set[str] = set()  # stage keys whose results rest on stand-in vectors
        self.prompts: dict[str, _Prompts] = {}
        self.judges: dict[str, set[Any]] = {}
        self.judge_bound: dict[str, set[Any]] = {}
        self.judge_names: dict[str, str] = {}  # judge config -> how the throughput history names it
        self.reused = 0  # cells the cell cache would serve
        self.cache_hits: dict[str, dict[str, bool]] = {}  # generation cache folder -> key -> found
        self.notes: list[str] = []
        self.questions: dict[str, int] = {}
        self.keys: dict[str, str] = {}  # embedder name -> price name
        self.named: dict[str, bool] = {}
        self.loose: dict[str, bool] = {}  # embedder name -> persistent cache on
        self.embedder_urls: dict[str, str] = {}  # embedder name -> where it is (an endpoint's URL)

    def dataset(self, cfg: DictConfig) -> Any:
        from rag_bench.runner.config import dataset_path
        from rag_bench.runner.main import load_dataset_of

        where = repr((str(dataset_path(cfg).resolve()), str(cfg.dataset.split),
                      OmegaConf.to_container(cfg.parser, resolve=True) if cfg.get("parser") is not None else None))
        if where not in self.datasets:
            started = time.perf_counter()
            self.datasets[where] = load_dataset_of(cfg)
            report = self.datasets[where].parse
            if report is not None:  # its document files: the cache's, or parsed here (timed: the run does it again)
                self.parses[where] = ParseWork(report.parser, report.documents, report.parsed,
                                               time.perf_counter() - started if report.parsed else 0.0)
        return self.datasets[where]

    def embedder(self, parts: Any, cfg: DictConfig) -> None:
        """The cell's embedder (one checked embedder per config, shared by its stages) made to
        answer from the cache only."""
        from rag_bench.pipeline.stages import CheckedEmbedder
        from rag_bench.runner.grid import uses_embedder
        from rag_bench.runner.throughput import component_key

        checked = parts.embedder
        inner = checked._inner if isinstance(checked, CheckedEmbedder) else None
        if inner is None:
            return
        if not isinstance(inner, PlanEmbedder):
            name = component_key(cfg.embedder)
            inner = checked._inner = PlanEmbedder(inner, name, self.ledger)
            self.keys[name], self.named[name] = _model_name(cfg.embedder)
            self.loose[name] = inner.persistent
            self.embedder_urls[name] = str(getattr(inner, "url", "") or type(inner._inner).__name__)
        if uses_embedder(cfg):  # a bm25 grid never loads the model
            inner.prime([q.question for q in self.dataset(cfg).questions])

    def stage(self, key: str, tainted: bool, run: Any) -> tuple[Any, bool]:
        """Run a stage; its result is inexact when its input was, when it handed out a stand-in
        vector, or when it was computed earlier from one (the same key, shared)."""
        before = self.ledger.fakes
        result = run()
        tainted = tainted or self.ledger.fakes > before or key in self.tainted
        if tainted:
            self.tainted.add(key)
        return result, tainted

    def served(self, cfg: DictConfig, fingerprint: str) -> bool:
        """Whether the run would write this cell from the cell cache (:func:`rag_bench.runner.reuse.result`:
        its key, looked up read-only, the row's HMAC checked)."""
        from rag_bench.cell_cache import FILE, CellStore
        from rag_bench.runner import reuse
        from rag_bench.storage import default_cache_dir

        if not reuse.enabled():
            return False
        row = reuse.cell_key(cfg, fingerprint)
        return row in stored_keys(default_cache_dir() / FILE, CellStore.table, [row], keyed=CellStore.keyed)

    def cell(self, cfg: DictConfig) -> None:
        from pathlib import Path

        from rag_bench import memo
        from rag_bench.cells import is_done
        from rag_bench.pipeline import stages
        from rag_bench.runner.config import build_cell, cell_id, validate

        validate(cfg)
        dataset = self.dataset(cfg)
        self.questions[dataset.fingerprint] = len(dataset.questions)
        if is_done(Path(str(cfg.output.root)) / str(cfg.experiment.name) / cell_id(cfg, dataset.fingerprint)):
            self.done += 1
            return
        if self.served(cfg, dataset.fingerprint):
            self.reused += 1
            return
        parts = build_cell(cfg, self.work)
        self.embedder(parts, cfg)
        store = getattr(parts.reranker, "_store", None)
        if isinstance(store, BlobStore):  # a cross-encoder's pair scores: read, never stored by the plan
            parts.reranker._store = ReadOnlyStore(store.path, store.table, keyed=store.keyed)
        s = parts.settings
        questions = list(dataset.questions)
        chunk_key = [dataset.corpus_key, *parts.identity["chunker"]]
        ck = memo.key(*chunk_key)
        chunked, taint = self.stage(ck, False, lambda: stages.chunk(dataset=dataset, key=ck, chunker=parts.chunker,
                                                                     work=self.work))
        self.chunkings.add(ck)
        ik = memo.key(dataset.corpus_key, chunk_key, *parts.identity["retriever"], s.include_archived)
        indexed, taint = self.stage(ik, taint, lambda: stages.index(
            dataset=dataset, chunked=chunked, include_archived=s.include_archived, work=self.work,
            retriever=parts.retriever, key=ik))
        self.indexes.add(ik)
        reranker = parts.reranker
        depth = s.depth
        qk = memo.key(dataset.fingerprint, s.split)
        queried, searched_key, taint = self.query(cfg, parts, questions, qk, taint)

        def retrieve() -> Any:
            stages.tune(indexed=indexed, questions=questions, work=self.work, questions_key=qk)
            return stages.retrieve(indexed=indexed, questions=questions, depth=depth, work=self.work,
                                   questions_key=searched_key, queried=queried)

        retrieved, taint = self.stage(memo.key(indexed.key, depth, searched_key), taint, retrieve)
        if not reranks_locally(reranker):  # a paid service (or a reranker of the user's): never called by a plan
            taint = True
            reranked_rankings, rank_key = retrieved.rankings, memo.key(retrieved.key, "remote")
            self.notes.append(f"reranker {type(reranker).__name__} is not one the plan runs (a remote service, or a "
                              "reranker of your own): its cells' prompts are bounds")
        else:
            new_before = sum(len(v) for v in self.ledger.new.values())
            was = taint
            reranked, taint = self.stage(memo.key(retrieved.key, memo.key(*parts.identity["reranker"])), taint,
                                         lambda: stages.rerank(reranker=reranker, key=memo.key(*parts.identity["reranker"]),
                                                               retrieved=retrieved, indexed=indexed,
                                                               questions=questions, work=self.work))
            if was and sum(len(v) for v in self.ledger.new.values()) > new_before:
                self.ledger.approximate.update(self.ledger.new)  # texts asked on rankings from stand-ins
            reranked_rankings, rank_key = reranked.rankings, reranked.key
        if is_null(parts.generator):
            return
        self.answer(cfg, parts, questions, reranked_rankings, indexed.searchable, chunked.parents, rank_key, taint)

    def query(self, cfg: DictConfig, parts: Any, questions: list[Any], qk: str, taint: bool) -> tuple[Any, str, bool]:
        """The cell's query transform: a transform without a model is run (what the retriever then
        searches is exact); a model-written one's prompts (one per question) are counted exactly,
        as the generator's are -- looked up in the generation cache, never sent -- and its
        rankings, which depend on the replies, are then a bound. Returns what :func:`stages.retrieve`
        takes (``queried``, the rankings' question key) and the taint."""
        from rag_bench import memo
        from rag_bench.pipeline import stages
        from rag_bench.runner.throughput import transform_key

        transform = parts.query
        if transform is None or is_null(transform):
            return None, qk, taint
        key = memo.key(qk, *parts.identity["query"])
        if not callable(getattr(transform, "inputs", None)):  # a model's transform says what it sends (LlmTransform.inputs)
            if getattr(transform, "generator", None) is not None:
                self.notes.append(f"query transform {type(transform).__name__} is not one the plan runs (a transform "
                                  "of your own with a model): its calls are not counted and its cells' prompts are "
                                  "bounds")
                return None, key, True
            return stages.query(transform=transform, questions=questions, key=key, work=self.work), key, taint
        self.count(cfg, transform.generator, "query", str(transform_key(cfg)), transform.inputs(questions))
        self.notes.append(f"query={cfg.query.name}: what the retriever searches is the model's reply, so the prompts "
                          "and judgements after it are bounds")
        return None, key, True

    def count(self, cfg: DictConfig, generator: Any, role: str, name: str, items: list[Any],
              bound_keys: list[str] | None = None) -> list[str]:
        """Count what ``generator`` is sent for ``items`` in the plan's slot of ``role`` (``answer``,
        ``query``) and ``name`` (how the throughput history names it): the run's
        own cache keys (:func:`~rag_bench.generation.base.generation_keys`) looked up read-only, each
        request's bytes as the budget bounds them (:func:`~rag_bench.generation.base.request_bytes`).
        ``bound_keys``: the items rest on stand-in vectors, so they are a bound under these keys
        (one per question and distinct ranking). Returns the keys the judge's count is keyed by."""
        from rag_bench.generation.base import checked_traits, generation_keys, generator_identity, request_bytes
        from rag_bench.storage import default_cache_dir

        keys = generation_keys(generator, items)
        price_name, named = _model_name(cfg.generator)
        max_tokens = cfg.generator.get("max_tokens")
        slot = self.prompts.setdefault(f"{role}\0{name}\0{generator_identity(generator)}", _Prompts(
            name, price_name, named, int(max_tokens) if isinstance(max_tokens, int) else None,
            checked_traits(generator).stand_in, keys is None, role=role))
        tokens = [_tokens(it.prompt) for it in items]
        sent = [request_bytes(generator, it) for it in items]
        if keys is None:  # not cached: every cell's items are calls
            slot.per_cell += len(items)
            slot.per_cell_tokens += sum(tokens)
            slot.per_cell_bytes += sum(sent)
            return bound_keys or []
        if bound_keys is not None:
            for k, t, b in zip(bound_keys, tokens, sent):
                slot.bound[k], slot.bound_bytes[k] = t, b
            return bound_keys
        folder = str(default_cache_dir())
        known = self.cache_hits.setdefault(folder, {})
        todo = [k for k in dict.fromkeys(keys) if k not in known]
        if todo:
            found = stored_keys(Path(folder) / "generations.sqlite", "generations", todo)
            known.update({k: k in found for k in todo})
        for k, t, b in zip(keys, tokens, sent):
            if known[k]:
                slot.cached.add(k)
            else:
                slot.new[k], slot.new_bytes[k] = t, b
        return keys

    def answer(self, cfg: DictConfig, parts: Any, questions: list[Any], rankings: Any, passages: Any,
               parents: Any, rank_key: str, taint: bool) -> None:
        """The cell's prompts, built as the generator stage builds them
        (:func:`~rag_bench.pipeline.stages.generation_inputs`), counted (:meth:`count`); and the
        judgements of its answers."""
        from rag_bench.generation.base import generator_identity
        from rag_bench.pipeline import stages
        from rag_bench.runner.throughput import component_key

        s = parts.settings
        items = stages.generation_inputs(questions, rankings, passages, stages.context_rule(s, parents))
        by_question = [f"{rank_key}|{s.k}|{s.token_budget}|{s.expand_parents}|{q.qid}" for q in questions]
        name = component_key(cfg.generator)
        keys = self.count(cfg, parts.generator, "answer", name, items, by_question if taint else None) or by_question
        judge = parts.judge
        if judge is None or is_null(judge):
            return
        judge_key = repr(OmegaConf.to_container(cfg.judge, resolve=True))
        self.judge_names[judge_key] = component_key(cfg.judge)
        identity = generator_identity(parts.generator)
        target = self.judge_bound if taint else self.judges
        target.setdefault(judge_key, set()).update((identity, k) for k in keys)
        self.judges.setdefault(judge_key, set())

    def plan(self, command: str, cfgs: list[DictConfig], jobs: list[list[str]]) -> Plan:
        embedders = tuple(EmbedWork(name, self.keys[name], self.named[name], len(self.ledger.new[name]),
                                    len(self.ledger.cached[name]), name in self.ledger.approximate,
                                    self.loose[name])
                          for name in self.ledger.new if self.ledger.new[name] or self.ledger.cached[name])
        prompts = []
        for p in self.prompts.values():
            if p.no_cache:
                prompts.append(PromptWork(p.name, p.price_name, p.named_model, p.per_cell, 0, 0, p.per_cell_tokens, 0,
                                          p.max_tokens, p.stand_in, True, p.per_cell_bytes, 0, p.role))
            else:
                bound = {k: v for k, v in p.bound.items()}
                prompts.append(PromptWork(p.name, p.price_name, p.named_model, len(p.new), len(p.cached), len(bound),
                                          sum(p.new.values()), sum(bound.values()), p.max_tokens, p.stand_in, False,
                                          sum(p.new_bytes.values()), sum(p.bound_bytes.values()), p.role))
        judges = tuple(JudgeWork(self.judge_names[k], len(v) + len(self.judge_bound.get(k, ())),
                                 len(self.judge_bound.get(k, ())), _calls_each(k)) for k, v in self.judges.items())
        questions = max(self.questions.values(), default=0)
        in_memory = InMemory(self.ledger.encoded, self.ledger.encode_s, self.ledger.load_s) if self.ledger.exact else None
        return Plan(command, len(cfgs), self.done, len(self.chunkings), len(self.indexes), questions,
                    tuple(embedders), tuple(prompts), judges, *_mode(cfgs, jobs, self),
                    tuple(dict.fromkeys(self.notes)), in_memory, tuple(self.parses.values()),
                    OmegaConf.select(cfgs[0], "budget.usd", default=None) if cfgs else None, self.reused)


def _refusal(refused: dict[str, set[str]], where: dict[str, str], args: list[str]) -> str:
    """Why an exact plan stops: the texts it would have to send to embedders it does not run."""
    what = "; ".join(f"{len(keys):,} texts not cached for embedder {name} ({where.get(name, '?')})"
                     for name, keys in refused.items())
    given = " ".join(a for a in args if not a.startswith("hydra"))
    return (f"--plan=exact computes missing vectors with the embedder itself, and {what}: that is a remote "
            "endpoint (priced per text, or a server) the plan does not call -- the run would send and pay for "
            "the same texts again -- fix: `rag-bench run -m ... --plan` (those cells' prompts are then a bound, "
            f"\"at most\"), or embed the grid's texts into the cache first (`rag-bench embed -m {given}`, what the "
            "run would pay for anyway), then --plan=exact")


def _calls_each(key: str) -> int:
    """The calls one judgement makes: its metrics x its samples (1 when the config says neither)."""
    import ast

    try:
        node = ast.literal_eval(key)
    except (ValueError, SyntaxError):
        return 1
    metrics = node.get("metrics")
    return max(len(metrics) if isinstance(metrics, list) else 1, 1) * max(int(node.get("samples") or 1), 1)


def _mode(cfgs: list[DictConfig], jobs: list[list[str]], counting: _Counting) -> tuple[str, tuple[str, ...]]:
    """The chosen search mode and what it computes at most (:meth:`rag_bench.search.base.Strategy.bound`)."""
    from rag_bench.search.base import strategy

    if not cfgs:
        return "grid", ()
    chosen = strategy(cfgs[0].get("search"))
    questions = max(counting.questions.values(), default=0)
    dataset = next(iter(counting.datasets.values()), None)
    return chosen.name, tuple(chosen.bound(jobs, questions, dataset.questions if dataset is not None else ()))
