"""Helpers for tests that start real local servers (mlflow server, llama_cpp.server)."""

from __future__ import annotations

import json
import socket
import subprocess
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
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


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler], **attrs: Any) -> Iterator[ThreadingHTTPServer]:
    """``handler`` on a free local port in a thread, with ``requests = []`` and ``attrs`` set on
    the server; shut down afterwards."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.requests = []  # type: ignore[attr-defined]
    for k, v in attrs.items():
        setattr(server, k, v)
    threading.Thread(target=server.serve_forever, daemon=True).start()
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
