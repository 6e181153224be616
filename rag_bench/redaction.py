"""API keys never reach a message, a record, a trace or a log.

Every key a client of ours sends is remembered here (:func:`remember`), and every error text we
store or print passes through :func:`redact`: the messages of our errors
(:class:`~rag_bench.errors.RagBenchError` redacts its own), an HTTP failure's reason (kept in
records.parquet, failures.csv, traces and MLflow), a judge failure. A gateway that echoes the
request back (``invalid key Bearer sk-...``) then stores ``[redacted]``, not the key -- also when it
echoes the key in another case (``SK-...``: a gateway that upper-cases headers) or with whitespace
inside it (a line wrapped or a space inserted): each form is matched case-insensitively, with any
run of whitespace (or of JSON's ``\\n``, ``\\r``, ``\\t``) allowed between two of its characters.
"""

from __future__ import annotations

import json
import re
import threading
import urllib.parse

MASK = "[redacted]"
# A shorter value is not treated as a secret in text: replacing every "test" in a message would
# garble it (a bearer token is redacted whatever its length).
MIN_KEY_CHARS = 8
# "Bearer <token>" as a gateway echoes an Authorization header, whatever the token.
_BEARER = re.compile(r"(?i)\b(bearer)\s+[^\s\"'`,;()<>\[\]{}\\]+")

_lock = threading.Lock()
_forms: list[str] = []  # every remembered key and its escaped forms, longest first
_pattern: re.Pattern[str] | None = None  # the forms as one pattern (None: no key remembered)


def _spelled(form: str) -> str:
    """A pattern of ``form`` in any case with any whitespace between its characters (also written
    as a JSON escape, ``\\n``: a body quoting a wrapped key)."""
    return r"(?:\s|\\[nrt])*".join(re.escape(c) for c in form)


def remember(key: str | None) -> None:
    """Remember ``key`` (a value about to be sent as a credential) so :func:`redact` removes it."""
    if not key or len(key) < MIN_KEY_CHARS:
        return
    # As a body can carry it: raw, JSON-escaped, URL-encoded.
    forms = {key, json.dumps(key)[1:-1], json.dumps(key, ensure_ascii=False)[1:-1],
             key.replace("/", "\\/"), urllib.parse.quote(key, safe=""), urllib.parse.quote_plus(key)}
    global _pattern
    with _lock:
        _forms[:] = sorted(set(_forms) | forms, key=len, reverse=True)
        _pattern = re.compile("|".join(_spelled(f) for f in _forms), re.IGNORECASE)


def redact(text: str) -> str:
    """``text`` without any remembered key (or its escaped forms, in any case, whitespace inside
    or not) and without bearer tokens."""
    with _lock:
        pattern = _pattern
    if pattern is not None:
        text = pattern.sub(MASK, text)
    return _BEARER.sub(lambda m: f"{m.group(1)} {MASK}", text)
