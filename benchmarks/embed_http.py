"""Throughput of ``embedder=openai`` against a local llama.cpp server, at concurrency 1 and 4.

Starts ``python -m llama_cpp.server`` on the packaged GGUF (gemma3-270m, no download) with
embeddings on, on a free 127.0.0.1 port, embeds the demo set's chunk texts (repeated to --texts)
through :class:`rag_bench.embedding.openai_compat.OpenAIEmbedder` with the cache off, and prints
texts/s per concurrency. The server is stopped afterwards.

    python benchmarks/embed_http.py                 # 256 texts, batches of 16 (minutes on a busy 2-core machine)
    python benchmarks/embed_http.py --texts 64 --batch-size 8
"""

from __future__ import annotations

import argparse
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rag_bench.embedding.openai_compat import OpenAIEmbedder  # noqa: E402
from rag_bench.generation.llama_cpp import resolve_gguf  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def texts(n: int) -> list[str]:
    docs = sorted((ROOT / "rag_bench" / "datasets" / "kettleby").rglob("*.md"))
    paras = [p.strip() for d in docs for p in d.read_text(encoding="utf-8").split("\n\n") if len(p.strip()) > 40]
    if not paras:
        raise SystemExit("no demo texts found under rag_bench/datasets/kettleby")
    return [f"{paras[i % len(paras)]} [{i}]" for i in range(n)]


def serve(gguf: Path, port: int) -> None:
    """The server process: POST /v1/embeddings (OpenAI format) answered by llama.cpp with mean
    pooling (llama_cpp.server has no pooling option, and the packaged model's default pools none,
    one vector per token). One model, one request at a time, as llama_cpp.server does."""
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    import llama_cpp

    llm = llama_cpp.Llama(str(gguf), embedding=True, pooling_type=llama_cpp.LLAMA_POOLING_TYPE_MEAN,
                          n_ctx=2048, n_batch=2048, verbose=False)
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def _send(self, body: dict) -> None:
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:  # noqa: N802 (http.server API)
            self._send({"data": [{"id": gguf.name}]})

        def do_POST(self) -> None:  # noqa: N802 (http.server API)
            inputs = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["input"]
            with lock:
                vectors = [llm.embed(t) for t in ([inputs] if isinstance(inputs, str) else inputs)]
            self._send({"data": [{"index": i, "embedding": v} for i, v in enumerate(vectors)]})

        def log_message(self, *args: object) -> None:
            pass

    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--texts", type=int, default=256)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--serve", type=Path, help=argparse.SUPPRESS)
    p.add_argument("--port", type=int, help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.serve:
        return serve(a.serve, a.port)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # run the finally: stop the server too
    work = Path(tempfile.mkdtemp(prefix="rag_bench_embed_http_"))
    gguf = resolve_gguf("gemma3-270m", work)
    port = free_port()
    url = f"http://127.0.0.1:{port}/v1"
    corpus = texts(a.texts)
    with open(work / "server.log", "w") as log:
        proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--serve", str(gguf), "--port", str(port)],
                                stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.time() + 120
            while True:
                try:
                    with urllib.request.urlopen(url + "/models", timeout=2) as r:
                        if r.status == 200:
                            break
                except OSError:
                    pass
                if proc.poll() is not None or time.time() > deadline:
                    raise SystemExit(f"embedding server did not start: {(work / 'server.log').read_text()[-2000:]}")
                time.sleep(0.5)
            OpenAIEmbedder(base_url=url, cache=False, batch_size=a.batch_size).embed_documents(corpus[:4])  # warm-up
            for concurrency in (1, 4):
                embedder = OpenAIEmbedder(base_url=url, cache=False, batch_size=a.batch_size, concurrency=concurrency)
                t0 = time.perf_counter()
                vectors = embedder.embed_documents(corpus)
                dt = time.perf_counter() - t0
                print(f"concurrency {concurrency}: {len(corpus)} texts in {dt:.2f}s = {len(corpus) / dt:.1f} texts/s "
                      f"(batch {a.batch_size}, dim {vectors.shape[1]})")
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()


if __name__ == "__main__":
    main()
