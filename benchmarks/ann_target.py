"""ANN tuned to a recall target: HNSW (FAISS, ef_search) and LanceDB (IVF_PQ / IVF_HNSW_SQ, nprobe).

A synthetic corpus of 20,000 L2-normalised 384-d vectors in 2,000 Gaussian clusters (so that a
query's neighbours spread over several IVF lists; MiniLM's dimension, without spending minutes
embedding text on two cores) and queries drawn near the same clusters. The knob is tuned
(doubling, then bisection: rag_bench.indexing.tuning) on 200 tuning queries; ann_recall@10 and
the median latency are then measured at the chosen value on 200 held-out queries, and printed
with the recall curve.

    python benchmarks/ann_target.py                  # 20,000 vectors, target 0.95
    python benchmarks/ann_target.py --n 5000 --target 0.9
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rag_bench.indexing.base import _exact  # noqa: E402
from rag_bench.indexing.hnsw import HnswIndex  # noqa: E402
from rag_bench.indexing.lancedb import LanceDbIndex  # noqa: E402
from rag_bench.indexing.tuning import _measure, tune  # noqa: E402


def unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def corpus(n: int, dim: int, queries: int, clusters: int = 2000, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(clusters, dim))
    x = unit(centres[rng.integers(0, clusters, n)] + 1.0 * rng.normal(size=(n, dim)))
    q = unit(centres[rng.integers(0, clusters, queries)] + 1.0 * rng.normal(size=(queries, dim)))
    return x, q


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=20_000, help="corpus vectors")
    p.add_argument("--dim", type=int, default=384)
    p.add_argument("--target", type=float, default=0.95)
    a = p.parse_args()
    x, q = corpus(a.n, a.dim, 400)
    tuning, held_out = q[:200], q[200:]
    _, exact = _exact(x, held_out, 10, None)
    indexes = {"hnsw (FAISS, M=16)": HnswIndex(M=16, ef_construction=100, ef_search=1),
               "lancedb IVF_PQ (64 lists, refine x10)": LanceDbIndex("IVF_PQ", num_partitions=64, nprobe=1,
                                                                     refine_factor=10),
               "lancedb IVF_HNSW_SQ (64 lists)": LanceDbIndex("IVF_HNSW_SQ", num_partitions=64, nprobe=1,
                                                              ef_search=64)}
    for name, index in indexes.items():
        index.build(x)
        result = tune(index, x, tuning, target=a.target, k=10)
        recall, p50 = _measure(index, held_out, exact, 10)
        curve = ", ".join(f"{c.value}:{c.recall:.3f}/{c.p50_ms:.2f}ms" for c in result.curve)
        print(f"{name}: build {index.build_s:.1f}s, {index.nbytes() / 1e6:.1f} MB; {result.knob}={result.chosen} "
              f"(target {'reached' if result.reached else 'NOT reached'} on tuning queries)")
        print(f"  held-out ann_recall@10 {recall:.3f}, p50 latency {p50:.2f} ms at the target")
        print(f"  curve (value:recall/p50): {curve}")


if __name__ == "__main__":
    main()
