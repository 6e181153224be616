"""Embedding throughput and agreement: the cache's overhead, and the torch vs onnx backends.

Run:  .venv/bin/python benchmarks/embed.py [--texts N] [--repeats R] [--dataset DIR] [--threads T]
      [--skip-cache] [--skip-pipeline]

Prints, from one run on the same texts (every chunk of the dataset — ../shared/datasets/
squad2-normans when present, else the demo set — by several chunkers, repeated until N texts):

1. Cache overhead (torch): direct ``SentenceTransformer.encode``; rag_bench cold (empty cache:
   hashing + encode + cache writes); rag_bench warm (everything from the cache). Target: cold
   overhead under 10% of direct.
2. Backends: torch, onnx fp32 and onnx int8 (``embedder.backend=onnx``, ``embedder.quantize``)
   with the vector cache off: texts/s, ratio to torch, mean and min cosine of each vector to
   torch's, and the one-off export/quantisation time.
3. The same backends through the real pipeline (``run_cell``: section chunker, dense retriever,
   flat index, no generator) over the dataset's questions: top-10 overlap of each question's
   ranking with torch's (|top10 ∩ torch top10| / 10, mean over questions), and nDCG@10 with its
   change from torch.

Each timing is the best of ``--repeats`` runs (fresh cache folder for every cold run).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from rag_bench.chunking.fixed import FixedChunker  # noqa: E402
from rag_bench.chunking.section import SectionChunker  # noqa: E402
from rag_bench.chunking.sentence import SentenceChunker  # noqa: E402
from rag_bench.data.loader import load_dataset  # noqa: E402
from rag_bench.embedding.sentence_transformer import SentenceTransformerEmbedder  # noqa: E402
from rag_bench.runner.config import DEMO_DATASET  # noqa: E402

SQUAD = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "squad2-normans"
# (label, embedder overrides) of the backends compared; the first is the reference.
BACKENDS = [("torch", {"backend": "torch"}), ("onnx fp32", {"backend": "onnx", "quantize": "none"}),
            ("onnx int8", {"backend": "onnx", "quantize": "int8"})]


def corpus(n: int, dataset: Path = DEMO_DATASET) -> list[str]:
    docs = list(load_dataset(dataset).documents.values())
    texts: list[str] = []
    for chunker in (SectionChunker(), FixedChunker(size=500, overlap=50), SentenceChunker(size=300)):
        texts.extend(c.text for c in chunker.chunk(docs))
    texts = list(dict.fromkeys(texts))
    out: list[str] = []
    i = 0
    while len(out) < n:  # distinct texts only, so the cold run has no free cache hits
        out.append(texts[i % len(texts)] + ("" if i < len(texts) else f" (copy {i // len(texts)})"))
        i += 1
    return out


def best(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def backends(texts: list[str], repeats: int, cache: str, threads: int | None) -> dict[str, np.ndarray]:
    """Throughput and cosine to torch of every backend on ``texts``; returns the vectors."""
    from rag_bench.embedding.onnx_backend import TOKENS_PER_RUN

    print(f"\n== backends: {len(texts)} texts, batch 64 (onnx: and <= {TOKENS_PER_RUN} tokens per run), vector cache "
          f"off, onnx threads {threads or 'default'} ==")
    embedders, setup = {}, {}
    for label, kw in BACKENDS:
        t0 = time.perf_counter()
        embedders[label] = SentenceTransformerEmbedder(cache=False, cache_dir=cache, threads=threads, **kw)  # type: ignore[arg-type]
        embedders[label].embed_documents(texts[:64])  # load, export/quantise once (onnx), warm up kernels
        setup[label] = time.perf_counter() - t0
    # Round robin, best of the rounds: a shared machine's load drifts; every backend sees the same drift.
    seconds = {label: float("inf") for label in embedders}
    vectors: dict[str, np.ndarray] = {}
    for _ in range(repeats):
        for label, emb in embedders.items():
            t0 = time.perf_counter()
            vectors[label] = emb.embed_documents(texts)
            seconds[label] = min(seconds[label], time.perf_counter() - t0)
    ref_label = BACKENDS[0][0]
    for label in embedders:
        rate, ref_rate = len(texts) / seconds[label], len(texts) / seconds[ref_label]
        cos = (vectors[label] * vectors[ref_label]).sum(axis=1)
        print(f"{label:10s}: {rate:7.1f} texts/s  x{rate / ref_rate:.2f} vs torch  cosine to torch mean "
              f"{cos.mean():.4f} min {cos.min():.4f}  (load/export/warm-up {setup[label]:.1f} s)")
    return vectors


def pipeline(dataset: Path, cache: str, threads: int | None) -> None:
    """Top-10 overlap with torch and nDCG@10 of a dense flat cell per backend (real run_cell)."""
    from hydra import compose, initialize_config_dir

    from rag_bench.evaluation import measures
    from rag_bench.runner.config import CONF_DIR, register_configs
    from rag_bench.runner.main import run_cell

    register_configs()
    ndcg = measures.family("retrieval", "ndcg").at(10)
    print(f"\n== pipeline: {dataset.name}, chunker=section retriever=dense index=flat generator=none ==")
    top: dict[str, dict[str, list[str]]] = {}
    ref: float | None = None
    with tempfile.TemporaryDirectory() as out:
        for label, kw in BACKENDS:
            overrides = [f"dataset.path={dataset}", "chunker=section", "retriever=dense", "index=flat",
                         "reranker=none", "generator=none", "judge=none", "tracking=none", f"output.root={out}",
                         "experiment.name=bench_embed", f"embedder.cache_dir={cache}",
                         f"embedder.threads={'null' if threads is None else threads}",
                         *[f"embedder.{k}={v}" for k, v in kw.items()]]
            with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
                cfg = compose("config", overrides=overrides)
            t0 = time.perf_counter()
            cell = run_cell(cfg)
            seconds = time.perf_counter() - t0
            top[label] = read_top(cell / "run.trec", 10)
            value = json.loads((cell / "metrics.json").read_text())[ndcg.section][ndcg.name]
            ref = value if ref is None else ref
            base = top[BACKENDS[0][0]]
            overlap = np.mean([len(set(top[label].get(q, [])) & set(r)) / 10 for q, r in base.items()])
            print(f"{label:10s}: {ndcg.name} {value:.4f} (change {value - ref:+.4f})  top-10 overlap with torch "
                  f"{overlap:.3f} over {len(base)} questions  (cell {seconds:.1f} s)")


def read_top(run: Path, k: int) -> dict[str, list[str]]:
    """Each query's first ``k`` doc ids of a TREC run (file order is rank order)."""
    out: dict[str, list[str]] = {}
    for line in run.read_text().splitlines():
        qid, _, doc, *_ = line.split()
        out.setdefault(qid, [])
        if len(out[qid]) < k:
            out[qid].append(doc)
    return out


def cache_overhead(texts: list[str], repeats: int) -> None:
    """Direct model.encode vs rag_bench with an empty and with a full cache (torch backend)."""
    print("\n== cache overhead (torch backend) ==")
    with tempfile.TemporaryDirectory() as tmp:
        probe = SentenceTransformerEmbedder(cache_dir=tmp)
        model = probe.model  # load once: not part of any timing
        model.encode(texts[:64], batch_size=64)  # warm up kernels

        direct = best(lambda: model.encode(texts, batch_size=64, convert_to_numpy=True,
                                           normalize_embeddings=False, show_progress_bar=False), repeats)

        def cold() -> None:
            with tempfile.TemporaryDirectory() as c:
                SentenceTransformerEmbedder(cache_dir=c).embed_documents(texts)

        cold_s = best(cold, repeats)
        warm_emb = SentenceTransformerEmbedder(cache_dir=tmp)
        warm_emb.embed_documents(texts)
        warm_s = best(lambda: SentenceTransformerEmbedder(cache_dir=tmp).embed_documents(texts), repeats)
    print(f"direct model.encode            : {direct:8.2f} s  ({len(texts) / direct:6.1f} texts/s)")
    print(f"rag_bench cold (empty cache)   : {cold_s:8.2f} s  ({len(texts) / cold_s:6.1f} texts/s)")
    print(f"rag_bench warm (all cached)    : {warm_s:8.3f} s  ({len(texts) / warm_s:6.0f} texts/s)")
    print(f"cold overhead vs direct        : {100 * (cold_s / direct - 1):+.1f} %  (target < 10 %)")
    print(f"warm / cold                    : {100 * warm_s / cold_s:.2f} %")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--texts", type=int, default=1000)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--dataset", type=Path, default=SQUAD if SQUAD.is_dir() else DEMO_DATASET)
    p.add_argument("--threads", type=int, default=None, help="onnxruntime intra-op threads (default: one per core)")
    p.add_argument("--skip-cache", action="store_true", help="skip part 1 (cache overhead)")
    p.add_argument("--skip-pipeline", action="store_true", help="skip part 3 (run_cell per backend)")
    a = p.parse_args()
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]  # progress shows when piped to a file
    texts = corpus(a.texts, a.dataset)
    print(f"texts: {len(texts)} distinct chunk texts of {a.dataset.name}, {sum(map(len, texts)) / len(texts):.0f} "
          f"chars on average; model all-MiniLM-L6-v2, batch 64; {os.cpu_count()} CPUs")
    steps: list[Callable[[], object]] = []
    if not a.skip_cache:
        steps.append(lambda: cache_overhead(texts, a.repeats))
    with tempfile.TemporaryDirectory() as cache:  # one export cache for parts 2 and 3: exported once
        steps.append(lambda: backends(texts, a.repeats, cache, a.threads))
        if not a.skip_pipeline:
            steps.append(lambda: pipeline(a.dataset, cache, a.threads))
        for step in steps:
            step()


if __name__ == "__main__":
    main()
