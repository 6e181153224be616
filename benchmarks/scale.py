"""Scale check: a synthetic corpus of 100,000 chunks, 1,000 questions, BM25 and dense HNSW.

Runs `rag-bench run -m retriever=bm25,dense index=hnsw chunker=section` (one process, tracking
off, generator=none) on a generated dataset whose every section is one chunk, then prints the wall
time of each stage from the cells' metrics.json, the peak RSS of that process (target <= 4 GB),
and ann.recall@10 of HNSW against the exact flat index on the same vectors and filter.

    python benchmarks/scale.py                      # 100,000 chunks, 1,000 questions
    python benchmarks/scale.py --sections 20000     # a quicker look
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.synthetic import make_dataset  # noqa: E402

STAGES = ("chunk_s", "index_s", "retrieve_s", "score_s")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sections", type=int, default=100_000, help="chunks (one per section)")
    p.add_argument("--questions", type=int, default=1_000)
    p.add_argument("--work", type=Path, default=None, help="work folder (default: a temporary one, removed)")
    a = p.parse_args()
    work = a.work or Path(tempfile.mkdtemp(prefix="rag_bench_scale_"))
    try:
        t0 = time.perf_counter()
        data = make_dataset(work / "data", sections=a.sections, questions=a.questions)
        print(f"generated {a.sections} sections, {a.questions} questions in {time.perf_counter() - t0:.1f} s",
              flush=True)
        env = {**os.environ, "RAG_BENCH_CACHE": str(work / "cache"), "TQDM_DISABLE": "1"}
        env.pop("MLFLOW_TRACKING_URI", None)
        cmd = [str(Path(sys.executable).parent / "rag-bench"), "run", "-m", "retriever=bm25,dense", "index=hnsw",
               "chunker=section", "generator=none", "tracking=none", f"dataset.path={data}",
               f"output.root={work / 'out'}", "experiment.name=scale"]
        t0 = time.perf_counter()
        done = subprocess.run(cmd, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        if done.returncode != 0:
            sys.exit(done.stderr[-3000:])
        peak_gb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024 ** 2  # KiB on Linux
        print(f"sweep of 2 cells: {wall:.1f} s wall; peak RSS {peak_gb:.2f} GB (target <= 4 GB)")
        for m_path in sorted((work / "out" / "scale").glob("*/metrics.json")):
            m = json.loads(m_path.read_text())
            cfg = (m_path.parent / "config.yaml").read_text()
            name = "dense-hnsw" if "name: dense" in cfg else "bm25"
            lat, c = m["latency"], m["counts"]
            stages = "  ".join(f"{s}={lat.get(s, 0):.1f}" for s in STAGES)
            print(f"{name:10s} chunks={c['chunks']} questions={c['questions']}  {stages}  embed_s={m['cost']['embed_s']:.1f}"
                  f"  retrieve p50={lat['retrieve_p50_ms']:.2f} ms p95={lat['retrieve_p95_ms']:.2f} ms"
                  f"  hit@10={m['retrieval']['hit@10']:.3f}")
            if "ann" in m:
                ann = m["ann"]
                print(f"{'':10s} ann.recall@10={ann['ann_recall@10']:.4f} vs flat; hnsw p50={ann['ann_p50_ms']:.3f} ms, "
                      f"flat p50={ann['exact_p50_ms']:.3f} ms; build {ann['build_s']:.1f} s, "
                      f"{ann['index_bytes'] / 1e6:.0f} MB")
    finally:
        if a.work is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
