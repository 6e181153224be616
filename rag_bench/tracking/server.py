"""Reaching an MLflow tracking server quickly.

MLflow retries a failed HTTP request up to 7 times with exponential backoff and waits up to 120 s
for each answer: ``rag-bench gate <run id>`` against a server that is down once spent 251 s that
way, then said "run not found". A lookup first probes the server (:func:`unreachable`), then asks
MLflow inside :func:`bounded_requests`, so a dead or silent server is an error within seconds.
"""

from __future__ import annotations

import contextlib
import os
import urllib.error
import urllib.request
from collections.abc import Iterator

PROBE_TIMEOUT_S = 5.0
# MLflow's own settings for the requests of a lookup (its defaults: 7 retries, 120 s per request).
LOOKUP_ENV = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "1", "MLFLOW_HTTP_REQUEST_TIMEOUT": "10"}


def is_server(uri: str) -> bool:
    """Whether ``uri`` names an HTTP(S) tracking server (not a SQLite file or a folder)."""
    return uri.startswith(("http://", "https://"))


def unreachable(uri: str, timeout: float = PROBE_TIMEOUT_S) -> str | None:
    """Why the tracking server at ``uri`` does not answer ``GET /health`` with 200 within
    ``timeout`` seconds (``Connection refused``, ``timed out``, ``HTTP 503``), or None when it does
    or when ``uri`` is not a server."""
    if not is_server(uri):
        return None
    try:
        with urllib.request.urlopen(uri.rstrip("/") + "/health", timeout=timeout) as resp:
            return None if resp.status == 200 else f"HTTP {resp.status}"
    except (urllib.error.URLError, OSError) as exc:
        return str(getattr(exc, "reason", exc))


@contextlib.contextmanager
def bounded_requests() -> Iterator[None]:
    """MLflow's HTTP requests made inside retry at most once and wait at most 10 s each
    (:data:`LOOKUP_ENV`; a value the user exported is kept); the environment is put back on
    leaving."""
    old = {k: os.environ.get(k) for k in LOOKUP_ENV}
    os.environ.update({k: v for k, v in LOOKUP_ENV.items() if old[k] is None})
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
