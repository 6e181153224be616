"""The immutable shard files of the embedding cache (rag_bench.embedding.cache.ShardSet): written
whole or not at all, read by every process, safe with several writers at once, a damaged file
skipped (its vectors recomputed); RAG_BENCH_CACHE_SHARDS=1 keeps SQLite closed."""

from __future__ import annotations

import multiprocessing as mp
from pathlib import Path

import numpy as np
import pytest

from rag_bench import switches
from rag_bench.embedding.cache import SHARD_DIR, EmbeddingCache, ShardSet, text_key, vector_bytes


def _items(lo: int, hi: int, dim: int = 8) -> list[tuple[str, bytes]]:
    rng = np.random.default_rng(lo)
    return [(text_key("m", "", str(i)), vector_bytes(rng.random(dim))) for i in range(lo, hi)]


def _writer(folder: str, lo: int) -> None:
    ShardSet(folder).put_bytes(_items(lo, lo + 300), name=f"w{lo}")


def test_shards_round_trip_and_sqlite_fallback(tmp_path):
    cache = EmbeddingCache(tmp_path / "embeddings.sqlite")
    a, b = _items(0, 500), _items(500, 800)
    cache.shards.put_bytes(a, name="phase1-x-001of001")
    cache.put_bytes(b)  # the local default: SQLite
    got = cache.get_bytes([k for k, _ in a + b] + ["not-a-hex-key"])
    assert got == dict(a + b)
    assert [p.name.startswith("phase1-x-001of001-") for p in cache.shards.files()] == [True]


def test_concurrent_writers_each_write_their_own_file(tmp_path):
    folder = tmp_path / SHARD_DIR
    ctx = mp.get_context("fork")
    procs = [ctx.Process(target=_writer, args=(str(folder), lo)) for lo in (0, 300, 600)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0, 0]
    assert len(list(folder.glob("*.vecs"))) == 3 and not list(folder.glob(".*"))
    want = dict(_items(0, 300) + _items(300, 600) + _items(600, 900))
    assert ShardSet(folder).get_bytes(list(want)) == want


def test_damaged_shard_is_skipped_not_served(tmp_path, caplog):
    shards = ShardSet(tmp_path)
    [path] = shards.put_bytes(_items(0, 50))
    data = bytearray(path.read_bytes())
    data[100] ^= 0xFF  # one flipped bit in a key
    path.write_bytes(bytes(data))
    assert ShardSet(tmp_path).get_bytes([k for k, _ in _items(0, 50)]) == {}
    assert "checksum mismatch" in caplog.text
    ok, bad = ShardSet(tmp_path).verify()
    assert ok == 0 and [(p, why.split(":")[0]) for p, why in bad] == [(path, "damaged")]
    Path(path.with_name(path.name[:-5] + "-cut.vecs")).write_bytes(bytes(data[:-10]))  # truncated: also skipped
    assert ShardSet(tmp_path).get_bytes([k for k, _ in _items(0, 50)]) == {}


def test_failed_write_leaves_no_file(tmp_path):
    shards = ShardSet(tmp_path)
    with pytest.raises(ValueError, match="float32"):
        shards.put_bytes([(text_key("m", "", "x"), b"abc")])
    assert list(tmp_path.iterdir()) == []


def test_shards_only_never_opens_sqlite(tmp_path, monkeypatch):
    monkeypatch.setattr(switches, "_CONFIGURED", switches.Switches(cache_shards=True))
    cache = EmbeddingCache(tmp_path / "embeddings.sqlite")
    items = _items(0, 20)
    cache.put_bytes(items)
    assert cache.get_bytes([k for k, _ in items]) == dict(items)
    assert len(cache.shards.files()) == 1 and not (tmp_path / "embeddings.sqlite").exists()


def test_a_shard_never_overrides_sqlite_with_vectors_of_another_size(tmp_path, caplog):
    cache = EmbeddingCache(tmp_path / "embeddings.sqlite")
    items = _items(0, 10)
    cache.put_bytes(items)
    keys = [k for k, _ in items]
    [forged] = cache.shards.put_bytes([(k, vector_bytes(np.ones(3))) for k in keys])  # all keys, valid checksum
    assert cache.get_bytes(keys) == dict(items)  # SQLite's entries, not the shard's
    assert f"cache shard {forged} not used" in caplog.text and "disagree in size" in caplog.text
    ok, bad = EmbeddingCache(tmp_path / "embeddings.sqlite").verify_shards()
    assert ok == 0 and [p for p, _ in bad] == [forged] and "size 3 where embeddings.sqlite has size 8" in bad[0][1]
    EmbeddingCache(tmp_path / "embeddings.sqlite").verify_shards(repair=True)
    assert cache.shards.files() == []


def test_a_lookup_returns_vectors_of_one_size(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("RAG_BENCH_CACHE_SHARDS", "1")
    cache = EmbeddingCache(tmp_path / "embeddings.sqlite")
    items = _items(0, 10)
    [most] = cache.shards.put_bytes(items[:8])
    [odd] = cache.shards.put_bytes([(k, vector_bytes(np.ones(3))) for k, _ in items[8:]])
    got = cache.get_bytes([k for k, _ in items])
    assert got == dict(items[:8]) and f"cache shard {odd} not used" in caplog.text  # two texts recomputed
    [dup] = cache.shards.put_bytes([(items[0][0], vector_bytes(np.ones(5)))])  # one text, two sizes
    ok, bad = cache.verify_shards()  # which of the two is right is unknown: both are reported
    assert [p for p, _ in bad] == sorted([most, dup]) and ok == 2 and "for the same texts" in bad[0][1]
