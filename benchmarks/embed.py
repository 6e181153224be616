"""Embedding throughput: rag_bench's embedder vs calling ``model.encode`` directly, cold vs warm cache.

Run:  .venv/bin/python benchmarks/embed.py [--texts N]

Prints, from one run on the same texts (every chunk of the demo set, several chunkers, repeated
until N texts): (1) direct ``SentenceTransformer.encode``; (2) rag_bench cold (empty cache:
hashing + encode + cache writes); (3) rag_bench warm (everything from the cache). Target: cold
overhead under 10% of direct. Each timing is the best of ``--repeats`` runs (fresh cache folder
for every cold run).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from rag_bench.chunking.fixed import FixedChunker  # noqa: E402
from rag_bench.chunking.section import SectionChunker  # noqa: E402
from rag_bench.chunking.sentence import SentenceChunker  # noqa: E402
from rag_bench.data.loader import load_dataset  # noqa: E402
from rag_bench.embedding.sentence_transformer import SentenceTransformerEmbedder  # noqa: E402
from rag_bench.runner.config import DEMO_DATASET  # noqa: E402


def corpus(n: int) -> list[str]:
    docs = list(load_dataset(DEMO_DATASET).documents.values())
    texts: list[str] = []
    for chunker in (SectionChunker(), FixedChunker(size=500, overlap=50), SentenceChunker(max_chars=300)):
        texts.extend(c.text for c in chunker.chunk(docs))
    texts = list(dict.fromkeys(texts))
    out = []
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


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--texts", type=int, default=1000)
    p.add_argument("--repeats", type=int, default=3)
    a = p.parse_args()
    texts = corpus(a.texts)
    with tempfile.TemporaryDirectory() as tmp:
        probe = SentenceTransformerEmbedder(cache_dir=tmp)
        model = probe.model  # load once: not part of any timing
        model.encode(texts[:64], batch_size=64)  # warm up kernels
        print(f"texts: {len(texts)} distinct chunk texts of the demo set, "
              f"{sum(map(len, texts)) / len(texts):.0f} chars on average; model all-MiniLM-L6-v2, batch 64")

        direct = best(lambda: model.encode(texts, batch_size=64, convert_to_numpy=True,
                                           normalize_embeddings=False, show_progress_bar=False), a.repeats)

        def cold() -> None:
            with tempfile.TemporaryDirectory() as c:
                SentenceTransformerEmbedder(cache_dir=c).embed_documents(texts)

        cold_s = best(cold, a.repeats)
        warm_emb = SentenceTransformerEmbedder(cache_dir=tmp)
        warm_emb.embed_documents(texts)
        warm_s = best(lambda: SentenceTransformerEmbedder(cache_dir=tmp).embed_documents(texts), a.repeats)
    print(f"direct model.encode            : {direct:8.2f} s  ({len(texts) / direct:6.1f} texts/s)")
    print(f"rag_bench cold (empty cache)   : {cold_s:8.2f} s  ({len(texts) / cold_s:6.1f} texts/s)")
    print(f"rag_bench warm (all cached)    : {warm_s:8.3f} s  ({len(texts) / warm_s:6.0f} texts/s)")
    print(f"cold overhead vs direct        : {100 * (cold_s / direct - 1):+.1f} %  (target < 10 %)")
    print(f"warm / cold                    : {100 * warm_s / cold_s:.2f} %")


if __name__ == "__main__":
    main()
