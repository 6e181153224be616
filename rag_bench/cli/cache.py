"""``rag-bench cache``: check the persistent caches' checksums (the parse cache's keyed by the cache's
secret: rag_bench.storage) and the embedding shards."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rag_bench.cli.common import fail, say
from rag_bench.cli.table import Command
from rag_bench.errors import RagBenchError

# The persistent stores a cache folder may hold, for `cache verify`.
CACHE_FILES = ("embeddings.sqlite", "generations.sqlite", "judgements.sqlite", "rerank_pairs.sqlite",
               "parses.sqlite", "cells.sqlite")


def stores() -> dict[str, type]:
    """Each store's class by its file name (imported when a cache is verified, not at start-up)."""
    from rag_bench.embedding.cache import EmbeddingCache
    from rag_bench.generation.base import GenerationCache
    from rag_bench.judging.ragas_judge import JudgeCache
    from rag_bench.parsing.files import ParseCache
    from rag_bench.reranking.cross_encoder import PairScoreCache
    from rag_bench.runner.reuse import CellStore

    return dict(zip(CACHE_FILES, (EmbeddingCache, GenerationCache, JudgeCache, PairScoreCache, ParseCache, CellStore),
                    strict=True))


def run(argv: list[str]) -> int:
    """``rag-bench cache`` with the arguments ``argv``; its exit code."""
    from rag_bench.embedding.cache import SHARD_DIR, EmbeddingCache, ShardSet
    from rag_bench.errors import DataError
    from rag_bench.storage import check_cache_dir, default_cache_dir, remove_store

    p = argparse.ArgumentParser(prog="rag-bench cache", description="Inspect the persistent caches (embeddings, "
                                "generations, judge scores, reranker scores, parses).")
    p.add_argument("action", choices=["verify"], help="verify: check every entry's checksum (the parse cache's: "
                   "keyed by the cache's secret, so a forged entry is corrupt) and every embedding shard file "
                   "(embeddings.shards/)")
    p.add_argument("--dir", default=None, help="cache folder (default $RAG_BENCH_CACHE or ~/.cache/rag_bench)")
    p.add_argument("--repair", action="store_true", help="delete corrupt entries, cache files SQLite cannot "
                   "read and damaged or disagreeing shard files (they are recomputed on use)")
    a = p.parse_args(argv)
    try:
        path = Path(a.dir).expanduser() if a.dir else default_cache_dir()
        check_cache_dir(path, "--dir" if a.dir else "cache folder")
    except RagBenchError as exc:
        return fail(exc)
    files = [name for name in CACHE_FILES if (path / name).is_file()]
    shards = ShardSet(path / SHARD_DIR).files()
    if not files and not shards:
        return fail(f"{path}: no cache here (none of {', '.join(CACHE_FILES)}, {SHARD_DIR}/) -- fix: pass --dir "
                     "or set RAG_BENCH_CACHE")
    code = 0
    unreadable = set()
    for name in files:
        db = path / name
        store = stores()[name](db)
        if store.keyed:
            try:
                store.secret()  # an untrusted secret is the cache folder's problem, not the file's: nothing removed
            except DataError as exc:
                store.close()
                say(f"error: {exc}", file=sys.stderr)
                code = 2
                unreadable.add(name)
                continue
        try:
            ok, bad = store.verify(repair=a.repair)
        except DataError as exc:  # the file itself is damaged: no entry of it can be trusted
            store.close()
            if not a.repair:
                say(f"error: {exc}", file=sys.stderr)
                code = 2
                unreadable.add(name)
                continue
            remove_store(db)
            say(f"{db}: damaged file removed (SQLite could not read it); its entries are recomputed on use")
            continue
        finally:
            store.close()
        state = "repaired: deleted" if a.repair and bad else "corrupt"
        say(f"{db}: {ok} entries ok, {bad} {state}")
        if bad and not a.repair:
            code = max(code, 1)
    if shards:
        # A shard file is read before SQLite and overrides it: a bad one is an error, not a count.
        cache = EmbeddingCache(path / "embeddings.sqlite")
        ok, bad_shards = cache.verify_shards(repair=a.repair, against_sqlite="embeddings.sqlite" not in unreadable)
        cache.close()
        print(f"{path / SHARD_DIR}: {ok} vectors ok in {len(shards) - len(bad_shards)} shard file(s)"
              + (f", {len(bad_shards)} deleted" if a.repair and bad_shards else ""))
        for shard, why in bad_shards:
            if a.repair:
                print(f"{shard}: deleted ({why}); its vectors are recomputed on use")
            else:
                print(f"error: {shard}: {why} -- fix: run `rag-bench cache verify --repair --dir {path}` (deletes the "
                      "shard file; its vectors are recomputed on use)", file=sys.stderr)
                code = 2
    return code


COMMAND = Command("cache", "verify [--repair]", "check the persistent caches' checksums and the embedding shards", run)
