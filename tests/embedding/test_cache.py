"""Embedding cache: round trip, checksums, verify/repair, two concurrent writers, SIGKILL mid-write."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from rag_bench.embedding.cache import EmbeddingCache, text_key, vector_bytes, vector_from_bytes


def put_vectors(cache: EmbeddingCache, items) -> None:
    """Store vectors as the embedders do (one transaction: a kill leaves all of them or none)."""
    cache.put_bytes((k, vector_bytes(v)) for k, v in items)


def get_vectors(cache: EmbeddingCache, keys) -> dict[str, np.ndarray]:
    """The vectors found for ``keys`` (missing and corrupt keys are absent), as the embedders read them."""
    return {k: vector_from_bytes(b) for k, b in cache.get_bytes(keys).items()}


def vec_for(key: str, dim: int = 64) -> np.ndarray:
    """Deterministic vector of a key: any reader can check what it got."""
    return np.random.default_rng(int(key[:8], 16)).normal(size=dim).astype(np.float32)


def test_round_trip_and_keys(tmp_path):
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    keys = [text_key("m@1", "", f"text {i}") for i in range(1200)]  # > one SQL batch
    put_vectors(cache, ((k, vec_for(k)) for k in keys))
    got = get_vectors(cache, keys + ["absent"])
    assert len(got) == 1200 and "absent" not in got
    assert all(np.array_equal(got[k], vec_for(k)) for k in keys)
    assert text_key("m@1", "query: ", "x") != text_key("m@1", "", "query: x")  # prefix is its own part
    assert text_key("m@1", "", "x") != text_key("m@2", "", "x")


def test_corrupt_row_is_never_returned_and_verify_repairs(tmp_path):
    path = tmp_path / "c.sqlite"
    cache = EmbeddingCache(path)
    keys = [text_key("m", "", str(i)) for i in range(10)]
    put_vectors(cache, ((k, vec_for(k)) for k in keys))
    with sqlite3.connect(path) as conn:  # flip bytes behind the cache's back
        data = bytearray(conn.execute("SELECT data FROM vectors WHERE key=?", (keys[3],)).fetchone()[0])
        data[0] ^= 0xFF
        conn.execute("UPDATE vectors SET data=? WHERE key=?", (bytes(data), keys[3]))
    assert EmbeddingCache(path).verify() == (9, 1)
    fresh = EmbeddingCache(path)
    got = get_vectors(fresh, keys)
    assert keys[3] not in got and len(got) == 9 and fresh.corrupt == 1
    assert EmbeddingCache(path).verify() == (9, 0)  # the corrupt row was dropped on read


WRITER = textwrap.dedent("""
    import sys, numpy as np
    from rag_bench.embedding.cache import EmbeddingCache, text_key
    from tests.embedding.test_cache import put_vectors, vec_for
    path, start, n, batch = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    cache = EmbeddingCache(path)
    keys = [text_key("m", "", str(i)) for i in range(start, start + n)]
    for i in range(0, n, batch):
        put_vectors(cache, ((k, vec_for(k, 384)) for k in keys[i:i + batch]))
    print("done", flush=True)
""")


def spawn(tmp_path, *args) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path / "c.sqlite"), *map(str, args)],
                            cwd=os.getcwd(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_two_processes_write_at_once(tmp_path):
    a, b = spawn(tmp_path, 0, 3000, 50), spawn(tmp_path, 1500, 3000, 70)  # 1,500 keys overlap
    for p in (a, b):
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0 and "done" in out, err
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    assert len(cache) == 4500 and cache.verify() == (4500, 0)
    keys = [text_key("m", "", str(i)) for i in range(4500)]
    got = get_vectors(cache, keys)
    assert all(np.array_equal(got[k], vec_for(k, 384)) for k in keys)


def test_kill_during_writes_leaves_no_corrupt_entry(tmp_path):
    p = spawn(tmp_path, 0, 200_000, 2000)
    deadline = time.time() + 60
    path = tmp_path / "c.sqlite"
    while time.time() < deadline:  # kill once two batches are committed, mid-stream
        try:
            if path.exists() and len(EmbeddingCache(path)) >= 4000:
                break
        except sqlite3.OperationalError:
            pass  # the writer is creating the schema
        time.sleep(0.05)
    p.send_signal(signal.SIGKILL)
    _, err = p.communicate(timeout=30)
    # Failed once in a fresh-clone CI run with exit code 1 (the writer raised before the kill,
    # under load); its stderr is shown so the next occurrence says why.
    assert p.returncode == -signal.SIGKILL, err[-3000:]
    cache = EmbeddingCache(path)
    ok, bad = cache.verify()
    assert bad == 0 and 0 < ok < 200_000 and ok % 2000 == 0, ok  # whole batches only
    keys = [text_key("m", "", str(i)) for i in range(ok + 2000)]
    got = get_vectors(cache, keys)
    assert len(got) == ok and all(np.array_equal(v, vec_for(k, 384)) for k, v in got.items())


@pytest.mark.parametrize("n", [0, 1])
def test_empty_and_single(tmp_path, n):
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    put_vectors(cache, [])
    keys = [text_key("m", "", "a")][:n]
    put_vectors(cache, ((k, vec_for(k)) for k in keys))
    assert len(get_vectors(cache, keys)) == n


def test_cli_cache_verify(tmp_path, capsys):
    from rag_bench.cli import main as cli

    cache = EmbeddingCache(tmp_path / "embeddings.sqlite")
    keys = [text_key("m", "", str(i)) for i in range(4)]
    put_vectors(cache, ((k, vec_for(k)) for k in keys))
    assert cli(["cache", "verify", "--dir", str(tmp_path)]) == 0
    assert "4 entries ok, 0 corrupt" in capsys.readouterr().out
    with sqlite3.connect(tmp_path / "embeddings.sqlite") as conn:
        conn.execute("UPDATE vectors SET checksum='0' WHERE key=?", (keys[0],))
    assert cli(["cache", "verify", "--dir", str(tmp_path)]) == 1
    assert cli(["cache", "verify", "--dir", str(tmp_path), "--repair"]) == 0
    assert "3 entries ok, 1 repaired" in capsys.readouterr().out
    assert cli(["cache", "verify", "--dir", str(tmp_path / "none")]) == 2
