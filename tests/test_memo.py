"""rag_bench.memo.Lru: a value made once per key, from the arguments given apart from ``make``."""

from __future__ import annotations

from rag_bench.memo import Lru


def test_get_or_makes_from_the_arguments_once_per_key() -> None:
    calls: list[tuple[int, int]] = []

    def add(a: int, b: int) -> int:
        calls.append((a, b))
        return a + b

    memo = Lru(2, pure=True)
    assert memo.get_or("k", add, 2, 3) == 5
    assert memo.get_or("k", add, 7, 7) == 5  # a hit: make is not called again
    assert calls == [(2, 3)]


def test_get_or_without_arguments_and_the_oldest_dropped() -> None:
    memo = Lru(2, pure=True)
    for key in "abc":
        memo.get_or(key, lambda key=key: key.upper())
    memo.get_or("b", lambda: "never")  # b used last: a is gone, then c is the oldest
    assert list(memo.items()) == [("c", "C"), ("b", "B")]
