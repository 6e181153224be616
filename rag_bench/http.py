"""One JSON POST with a deadline, bounded retries and no redirect across hosts: what every HTTP
client of ours (embedder, reranker, generator) does.

- **Deadline**: ``timeout_s`` bounds the whole request -- connecting, sending, the status line,
  the headers and every byte of the reply -- not each socket read: an endpoint that sends one
  byte a second is cut off at ``timeout_s`` (the connection is shut down) and the attempt counts
  as a timeout.
- **Retries**: connection errors, timeouts, a reply cut short or not HTTP (``http.client``'s
  IncompleteRead, BadStatusLine, LineTooLong...), 408/409/429 and 5xx are retried with
  exponential backoff (``backoff_s``, doubled each time, at most :data:`MAX_BACKOFF_S`); any other
  HTTP status ends the attempts.
- **Redirects**: the API key is read from the environment variable ``api_key_env`` names (never
  from config) and sent as a bearer token to the configured host only. A 307/308 to the same
  scheme, host and port is followed (method and body kept); any other redirect is refused, and
  so is a reply larger than :data:`MAX_REPLY_BYTES`: such a :class:`Reply` is ``fatal`` (no retry
  or other request changes it) and the caller stops the cell.
- **Reasons** never hold the key (:func:`~rag_bench.redaction.redact`): they are stored.
"""

from __future__ import annotations

import http.client
import json
import math
import os
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from contextlib import suppress
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from rag_bench.errors import ConfigError
from rag_bench.redaction import redact, remember

RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504}
# Far above any answer to one request (2048 texts of 3072-dim vectors as JSON are ~130 MB).
MAX_REPLY_BYTES = 256 << 20
# What of an error reply is read for its reason.
MAX_ERROR_BYTES = 64 << 10
MAX_BACKOFF_S = 60.0
# Same-host 307/308 hops followed within one request (a trailing-slash redirect needs one).
MAX_HOPS = 3
REDIRECT_FIX = "use the final URL as base_url (the redirect's target, if that is the endpoint you mean)"


@dataclass(frozen=True)
class Reply:
    """The body of the answer (None when every attempt failed), why the last attempt failed (the
    key redacted), how many attempts were made, and whether the failure is ``fatal``: the
    endpoint redirected elsewhere or answered too much, which no retry and no other request
    changes (``fix`` says what to do) -- the caller stops the cell instead of recording it."""

    body: bytes | None
    reason: str
    attempts: int
    fatal: bool = False
    fix: str = ""


class _Refused(Exception):
    """The endpoint answered in a way we do not follow (a redirect elsewhere, a reply too large)."""

    def __init__(self, reason: str, fix: str) -> None:
        super().__init__(reason)
        self.fix = fix


class _Status(Exception):
    """An HTTP error status, with the start of its body."""

    def __init__(self, code: int, text: str) -> None:
        super().__init__(f"HTTP {code}: {text}")
        self.code = code


def check_url(section: str, base_url: Any) -> str:
    """``base_url`` if it is an http(s) URL with a host (and a valid port); else a ConfigError."""
    fix = f"{section}.base_url=http://HOST:PORT/v1"
    if not base_url:
        raise ConfigError(f"{section}.base_url is not set -- fix: {fix}")
    try:
        parts = urllib.parse.urlsplit(str(base_url))
        parts.port  # noqa: B018 -- raises ValueError for a port that is not a number in range
    except ValueError as exc:
        raise ConfigError(f"{section}.base_url {base_url!r} is not a URL ({exc}) -- fix: {fix}") from None
    if not isinstance(base_url, str) or parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"{section}.base_url must be an http:// or https:// URL with a host, got {base_url!r} "
                          f"-- fix: {fix}")
    return base_url


def check_settings(section: str, *, timeout_s: Any, max_retries: Any, backoff_s: Any = 0.0) \
        -> tuple[float, int, float]:
    """``timeout_s``, ``max_retries`` and ``backoff_s`` of ``section`` checked, as float, int,
    float; a ConfigError naming the field (with a fix) for any other value."""
    if not _real(timeout_s) or not 0 < timeout_s < math.inf:
        raise ConfigError(f"{section}.timeout_s must be a number of seconds > 0 (the deadline of a whole request), "
                          f"got {timeout_s!r} -- fix: {section}.timeout_s=60")
    if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
        raise ConfigError(f"{section}.max_retries must be an integer >= 0, got {max_retries!r} -- fix: "
                          f"{section}.max_retries=3 (0: no retry)")
    if not _real(backoff_s) or not 0 <= backoff_s < math.inf:
        raise ConfigError(f"{section}.backoff_s must be a number of seconds >= 0 (the first wait before a retry, "
                          f"doubled each time), got {backoff_s!r} -- fix: {section}.backoff_s=1.0")
    return float(timeout_s), max_retries, float(backoff_s)


def _real(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def is_json_int(value: Any) -> bool:
    """Whether a parsed JSON value is an integer: not a float (``0.9`` is not index 0), not a
    boolean (``true`` is not 1), not a string."""
    return type(value) is int


def is_json_number(value: Any) -> bool:
    """Whether a parsed JSON value is a number (int or float; not a boolean, not a string)."""
    return type(value) in (int, float)


def post_json(url: str, body: Any, *, timeout_s: float, max_retries: int, backoff_s: float,
              api_key_env: str | None = None) -> Reply:
    """POST ``body`` as JSON to ``url``: at most ``max_retries + 1`` attempts, each abandoned
    after ``timeout_s`` seconds in all (see the module docstring)."""
    data = json.dumps(body).encode()
    headers = {"Content-Type": "application/json"}
    key = os.environ.get(api_key_env) if api_key_env else None
    if key:
        remember(key)
        headers["Authorization"] = f"Bearer {key}"
    reason = ""
    attempt = 0
    for attempt in range(1, max_retries + 2):
        try:
            return Reply(_attempt(url, data, headers, timeout_s), "", attempt)
        except _Refused as exc:
            return Reply(None, redact(str(exc)), attempt, fatal=True, fix=exc.fix)
        except _Status as exc:
            reason = str(exc)
            if exc.code not in RETRY_STATUS:
                break
        except (OSError, http.client.HTTPException) as exc:  # URLError and timeouts are OSErrors
            reason = f"{type(exc).__name__}: {getattr(exc, 'reason', None) or exc}"
        if attempt <= max_retries:
            time.sleep(min(backoff_s * 2 ** (attempt - 1), MAX_BACKOFF_S))
    return Reply(None, redact(reason or "unknown error"), attempt)


def _attempt(url: str, data: bytes, headers: dict[str, str], timeout_s: float) -> bytes:
    """One attempt: the reply's body, within the deadline, following same-host 307/308 only."""
    deadline = _Deadline(timeout_s)
    opener = urllib.request.build_opener(_NoRedirect(), _HTTPHandler(deadline), _HTTPSHandler(deadline))
    with deadline:
        for _ in range(MAX_HOPS + 1):
            request = urllib.request.Request(url, data=data, headers=headers, method="POST")
            try:
                with opener.open(request, timeout=timeout_s) as resp:
                    return _read(resp, MAX_REPLY_BYTES)
            except urllib.error.HTTPError as exc:
                with exc:
                    if not 300 <= exc.code < 400:
                        text = redact(exc.read(MAX_ERROR_BYTES).decode("utf-8", "replace"))
                        raise _Status(exc.code, " ".join(text.split())[:200]) from None
                    url = _redirect_target(url, exc.code, exc.headers.get("Location"))
        raise _Refused(f"the endpoint redirected more than {MAX_HOPS} times", REDIRECT_FIX)


def _redirect_target(url: str, code: int, location: str | None) -> str:
    """Where a same-host 307/308 leads; any other redirect is refused (the key never goes there)."""
    if not location:
        raise _Refused(f"the endpoint redirected (HTTP {code}) without a Location", REDIRECT_FIX)
    target = urllib.parse.urljoin(url, location)
    if _origin(target) != _origin(url):
        raise _Refused(f"the endpoint redirected (HTTP {code}) to another host, {target}; rag_bench does not follow "
                       "redirects across hosts, the API key is never sent there", REDIRECT_FIX)
    if code not in (307, 308):
        raise _Refused(f"the endpoint redirected (HTTP {code}) to {target}, which turns the POST into a GET; "
                       "rag_bench follows only 307/308 redirects on the same host", REDIRECT_FIX)
    return target


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urllib.parse.urlsplit(url)
    try:
        port = parts.port or {"http": 80, "https": 443}.get(parts.scheme)
    except ValueError:
        port = -1
    return parts.scheme, (parts.hostname or "").lower(), port


def _read(resp: http.client.HTTPResponse, limit: int) -> bytes:
    """The whole body, refused beyond ``limit`` bytes (a reply that never ends is not an answer)."""
    declared = resp.headers.get("Content-Length", "")
    if declared.isdigit() and int(declared) > limit:
        raise _Refused(f"the reply is {int(declared) >> 20} MiB, more than {limit >> 20} MiB",
                       "ask for less per request (a smaller batch_size) or check the endpoint")
    parts, size = [], 0
    while chunk := resp.read(1 << 16):
        size += len(chunk)
        if size > limit:
            raise _Refused(f"the reply is larger than {limit >> 20} MiB",
                           "ask for less per request (a smaller batch_size) or check the endpoint")
        parts.append(chunk)
    if resp.length:  # read(amt) ends quietly where a reply shorter than its Content-Length stops
        raise http.client.IncompleteRead(b"".join(parts), resp.length)
    return b"".join(parts)


class _Deadline:
    """Shuts the request's connection down ``seconds`` after it started, whatever it is waiting
    for: a socket timeout bounds one read, and a reply sent a byte at a time never trips it. A
    request cut off raises TimeoutError from the ``with`` block."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._lock = threading.Lock()
        # Our own duplicates of the connections' sockets: urllib drops the connection's reference
        # once the headers are in and TLS replaces it, but a shutdown through any descriptor of
        # the socket ends the connection; ours stay open (no descriptor reused) until the exit.
        self._socks: list[socket.socket] = []
        self._over = self._done = False
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    def watch(self, sock: socket.socket) -> None:
        """Watch ``sock`` (just connected); TimeoutError if the deadline passed while it connected."""
        with self._lock:
            if self._over:
                raise TimeoutError(self._message())
            self._socks.append(sock.dup())

    def _expire(self) -> None:
        with self._lock:
            if self._done:
                return
            self._over = True
            for sock in self._socks:  # the blocked read or write returns at once
                with suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    def _message(self) -> str:
        return (f"timed out: no complete reply within timeout_s={self.seconds:g} s (the deadline of the whole "
                "request; the endpoint is too slow or sends its reply slowly)")

    def __enter__(self) -> _Deadline:
        self._timer.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._timer.cancel()
        with self._lock:
            self._done = True
            over = self._over
            for sock in self._socks:
                sock.close()
        # A reply cut off by the shutdown can look complete (a body that ends at the close).
        if over and (exc is None or isinstance(exc, (OSError, http.client.HTTPException))):
            raise TimeoutError(self._message()) from exc


class _WatchedConnection(http.client.HTTPConnection):
    """An HTTP connection its request's :class:`_Deadline` can shut down."""

    deadline: _Deadline

    def connect(self) -> None:
        """Connect, then hand the socket to the deadline."""
        super().connect()
        assert self.sock is not None
        self.deadline.watch(self.sock)


class _WatchedHTTPSConnection(http.client.HTTPSConnection, _WatchedConnection):
    """The same for HTTPS: HTTPSConnection.connect reaches ours before its TLS handshake, which
    the deadline then bounds too."""


def _watched(cls: type[_WatchedConnection], deadline: _Deadline) -> Any:
    """A connection factory for urllib's ``do_open``: ``cls`` watched by ``deadline``."""
    def connection(*args: Any, **kwargs: Any) -> _WatchedConnection:
        conn = cls(*args, **kwargs)
        conn.deadline = deadline
        return conn
    return connection


class _HTTPHandler(urllib.request.HTTPHandler):
    def __init__(self, deadline: _Deadline) -> None:
        super().__init__()
        self._deadline = deadline

    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(_watched(_WatchedConnection, self._deadline), req)


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def __init__(self, deadline: _Deadline) -> None:
        super().__init__()
        self._deadline = deadline

    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(_watched(_WatchedHTTPSConnection, self._deadline), req,
                            context=self._context)  # type: ignore[attr-defined]


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """urllib follows a 301/302/303 as a GET with every header but the content ones -- the key
    included, to any host. Here a redirect is an HTTPError, judged by :func:`_redirect_target`."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None
