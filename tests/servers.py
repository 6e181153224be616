"""Helpers for tests that start real local servers (mlflow server, llama_cpp.server), and a
hostile OpenAI-compatible endpoint for our HTTP clients."""

from __future__ import annotations

import hashlib
import json
import socket
import subprocess
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest


class JsonEndpoint(BaseHTTPRequestHandler):
    """A fake OpenAI-compatible endpoint for unit tests of our clients: each POST body is kept in
    ``server.requests``; a subclass's :meth:`answer` gives the status and JSON reply."""

    def answer(self, body: Any) -> tuple[int, bytes]:
        raise NotImplementedError

    def do_POST(self) -> None:  # noqa: N802 (http.server API)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append(body)  # type: ignore[attr-defined]
        status, data = self.answer(body)
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


def good_reply(path: str, body: Any) -> dict[str, Any]:
    """What a well-behaved endpoint answers ``body`` on ``path``: embeddings (8-dim vectors from
    each text's sha256, in reverse order with their indices), rerank results (word overlap, best
    first) or a chat completion citing source 1."""
    path = path.rstrip("/")
    if path.endswith("/embeddings"):
        data = [{"object": "embedding", "index": i,
                 "embedding": [b / 255 - 0.5 for b in hashlib.sha256(t.encode()).digest()[:8]]}
                for i, t in enumerate(body["input"])]
        return {"object": "list", "data": data[::-1], "model": body["model"],
                "usage": {"prompt_tokens": len(body["input"]), "total_tokens": len(body["input"])}}
    if path.endswith("/rerank"):
        words = set(body["query"].lower().split())
        scored = [(i, len(words & set(d.lower().split())) + 1 / (2 + i)) for i, d in enumerate(body["documents"])]
        return {"results": [{"index": i, "relevance_score": s} for i, s in sorted(scored, key=lambda x: -x[1])]}
    content = json.dumps({"answer": "As the sources say [1].", "sources": [1]})
    return {"choices": [{"index": 0, "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 10}}


# What a hostile endpoint does to a request: writes any response (or none) itself.
Act = Callable[["HostileEndpoint", dict[str, Any]], None]


class HostileEndpoint(BaseHTTPRequestHandler):
    """An OpenAI-compatible endpoint (``/embeddings``, ``/rerank``, ``/chat/completions``) that
    misbehaves on purpose: the first ``server.broken`` requests (every one when None) get
    ``server.act(handler, good)`` -- ``good`` being :func:`good_reply`'s answer -- the others the
    good answer. ``server.seen`` keeps (path, Authorization header) of every request."""

    def do_POST(self) -> None:  # noqa: N802 (http.server API)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        server: Any = self.server
        with server.lock:
            server.seen.append((self.path, self.headers.get("Authorization")))
            hostile = server.broken is None or server.broken > 0
            if hostile and server.broken is not None:
                server.broken -= 1
        good = good_reply(self.path, body)
        if hostile:
            server.act(self, good)
        else:
            self.send(200, json.dumps(good).encode())

    def send(self, status: int, data: bytes, **headers: str) -> None:
        """A complete response."""
        self.send_response(status)
        for name, value in {"Content-Type": "application/json", "Content-Length": str(len(data)), **headers}.items():
            self.send_header(name.replace("_", "-"), value)
        self.end_headers()
        self.wfile.write(data)

    def raw(self, data: bytes, *, close: bool = True) -> None:
        """Bytes on the wire as they are (not HTTP, or cut short); the connection then closed."""
        self.wfile.write(data)
        self.wfile.flush()
        if close:
            with suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
        self.close_connection = True

    def log_message(self, *args: Any) -> None:
        pass


@contextmanager
def hostile(act: Act, *, broken: int | None = None) -> Iterator[ThreadingHTTPServer]:
    """A :class:`HostileEndpoint` doing ``act`` to its first ``broken`` requests (None: all)."""
    with serving(HostileEndpoint, act=act, broken=broken, seen=[], lock=threading.Lock()) as server:
        yield server


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler], **attrs: Any) -> Iterator[ThreadingHTTPServer]:
    """``handler`` on a free local port in a thread, with ``requests = []`` and ``attrs`` set on
    the server; shut down afterwards."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.requests = []  # type: ignore[attr-defined]
    for k, v in attrs.items():
        setattr(server, k, v)
    # A short poll: shutdown() waits up to one interval (0.5 s by default, per server, per test).
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        yield server
    finally:
        server.shutdown()


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def running(cmd: list[str], ready_url: str, log_path: Path, *, timeout_s: float = 120, stop_timeout_s: float = 30,
            **popen) -> Iterator[None]:
    """Start ``cmd``, wait until ``ready_url`` answers 200, stop it afterwards (terminate, then kill
    after ``stop_timeout_s``)."""
    with open(log_path, "w") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, **popen)
        try:
            deadline = time.time() + timeout_s
            while True:
                try:
                    with urllib.request.urlopen(ready_url, timeout=2) as r:
                        if r.status == 200:
                            break
                except OSError:
                    pass
                if proc.poll() is not None or time.time() > deadline:
                    pytest.fail(f"{cmd[0]} did not start: {log_path.read_text()[-2000:]}")
                time.sleep(0.5)
            yield
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=stop_timeout_s)
            except subprocess.TimeoutExpired:
                proc.kill()


# Misbehaviours of the transport, the same for every endpoint (``Act``s of :func:`hostile`). A
# redirect goes to ``server.elsewhere`` (another host's URL) when set.
def _redirect(code: int, *, same_host: bool = False) -> Act:
    def act(h: HostileEndpoint, good: dict[str, Any]) -> None:
        server: Any = h.server
        base = f"http://127.0.0.1:{server.server_port}" if same_host else server.elsewhere
        h.send(code, b"", Location=base + h.path)
    return act


def _drip(h: HostileEndpoint, good: dict[str, Any]) -> None:
    """The right answer, one byte every 0.2 s: each read is quick, the whole is not."""
    data = json.dumps(good).encode()
    h.send_response(200)
    h.send_header("Content-Length", str(len(data)))
    h.end_headers()
    with suppress(OSError):
        for i in range(len(data)):
            h.wfile.write(data[i:i + 1])
            h.wfile.flush()
            time.sleep(0.2)


def _truncated(h: HostileEndpoint, good: dict[str, Any]) -> None:
    """Half the answer, then the connection closes (a server restarted mid-answer)."""
    data = json.dumps(good).encode()
    h.raw(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(data)
          + data[:len(data) // 2])


def _echo(status: int) -> Act:
    def act(h: HostileEndpoint, good: dict[str, Any]) -> None:  # a gateway quoting the request back
        h.send(status, json.dumps({"error": f"invalid key {h.headers.get('Authorization')}"}).encode())
    return act


TRANSPORT_ACTS: dict[str, Act] = {
    "redirect-302-elsewhere": _redirect(302),
    "redirect-301-elsewhere": _redirect(301),
    "redirect-307-elsewhere": _redirect(307),
    "redirect-303-same-host": _redirect(303, same_host=True),
    "drip": _drip,
    "truncated": _truncated,
    "bad-status-line": lambda h, good: h.raw(b"HELLO THERE\r\n\r\n"),
    "line-too-long": lambda h, good: h.raw(b"HTTP/1.1 200 " + b"x" * 70_000 + b"\r\n\r\n"),
    "reset": lambda h, good: h.raw(b""),
    "echo-401": _echo(401),
    "echo-503": _echo(503),
    "huge": lambda h, good: h.raw(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n{" % (1 << 40)),
}
