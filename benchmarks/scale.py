"""Scale check: a synthetic corpus of 100,000 chunks, 1,000 questions, BM25 and dense HNSW, per backend.

Each stage runs in its own process, so its wall time and peak RSS (``wait4``'s ``ru_maxrss`` of that
process alone) are its own:

1. ``phase1``: ``rag-bench embed`` (phase 1 of a two-phase sweep, docs/scale.md): every chunk and
   question embedded once into the cache's shard files; prints its encoding throughput (texts/s
   on this node).
2. ``bm25``: the BM25 cell (``rag-bench run``): chunk, index, retrieve, score.
3. ``dense``: the dense HNSW cell (phase 2): every vector from the cache (0 embedded), FAISS
   HNSW build, retrieval, ann.recall@10 against the exact flat index on the same vectors.

Every process gets ``generator=none`` and ``tracking=none``. ``--backend both`` measures torch then
onnx (int8, the embedder's default quantize) on the same generated data, each with its own cache.

    python benchmarks/scale.py                                   # 100,000 chunks, torch and onnx
    python benchmarks/scale.py --sections 20000 --backend onnx   # a quicker look
    python benchmarks/scale.py --json /tmp/scale.json            # figures as JSON too
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.synthetic import make_dataset  # noqa: E402

STAGE_TIMES = ("chunk_s", "index_s", "retrieve_s", "score_s")
BIN = Path(sys.executable).parent / "rag-bench"


def run_measured(cmd: list[str], env: dict[str, str], log: Path) -> tuple[float, float, float, str]:
    """Run ``cmd``; ``(wall seconds, CPU seconds (user + system), peak RSS in GB of that process, its
    output)``; exit on failure. On a shared machine the CPU seconds say more than the wall time."""
    t0 = time.perf_counter()
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    text = log.read_text()
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd[:3])} failed ({proc.returncode}); see {log}\n{text[-3000:]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024 ** 2, text  # ru_maxrss: KiB on Linux


def measure(backend: str, data: Path, work: Path, shards: int) -> dict[str, Any]:
    env = {**os.environ, "RAG_BENCH_CACHE": str(work / "cache"), "TQDM_DISABLE": "1"}
    env.pop("MLFLOW_TRACKING_URI", None)
    common = ["chunker=section", f"embedder.backend={backend}", "generator=none", "tracking=none",
              f"dataset.path={data}", f"output.root={work / 'out'}", "experiment.name=scale"]
    res: dict[str, Any] = {"backend": backend}
    load = os.getloadavg()[0]
    wall, cpu, peak, text = run_measured([str(BIN), "embed", "--shards", str(shards), "retriever=dense", "index=hnsw",
                                     *common], env, work / "phase1.log")
    rate = re.search(r"phase 1 done: (\d+) texts .*?encoding ([\d.]+) texts/s", text)
    res["phase1"] = {"wall_s": wall, "cpu_s": cpu, "peak_gb": peak, "load_before": load, "texts": int(rate.group(1)) if rate else 0,
                     "texts_per_s": float(rate.group(2)) if rate else 0.0}
    print(f"[{backend}] phase1 (embed): {wall:.1f} s wall, {cpu:.1f} s CPU, peak RSS {peak:.2f} GB; "
          f"{res['phase1']['texts']} texts at {res['phase1']['texts_per_s']:.1f} texts/s (encoding, this node; "
          f"load average {load:.1f} on {os.cpu_count()} CPUs before it)",
          flush=True)
    for name, retriever in (("bm25", "retriever=bm25"), ("dense", "retriever=dense")):
        wall, cpu, peak, _ = run_measured([str(BIN), "run", retriever, "index=hnsw", *common], env, work / f"{name}.log")
        cell = _cell(work / "out" / "scale", "name: dense" if name == "dense" else "name: bm25")
        m = json.loads((cell / "metrics.json").read_text())
        lat, c = m["latency"], m["counts"]
        res[name] = {"wall_s": wall, "cpu_s": cpu, "peak_gb": peak, "chunks": c["chunks"], "questions": c["questions"],
                     **{s: lat.get(s, 0.0) for s in STAGE_TIMES}, "retrieve_p50_ms": lat["retrieve_p50_ms"],
                     "retrieve_p95_ms": lat["retrieve_p95_ms"], "hit@10": m["retrieval"]["hit@10"],
                     "embeddings_computed": m["cost"]["embeddings_computed"], "embed_s": m["cost"]["embed_s"]}
        stages = "  ".join(f"{s}={lat.get(s, 0):.1f}" for s in STAGE_TIMES)
        print(f"[{backend}] {name:5s}: {wall:.1f} s wall, {cpu:.1f} s CPU, peak RSS {peak:.2f} GB; chunks={c['chunks']} "
              f"questions={c['questions']}  {stages}  embedded={m['cost']['embeddings_computed']}  "
              f"retrieve p50={lat['retrieve_p50_ms']:.2f} ms p95={lat['retrieve_p95_ms']:.2f} ms  "
              f"hit@10={m['retrieval']['hit@10']:.3f}", flush=True)
        if "ann" in m:
            ann = m["ann"]
            res[name]["ann"] = {k: ann[k] for k in ("ann_recall@10", "ann_p50_ms", "exact_p50_ms", "build_s",
                                                    "index_bytes")}
            print(f"[{backend}]        ann.recall@10={ann['ann_recall@10']:.4f} vs flat; hnsw p50="
                  f"{ann['ann_p50_ms']:.3f} ms, flat p50={ann['exact_p50_ms']:.3f} ms; build {ann['build_s']:.1f} s, "
                  f"{ann['index_bytes'] / 1e6:.0f} MB", flush=True)
    return res


def _cell(experiment: Path, marker: str) -> Path:
    for cfg in sorted(experiment.glob("*/config.yaml")):
        if marker in cfg.read_text():
            return cfg.parent
    sys.exit(f"no cell with {marker!r} under {experiment}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sections", type=int, default=100_000, help="chunks (one per section)")
    p.add_argument("--questions", type=int, default=1_000)
    p.add_argument("--backend", choices=("torch", "onnx", "both"), default="both",
                   help="embedder.backend (onnx: int8-quantised, the embedder's default quantize)")
    p.add_argument("--shards", type=int, default=1, help="phase-1 shards (run one after the other here)")
    p.add_argument("--work", type=Path, default=None, help="work folder (default: a temporary one, removed)")
    p.add_argument("--json", type=Path, default=None, help="also write the figures here")
    a = p.parse_args()
    work = a.work or Path(tempfile.mkdtemp(prefix="rag_bench_scale_"))
    try:
        t0 = time.perf_counter()
        data = work / "data"
        if not (data / "questions.jsonl").exists():
            make_dataset(data, sections=a.sections, questions=a.questions)
        print(f"dataset: {a.sections} sections, {a.questions} questions ({time.perf_counter() - t0:.1f} s)", flush=True)
        results = []
        for backend in (("torch", "onnx") if a.backend == "both" else (a.backend,)):
            (work / backend).mkdir(parents=True, exist_ok=True)
            results.append(measure(backend, data, work / backend, a.shards))
        if a.json:
            a.json.write_text(json.dumps({"sections": a.sections, "questions": a.questions, "cpus": os.cpu_count(),
                                          "results": results}, indent=2))
    finally:
        if a.work is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
