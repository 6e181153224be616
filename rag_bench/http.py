"""One JSON POST with a timeout and bounded retries: what every HTTP client of ours does.

Connection errors, timeouts, 408/409/429 and 5xx are retried with exponential backoff
(``backoff_s``, doubled each time); any other HTTP status ends the attempts. The API key is read
from the environment variable ``api_key_env`` names (never from config) and sent as a bearer token.
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504}


@dataclass(frozen=True)
class Reply:
    """The body of the answer (None when every attempt failed), why the last attempt failed, and
    how many attempts were made."""

    body: bytes | None
    reason: str
    attempts: int


def post_json(url: str, body: Any, *, timeout_s: float, max_retries: int, backoff_s: float,
              api_key_env: str | None = None) -> Reply:
    """POST ``body`` as JSON to ``url``: at most ``max_retries + 1`` attempts."""
    data = json.dumps(body).encode()
    headers = {"Content-Type": "application/json"}
    key = os.environ.get(api_key_env) if api_key_env else None
    if key:
        headers["Authorization"] = f"Bearer {key}"
    reason = ""
    attempt = 0
    for attempt in range(1, max_retries + 2):
        try:
            req = urllib.request.Request(url, data=data, headers=headers, method="POST")
            with urllib.request.urlopen(req, timeout=timeout_s) as resp:
                return Reply(resp.read(), "", attempt)
        except urllib.error.HTTPError as exc:
            reason = f"HTTP {exc.code}: {exc.read()[:200].decode('utf-8', 'replace')}"
            if exc.code not in RETRY_STATUS:
                break
        except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as exc:
            reason = f"{type(exc).__name__}: {getattr(exc, 'reason', exc)}"
        if attempt <= max_retries:
            time.sleep(backoff_s * 2 ** (attempt - 1))
    return Reply(None, reason or "unknown error", attempt)
