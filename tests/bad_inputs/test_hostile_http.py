"""Hostile HTTP endpoints through the real command line (issue 40, items 1, 2, 12, 24, 25, 28, 30).

Each of our three HTTP components -- embedder=openai, reranker=rerank_api, generator=openai -- is
pointed at a local endpoint that misbehaves (tests/servers.py ``hostile``): redirects to another
host, a reply sent a byte at a time, cut short, not HTTP, larger than the cap, an error quoting
the request's key back, and 200 replies of the right layout with garbage in it. Every run either
exits 2 naming the endpoint and what was wrong (nothing left behind), or -- a failure that retries
cure -- succeeds; the generator records a call that still fails after its retries as that
question's ``generation_error`` (docs/metrics.md, "Failure labels": ``error``). Whatever happens: the API
key (a recognisable fake in the variable ``api_key_env`` names) is in no file under the output
root (cell files, logs, the MLflow store and artifacts) or the cache folder, nor on the console;
nothing reached the other host; and the caches hold only values of good replies.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import struct
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rag_bench.cli import main as cli
from rag_bench.embedding.cache import vector_from_bytes
from tests.bad_inputs.test_bad_inputs import nothing_left
from tests.conftest import TINY
from tests.servers import TRANSPORT_ACTS, Act, HostileEndpoint, good_reply, hostile, serving

KEY = "sk-HOSTILE-r4-9f27c1d0e5b3a8"
KEY_ENV = "RAG_BENCH_HOSTILE_TEST_KEY"
SECTION = {"embedder": "embedder", "reranker": "reranker", "generator": "generator"}
PATH = {"embedder": "/v1/embeddings", "reranker": "/v1/rerank", "generator": "/v1/chat/completions"}


def overrides(component: str, url: str) -> list[str]:
    """The cell: the component at ``url``, 1 retry without backoff, a 1 s deadline, every
    request in flight at once (a run of failing requests takes two deadlines, not twelve)."""
    common = [f"base_url={url}", f"api_key_env={KEY_ENV}", "max_retries=1", "backoff_s=0", "timeout_s=1",
              "concurrency=8"]
    group = {"embedder": ["embedder=openai", "retriever=dense", "generator=none"],
             "reranker": ["reranker=rerank_api", "reranker.depth=5", "generator=none"],
             "generator": ["generator=openai"]}[component]
    return [*group, *(f"{SECTION[component]}.{c}" for c in common)]


# -- garbage of the right layout, per endpoint (a 200 reply) --------------------------------------

def _shape(change: Callable[[dict[str, Any]], Any]) -> Act:
    def act(h: HostileEndpoint, good: dict[str, Any]) -> None:
        doc = change(good)
        h.send(200, doc if isinstance(doc, bytes) else json.dumps(doc).encode())
    return act


def _each(key: str, change: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], Any]:
    def apply(good: dict[str, Any]) -> Any:
        for item in good[key]:
            change(item)
        return good
    return apply


def _first(key: str, field: str, value: Any) -> Callable[[dict[str, Any]], Any]:
    def apply(good: dict[str, Any]) -> Any:
        good[key][0][field] = value
        return good
    return apply


def _usage(field: str, value: Any) -> Callable[[dict[str, Any]], Any]:
    def apply(good: dict[str, Any]) -> Any:
        good["usage"][field] = value
        return good
    return apply


def _last_index_out_of_range(key: str) -> Callable[[dict[str, Any]], Any]:
    def apply(good: dict[str, Any]) -> Any:
        good[key][-1]["index"] = len(good[key])
        return good
    return apply


def _echoed(good: dict[str, Any]) -> bytes:
    return b'{"error": "no route for Authorization: Bearer %s"}' % KEY.encode()


# (name, act, needle in the message)
EMBEDDER_SHAPES: list[tuple[str, Act, str]] = [
    ("float-index", _shape(_each("data", lambda d: d.update(index=d["index"] + 0.9))), "do not number the"),
    ("bool-index", _shape(_each("data", lambda d: d.update(index=bool(d["index"])))), "do not number the"),
    ("duplicate-index", _shape(_each("data", lambda d: d.update(index=0))), "do not number the"),
    ("index-out-of-range", _shape(_last_index_out_of_range("data")), "do not number the"),
    ("fewer-vectors", _shape(lambda g: {**g, "data": g["data"][1:]}), "vectors for"),
    ("string-vector", _shape(_each("data", lambda d: d.update(embedding=[str(x) for x in d["embedding"]]))),
     "not lists of numbers"),
    ("bool-vector", _shape(_first("data", "embedding", [True, False] * 4)), "not lists of numbers"),
    ("null-vector", _shape(_first("data", "embedding", None)), "not lists of numbers"),
    ("zero-vector", _shape(_first("data", "embedding", [0.0] * 8)), "all-zero vectors"),
    ("float32-overflow", _shape(_first("data", "embedding", [1e39] + [0.1] * 7)), "NaN or infinite"),
    ("infinite-tokens", _shape(_usage("prompt_tokens", float("inf"))), "usage.prompt_tokens is inf"),
    ("fractional-tokens", _shape(_usage("prompt_tokens", 1.9)), "usage.prompt_tokens is 1.9"),
    ("echoed-key", _shape(_echoed), "not the embeddings layout"),
]
RERANKER_SHAPES: list[tuple[str, Act, str]] = [
    ("float-index", _shape(_each("results", lambda r: r.update(index=r["index"] + 0.9))), "do not number the"),
    ("bool-index", _shape(_each("results", lambda r: r.update(index=bool(r["index"])))), "do not number the"),
    ("duplicate-index", _shape(_each("results", lambda r: r.update(index=0))), "do not number the"),
    ("index-out-of-range", _shape(_last_index_out_of_range("results")), "do not number the"),
    ("bool-score", _shape(_first("results", "relevance_score", True)), "scores that are not numbers: [True]"),
    ("string-score", _shape(_first("results", "relevance_score", "0.5")), "scores that are not numbers: ['0.5']"),
    ("null-score", _shape(_first("results", "relevance_score", None)), "scores that are not numbers: [None]"),
    ("infinite-score", _shape(_first("results", "relevance_score", float("inf"))), "NaN or infinite"),
    ("echoed-key", _shape(_echoed), "not a rerank result"),
]


def _content(value: Any) -> Callable[[dict[str, Any]], Any]:
    def apply(good: dict[str, Any]) -> Any:
        good["choices"][0]["message"]["content"] = value
        return good
    return apply


GENERATOR_SHAPES: list[tuple[str, Act, str]] = [
    ("content-number", _shape(_content(42)), "content is a int, not a string"),
    ("content-list", _shape(_content(["a"])), "content is a list, not a string"),
    ("no-choices", _shape(lambda g: {**g, "choices": []}), "not a chat completion"),
    ("infinite-tokens", _shape(_usage("prompt_tokens", float("inf"))), "prompt_tokens=inf"),
    ("fractional-tokens", _shape(_usage("completion_tokens", 1.9)), "completion_tokens=1.9"),
    ("negative-tokens", _shape(_usage("prompt_tokens", -5)), "prompt_tokens=-5"),
    ("bool-tokens", _shape(_usage("prompt_tokens", True)), "prompt_tokens=True"),
    ("string-tokens", _shape(_usage("prompt_tokens", "12")), "prompt_tokens='12'"),
    ("echoed-key", _shape(_echoed), "not a chat completion"),
]
SHAPES = {"embedder": EMBEDDER_SHAPES, "reranker": RERANKER_SHAPES, "generator": GENERATOR_SHAPES}

# Transport misbehaviours: the endpoint's fault whatever the request (exit 2, no retry), or one
# that a retry may cure (a transient one), or an error status quoting the key back.
FATAL = {"redirect-302-elsewhere": "redirected (HTTP 302) to another host",
         "redirect-301-elsewhere": "redirected (HTTP 301) to another host",
         "redirect-307-elsewhere": "redirected (HTTP 307) to another host",
         "redirect-303-same-host": "turns the POST into a GET",
         "huge": "MiB, more than"}
TRANSIENT = {"drip": "timed out: no complete reply within timeout_s=1 s", "truncated": "IncompleteRead",
             "bad-status-line": "BadStatusLine", "line-too-long": "LineTooLong", "reset": "RemoteDisconnected",
             "echo-503": "HTTP 503: {\"error\": \"invalid key Bearer [redacted]\"}"}
REFUSED_STATUS = {"echo-401": "HTTP 401: {\"error\": \"invalid key Bearer [redacted]\"}"}


class Elsewhere(HostileEndpoint):
    """The other host a redirect points to: records whatever reaches it."""

    def do_GET(self) -> None:  # noqa: N802 (http.server API)
        self.server.seen.append((self.path, self.headers.get("Authorization")))  # type: ignore[attr-defined]
        self.send(200, b'{"data": [], "results": [], "choices": []}')

    do_POST = do_GET  # noqa: N815


@dataclass
class Outcome:
    code: int
    err: str
    out: Path
    cache: Path
    seen: list[tuple[str, str | None]]


@contextmanager
def key_in_env() -> Iterator[None]:
    old = os.environ.get(KEY_ENV)
    os.environ[KEY_ENV] = KEY
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(KEY_ENV, None)
        else:
            os.environ[KEY_ENV] = old


def run_against(root: Path, component: str, act: Act, broken: int | None, capsys: Any) -> Outcome:
    """`rag-bench run` (MLflow into ``root/out``, caches in ``root/cache``) with ``component`` at a
    hostile endpoint; checks what holds whatever the outcome, returns the outcome."""
    out, cache = root / "out", root / "cache"
    old_cache = os.environ.get("RAG_BENCH_CACHE")
    # The session's empty MLflow store (rag_bench.tracking.store_seed): each run's own cache folder
    # would otherwise make MLflow build its tables again (1.2 s a run).
    stores = Path(old_cache or cache) / "mlflow-stores"
    if stores.is_dir() and old_cache:
        shutil.copytree(stores, cache / "mlflow-stores")
    os.environ["RAG_BENCH_CACHE"] = str(cache)
    try:
        with key_in_env(), serving(Elsewhere, seen=[]) as other, hostile(act, broken=broken) as server:
            server.elsewhere = f"http://localhost:{other.server_port}"
            url = f"http://127.0.0.1:{server.server_port}/v1"
            code = cli(["run", f"dataset.path={TINY}", f"output.root={out}", "tracking=mlflow",
                        "experiment.name=hostile", *overrides(component, url)])
            seen = list(server.seen)
        if old_cache and not stores.is_dir() and (cache / "mlflow-stores").is_dir():
            shutil.copytree(cache / "mlflow-stores", stores)
    finally:
        if old_cache is None:
            os.environ.pop("RAG_BENCH_CACHE", None)
        else:
            os.environ["RAG_BENCH_CACHE"] = old_cache
    captured = capsys.readouterr()
    console = captured.out + captured.err
    assert "Traceback" not in console, console[-3000:]
    assert KEY not in console, "the key was printed"
    assert other.seen == [], f"a request reached the other host: {other.seen}"
    assert all(auth == f"Bearer {KEY}" for _, auth in seen), "a request went without the key (or with another)"
    holding = [p for d in (out, cache) if d.exists() for p in d.rglob("*") if p.is_file()
               and KEY.encode() in p.read_bytes()]
    assert not holding, f"the key is stored in {holding}"
    return Outcome(code, captured.err, out, cache, seen)


def cached(cache: Path, component: str) -> list[Any]:
    """The values the component's persistent cache holds."""
    file, table, decode = {
        "embedder": ("embeddings.sqlite", "vectors", lambda b: tuple(np.round(vector_from_bytes(b), 6).tolist())),
        "reranker": ("rerank_pairs.sqlite", "rerank_pairs", lambda b: struct.unpack("<d", b)[0]),
        "generator": ("generations.sqlite", "generations", lambda b: json.loads(b)),
    }[component]
    if not (cache / file).exists():
        return []
    with sqlite3.connect(cache / file) as con:
        return [decode(row[0]) for row in con.execute(f"SELECT data FROM {table}")]


def only_good_values_cached(cache: Path, component: str) -> None:
    """Every cached value is one a good reply gives: finite non-zero vectors of the good
    endpoint's (sha256-derived, 8 dims), the good scores, the good completion."""
    values = cached(cache, component)
    if component == "embedder":
        for v in values:
            assert len(v) == 8 and all(-0.5 <= x <= 0.5 for x in v) and any(v), v
    elif component == "reranker":
        for v in values:
            assert np.isfinite(v) and v >= 0, v
    else:
        content = good_reply(PATH["generator"], {})["choices"][0]["message"]["content"]
        for v in values:
            assert v["raw"] == content and (v["tokens_in"], v["tokens_out"]) == (100, 10), v


def refused(o: Outcome, component: str, needle: str) -> None:
    """Exit 2 naming the endpoint and ``needle``; nothing written, nothing cached."""
    assert o.code == 2, o.err[-3000:]
    assert f"{component} endpoint http://127.0.0.1:" in o.err and PATH[component] in o.err, o.err[-3000:]
    assert needle in o.err and "-- fix:" in o.err, (needle, o.err[-3000:])
    nothing_left(o.out)
    assert cached(o.cache, component) == [], "a value of a refused reply was cached"


def records(o: Outcome) -> pd.DataFrame:
    (cell,) = (o.out / "hostile").glob("*/DONE")
    return pd.read_parquet(cell.parent / "records.parquet")


CASES = [(c, name, act, needle) for c in SHAPES for name, act, needle in SHAPES[c]]


@pytest.mark.parametrize(("component", "name", "act", "needle"), CASES,
                         ids=[f"{c}-{name}" for c, name, _, _ in CASES])
def test_garbage_of_the_right_layout_is_the_endpoints_error(tmp_path, capsys, component, name, act, needle):
    o = run_against(tmp_path, component, act, None, capsys)
    refused(o, component, needle)
    if name == "echoed-key":
        assert "Bearer [redacted]" in o.err  # the reply's start is quoted, the key is not


TRANSPORT = [(c, name) for c in SHAPES for name in (*FATAL, *TRANSIENT, *REFUSED_STATUS)]


@pytest.mark.parametrize(("component", "name"), TRANSPORT, ids=[f"{c}-{n}" for c, n in TRANSPORT])
def test_a_hostile_transport_every_time(tmp_path, capsys, component, name):
    """Every request misbehaves: a redirect or a reply too large stops the cell at once; a
    transient failure is retried, then stops the cell (embedder, reranker) or is recorded per
    question, the key redacted (generator); an error status quoting the key is not retried."""
    o = run_against(tmp_path, component, TRANSPORT_ACTS[name], None, capsys)
    if name in FATAL:
        refused(o, component, FATAL[name])
        assert len(o.seen) <= 8, "a redirect was retried"  # one request each, at most `concurrency` in flight
    elif component != "generator":
        needle = TRANSIENT.get(name) or REFUSED_STATUS[name]
        refused(o, component, needle)
        assert f"after {1 if name in REFUSED_STATUS else 2} attempt(s)" in o.err
    else:
        assert o.code == 0, o.err[-3000:]
        errors = records(o)["generation_error"]
        needle = TRANSIENT.get(name) or REFUSED_STATUS[name]
        assert errors.notna().all() and all(needle in e for e in errors), errors.tolist()
        assert cached(o.cache, component) == []


@pytest.mark.parametrize("component", list(SHAPES))
@pytest.mark.parametrize("name", list(TRANSIENT))
def test_a_transient_failure_is_cured_by_a_retry(tmp_path, capsys, component, name):
    o = run_against(tmp_path, component, TRANSPORT_ACTS[name], 1, capsys)
    assert o.code == 0, o.err[-3000:]
    only_good_values_cached(o.cache, component)
    assert cached(o.cache, component), "nothing of the good replies was cached"
    if component == "generator":
        assert records(o)["generation_error"].isna().all()


# -- the property: any misbehaviour, any component, always or once -------------------------------

ACTS: dict[str, Act] = {**TRANSPORT_ACTS}
for _component, _shapes in SHAPES.items():
    for _name, _act, _ in _shapes:
        ACTS[f"{_component}:{_name}"] = _act


@st.composite
def hostile_runs(draw: Any) -> tuple[str, str, int | None]:
    component = draw(st.sampled_from(list(SHAPES)))
    names = [n for n in ACTS if ":" not in n or n.startswith(component + ":")]
    return component, draw(st.sampled_from(names)), draw(st.sampled_from([1, None]))


@settings(max_examples=16, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(hostile_runs())
def test_any_hostile_endpoint_exits_2_or_succeeds_and_never_stores_the_key(capsys, run):
    """For any (component, misbehaviour, once or always): exit 2 naming the endpoint with nothing
    written and nothing cached, or a success (retried, or the generator's failures recorded per
    question) whose caches hold only good replies' values; never a traceback; the key nowhere
    under the output root (MLflow store included) or the cache folder, and never sent elsewhere."""
    component, name, broken = run
    with tempfile.TemporaryDirectory() as tmp:
        o = run_against(Path(tmp), component, ACTS[name], broken, capsys)
        if o.code == 2:
            refused(o, component, "")
            assert not (broken == 1 and name in TRANSIENT), "a failure one retry cures stopped the cell"
        else:
            assert o.code == 0, o.err[-3000:]
            only_good_values_cached(o.cache, component)
            if component == "generator":  # a failed call is recorded; a redirect or garbage stops the cell
                assert name in TRANSIENT or name in REFUSED_STATUS, o.err[-3000:]
                if broken is None:
                    assert records(o)["generation_error"].notna().all()
            else:
                assert broken == 1 and name in TRANSIENT, "a misbehaviour that must stop the cell did not"


SETTINGS = [(c, field, value, needle) for c in SHAPES for field, value, needle in (
    ("backoff_s", "-1", "backoff_s must be a number of seconds >= 0"),
    ("timeout_s", "0", "timeout_s must be a number of seconds > 0"),
    ("max_retries", "-1", "max_retries must be an integer >= 0"),
    ("base_url", "ftp://127.0.0.1/v1", "base_url must be an http:// or https:// URL"))]


@pytest.mark.parametrize(("component", "field", "value", "needle"), SETTINGS,
                         ids=[f"{c}-{f}={v}" for c, f, v, _ in SETTINGS])
def test_settings_out_of_range_stop_the_run_before_any_request(tmp_path, capsys, component, field, value, needle):
    """A negative backoff crashed on the first retry (time.sleep); now every such value is refused
    when the component is built: exit 2, the field and a fix, nothing written."""
    with hostile(TRANSPORT_ACTS["reset"]) as server:
        args = [a for a in overrides(component, f"http://127.0.0.1:{server.server_port}/v1")
                if not a.startswith(f"{SECTION[component]}.{field}=")]
        code = cli(["run", f"dataset.path={TINY}", f"output.root={tmp_path / 'out'}", "tracking=none",
                    "experiment.name=hostile", *args, f"{SECTION[component]}.{field}={value}"])
    err = capsys.readouterr().err
    assert code == 2, err[-3000:]
    assert f"{SECTION[component]}.{needle}" in err and f"-- fix: {SECTION[component]}.{field}=" in err, err[-3000:]
    assert server.seen == []
    nothing_left(tmp_path / "out")
