"""Process-wide switches, read from the environment once, by an entry point.

``RAG_BENCH_SHARE=0`` turns all sharing off -- the in-process caches of a sweep and the persistent
generation, rerank-pair and embedding memos, and the MLflow store template -- so every cell is
built from scratch (the "naive" arm of ``benchmarks/sweep.py``, and a test that sharing never
changes a result). ``RAG_BENCH_CACHE_SHARDS=1`` writes new vectors to shard files only (cluster
jobs that share a cache folder, docs/cluster.md). ``RAG_BENCH_STOCK_HYDRA=1`` runs stock Hydra
instead of the speed wing (:mod:`rag_bench.fast`). ``RAG_BENCH_REUSE=0`` computes every cell even
when the cache holds its result (:mod:`rag_bench.runner.reuse`).

An entry point (the CLI, the Hydra task function, the background finisher, a cluster job) calls
:func:`configure` with :meth:`Switches.from_environment`; code below it reads :func:`current`,
never the environment. A library call with no entry point reads the environment when asked
(:func:`current` configures nothing).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

SHARE_ENV = "RAG_BENCH_SHARE"
SHARDS_ENV = "RAG_BENCH_CACHE_SHARDS"
STOCK_ENV = "RAG_BENCH_STOCK_HYDRA"
REUSE_ENV = "RAG_BENCH_REUSE"
_TRUE = {"1", "true", "yes", "on"}


@dataclass(frozen=True)
class Switches:
    """``share``: work and caches are shared (``RAG_BENCH_SHARE``, default on); ``cache_shards``:
    new vectors go to shard files only (``RAG_BENCH_CACHE_SHARDS``, default off); ``stock``: stock
    Hydra, without the speed wing (``RAG_BENCH_STOCK_HYDRA``, default off); ``reuse``: a cell the
    cache holds is served from it (``RAG_BENCH_REUSE``, default on; never without ``share``)."""

    share: bool = True
    cache_shards: bool = False
    stock: bool = False
    reuse: bool = True

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> Switches:
        """The switches the environment sets (``os.environ`` by default)."""
        env = os.environ if environ is None else environ
        return cls(share=env.get(SHARE_ENV, "1") != "0",
                   cache_shards=env.get(SHARDS_ENV, "").strip().lower() in _TRUE,
                   stock=env.get(STOCK_ENV, "").strip().lower() not in ("", "0", "false", "no"),
                   reuse=env.get(REUSE_ENV, "1").strip().lower() not in ("0", "false", "no", "off"))


# The switches an entry point configured (None: none did -- a library call). Set by configure(),
# read by current(): the one process-wide setting, and what a test sets instead of the environment.
_CONFIGURED: Switches | None = None


def configure(switches: Switches) -> Switches:
    """Set the process's switches (an entry point calls this once, with the environment's)."""
    global _CONFIGURED
    _CONFIGURED = switches
    return switches


def current() -> Switches:
    """The switches configured by the entry point (the environment's, read now, when none did)."""
    return _CONFIGURED if _CONFIGURED is not None else Switches.from_environment()
