"""Helpers for tests that start real local servers (mlflow server, llama_cpp.server)."""

from __future__ import annotations

import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


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
