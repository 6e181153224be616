"""rag_bench.http: one POST with a deadline, bounded retries, no redirect across hosts, the key
never in a reason; and rag_bench.redaction. Against real local servers (tests/servers.py)."""

from __future__ import annotations

import json
import time

import pytest

from rag_bench import http
from rag_bench.errors import ConfigError, EndpointError
from rag_bench.http import check_settings, check_url, post_json
from rag_bench.redaction import redact, remember
from tests.servers import TRANSPORT_ACTS, HostileEndpoint, hostile, serving

KEY = "sk-test-HTTPKEY-0123456789"
BODY = {"model": "m", "input": ["a"]}


class Elsewhere(HostileEndpoint):
    """Another host: answers anything, and records what reached it."""

    def do_GET(self) -> None:  # noqa: N802 (http.server API)
        self.server.seen.append((self.path, self.headers.get("Authorization")))  # type: ignore[attr-defined]
        self.send(200, b'{"data": []}')

    def do_POST(self) -> None:  # noqa: N802
        self.do_GET()


@pytest.fixture
def key(monkeypatch):
    monkeypatch.setenv("HTTP_TEST_KEY", KEY)
    return "HTTP_TEST_KEY"


def post(server, key_env=None, **kw):
    options = {"timeout_s": 2.0, "max_retries": 0, "backoff_s": 0.0, **kw}
    return post_json(f"http://127.0.0.1:{server.server_port}/v1/embeddings", BODY, api_key_env=key_env, **options)


@pytest.mark.parametrize("act", ["redirect-302-elsewhere", "redirect-301-elsewhere", "redirect-307-elsewhere"])
def test_a_redirect_to_another_host_is_refused_and_the_key_never_goes_there(key, act):
    with serving(Elsewhere, seen=[]) as other, hostile(TRANSPORT_ACTS[act]) as server:
        server.elsewhere = f"http://localhost:{other.server_port}"
        reply = post(server, key, max_retries=2)
    assert other.seen == []  # nothing reached the other host, with or without the key
    assert reply.body is None and reply.fatal and reply.attempts == 1  # no retry changes a redirect
    assert "redirected" in reply.reason and "to another host" in reply.reason and "API key is never sent" \
        in reply.reason and f"localhost:{other.server_port}" in reply.reason
    assert "final URL" in reply.fix


def test_a_same_host_redirect_that_turns_the_post_into_a_get_is_refused(key):
    with hostile(TRANSPORT_ACTS["redirect-303-same-host"]) as server:
        reply = post(server, key)
    assert reply.fatal and "turns the POST into a GET" in reply.reason and len(server.seen) == 1


def test_a_same_host_307_is_followed_with_the_body_and_the_key(key):
    def to_slash(h, good):
        h.send(307, b"", Location=h.path + "/")

    with hostile(to_slash, broken=1) as server:
        reply = post(server, key)
    assert reply.body is not None and json.loads(reply.body)["data"] and reply.attempts == 1
    assert server.seen == [("/v1/embeddings", f"Bearer {KEY}"), ("/v1/embeddings/", f"Bearer {KEY}")]


def test_the_deadline_bounds_the_whole_request_not_each_read():
    """A reply sent a byte every 0.2 s: no read waits long, the whole takes minutes."""
    with hostile(TRANSPORT_ACTS["drip"]) as server:
        t0 = time.monotonic()
        reply = post(server, timeout_s=1.0, max_retries=1)
        took = time.monotonic() - t0
    assert reply.body is None and not reply.fatal and reply.attempts == 2
    assert "timed out" in reply.reason and "timeout_s=1" in reply.reason
    assert took < 3.5, took  # two attempts of 1 s


@pytest.mark.parametrize("act", ["truncated", "bad-status-line", "line-too-long", "reset", "drip", "echo-503"])
def test_a_broken_transport_is_retried_then_succeeds(act):
    with hostile(TRANSPORT_ACTS[act], broken=1) as server:
        reply = post(server, timeout_s=1.0, max_retries=1)
    assert reply.body is not None and json.loads(reply.body)["data"] and reply.attempts == 2


@pytest.mark.parametrize(("act", "needle"), [("truncated", "IncompleteRead"), ("bad-status-line", "BadStatusLine"),
                                             ("line-too-long", "LineTooLong"), ("reset", "RemoteDisconnected")])
def test_a_broken_transport_every_time_is_a_reason_not_an_exception(act, needle):
    with hostile(TRANSPORT_ACTS[act]) as server:
        reply = post(server, max_retries=1)
    assert reply.body is None and not reply.fatal and reply.attempts == 2 and needle in reply.reason


def test_a_reply_larger_than_the_cap_is_refused():
    with hostile(TRANSPORT_ACTS["huge"]) as server:
        reply = post(server, max_retries=2)
    assert reply.fatal and "MiB" in reply.reason and reply.attempts == 1


def test_a_reply_that_grows_past_the_cap_is_refused(monkeypatch):
    monkeypatch.setattr(http, "MAX_REPLY_BYTES", 1000)

    def chunked(h, good):  # no Content-Length: the size is known only by reading
        h.raw(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + b"800\r\n" + b" " * 0x800 + b"\r\n0\r\n\r\n")

    with hostile(chunked) as server:
        reply = post(server)
    assert reply.fatal and "larger than" in reply.reason


def test_an_echoed_key_is_redacted_from_the_reason(key):
    with hostile(TRANSPORT_ACTS["echo-401"]) as server:
        reply = post(server, key, max_retries=3)
    assert reply.attempts == 1 and reply.reason.startswith("HTTP 401:")
    assert KEY not in reply.reason and "Bearer [redacted]" in reply.reason


def test_errors_and_reasons_never_hold_a_remembered_key():
    remember("k3y/With+Odd&chars-0042")
    text = 'got k3y/With+Odd&chars-0042, "k3y\\/With+Odd&chars-0042", k3y%2FWith%2BOdd%26chars-0042 and Bearer xyz'
    assert redact(text) == 'got [redacted], "[redacted]", [redacted] and Bearer [redacted]'
    assert "0042" not in str(EndpointError(f"endpoint said {text}"))
    remember("short")  # too short to be told from words: left alone (a bearer token still goes)
    assert redact("a short note") == "a short note"


@pytest.mark.parametrize(("kw", "needle"), [
    ({"timeout_s": 0}, "embedder.timeout_s must be a number of seconds > 0"),
    ({"timeout_s": -1.0}, "embedder.timeout_s"),
    ({"timeout_s": float("inf")}, "embedder.timeout_s"),
    ({"timeout_s": True}, "embedder.timeout_s"),
    ({"timeout_s": "60"}, "embedder.timeout_s"),
    ({"max_retries": -1}, "embedder.max_retries must be an integer >= 0"),
    ({"max_retries": 1.5}, "embedder.max_retries"),
    ({"backoff_s": -0.5}, "embedder.backoff_s must be a number of seconds >= 0"),
    ({"backoff_s": float("nan")}, "embedder.backoff_s"),
])
def test_settings_out_of_range_are_config_errors_with_a_fix(kw, needle):
    with pytest.raises(ConfigError, match="-- fix: embedder") as err:
        check_settings("embedder", **{"timeout_s": 60.0, "max_retries": 3, "backoff_s": 1.0, **kw})
    assert needle in str(err.value)


@pytest.mark.parametrize("url", [None, "", "localhost:8080/v1", "ftp://host/v1", "http:///v1", "http://host:99999/v1",
                                 "file:///etc/passwd"])
def test_a_base_url_that_is_not_http_is_a_config_error(url):
    with pytest.raises(ConfigError, match=r"reranker.base_url.*-- fix: reranker.base_url=http://HOST:PORT/v1"):
        check_url("reranker", url)
