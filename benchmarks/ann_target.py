"""ANN tuned to a recall target through the config key ``index.target_recall``: HNSW (FAISS,
ef_search) and LanceDB (IVF_PQ / IVF_HNSW_SQ, nprobe).

A synthetic corpus of 20,000 L2-normalised 384-d vectors in 2,000 Gaussian clusters (so that a
query's neighbours spread over several IVF lists; MiniLM's dimension, without spending minutes
embedding text on two cores) and 400 queries drawn near the same clusters. Each index is built
from the project's config (``index=... index.target_recall=0.95``, composed as ``rag-bench run``
composes it) and tuned by the code a cell runs (:func:`rag_bench.indexing.ann_report.tune_index`):
doubling then bisection of the knob on the tuning half of the queries, the chosen value measured
on the held-out half. Prints, per index, the chosen value, ann_recall@10 and the p50 latency at it
on both halves, whether the target is reached on the held-out half, and the recall curve; with
``--chart`` draws the report's ANN chart (recall against latency per index) from the same figures.

    python benchmarks/ann_target.py                  # 20,000 vectors, target 0.95
    python benchmarks/ann_target.py --n 5000 --target 0.9 --chart /tmp/ann.png
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hydra import compose, initialize_config_dir  # noqa: E402

from rag_bench.evaluation.scorers import ann  # noqa: E402
from rag_bench.indexing import ann_report  # noqa: E402
from rag_bench.indexing.flat import FlatIndex  # noqa: E402
from rag_bench.runner.config import CONF_DIR, build, register_configs  # noqa: E402

INDEXES = {
    "hnsw (FAISS, M=16)": ["index=hnsw", "index.M=16", "index.ef_construction=100"],
    "lancedb IVF_PQ (64 lists, 96 sub-vectors, refine x10)": ["index=lancedb", "index.num_partitions=64",
                                                              "index.num_sub_vectors=96", "index.refine_factor=10"],
    "lancedb IVF_HNSW_SQ (64 lists)": ["index=lancedb_hnsw", "index.num_partitions=64"],
}


def unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def corpus(n: int, dim: int, queries: int, clusters: int = 2000, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(clusters, dim))
    x = unit(centres[rng.integers(0, clusters, n)] + 1.0 * rng.normal(size=(n, dim)))
    q = unit(centres[rng.integers(0, clusters, queries)] + 1.0 * rng.normal(size=(queries, dim)))
    return x, q


def index_from_config(overrides: list[str]) -> tuple[object, str]:
    register_configs()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose("config", overrides=overrides)
    return build(cfg.index, "index"), str(cfg.index.name)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=20_000, help="corpus vectors")
    p.add_argument("--dim", type=int, default=384)
    p.add_argument("--queries", type=int, default=400, help="queries: half tune, half held out")
    p.add_argument("--target", type=float, default=0.95)
    p.add_argument("--chart", type=Path, help="draw the report's ANN chart here (PNG)")
    a = p.parse_args()
    x, q = corpus(a.n, a.dim, a.queries)
    qids = [f"q{i}" for i in range(len(q))]
    exact = FlatIndex()
    exact.build(x)
    cells = []
    for label, overrides in INDEXES.items():
        index, name = index_from_config([*overrides, f"index.target_recall={a.target}"])
        index.build(x)  # type: ignore[attr-defined]
        result = ann_report.tune_index(index=index, reference=exact, query_vectors=q, masks=[None] * len(q), qids=qids)
        assert result is not None
        at = result.point()
        held = result.held_out_recall or 0.0
        print(f"{label} [index={name}]: build {index.build_s:.1f}s, {index.nbytes() / 1e6:.1f} MB, "  # type: ignore[attr-defined]
              f"tuned in {result.seconds:.1f}s")
        print(f"  index.target_recall={a.target}: {result.knob}={result.chosen}; ann_recall@10 {at.recall:.3f} at "
              f"p50 {at.p50_ms:.2f} ms on {result.n} tuning queries; {held:.3f} at p50 "
              f"{result.held_out_p50_ms:.2f} ms on {result.held_out_n} held-out queries "
              f"(target {'reached' if held >= a.target else 'NOT reached'} on held-out)")
        print("  curve (value:recall/p50 ms): " + ", ".join(f"{c.value}:{c.recall:.3f}/{c.p50_ms:.2f}"
                                                             for c in result.curve))
        report = ann_report.report(index=index, reference=exact, query_vectors=q, masks=[None] * len(q), ks=[10],
                                   tuning=result)
        cells.append(SimpleNamespace(metrics={"ann": ann.section(report, name)}))
    if a.chart:
        from rag_bench.reporting import charts

        print(f"chart: {charts.ann_tradeoff(cells, a.chart)}")


if __name__ == "__main__":
    main()
