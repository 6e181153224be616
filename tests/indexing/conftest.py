"""Shared by the index tests: random unit vectors (rows and queries) drawn from a fixed seed."""

from __future__ import annotations

import numpy as np
import pytest


def unit(rows: np.ndarray) -> np.ndarray:
    """The rows scaled to length 1, as float32 (the embedders' output)."""
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def random_unit(seed: int, rows: int, queries: int, dim: int) -> tuple[np.ndarray, np.ndarray]:
    """`rows` vectors and `queries` query vectors of `dim` dimensions, unit length, from `seed`."""
    rng = np.random.default_rng(seed)
    return unit(rng.normal(size=(rows, dim))), unit(rng.normal(size=(queries, dim)))


@pytest.fixture(scope="module")
def data() -> tuple[np.ndarray, np.ndarray]:
    """1500 vectors and 40 queries of 24 dimensions (a module may override it with its own draw)."""
    return random_unit(7, 1500, 40, 24)
