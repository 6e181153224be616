"""Parsing files: once per (bytes, parser, version) through the on-disk cache, in a bounded child
process (a hang or a crash is a recorded failure, never cached), no network in the child."""

from __future__ import annotations

import os
import time

import pytest

from rag_bench.parsing.base import Parsed, ParseFailure
from rag_bench.parsing.files import ParseCache, parse_files, parse_isolated


class Upper:
    """A parser of our own (.txt-like .html stand-in): upper-cases the bytes; counts nothing (the
    cache's hits are what the test reads)."""

    name = "upper"
    suffixes = (".html",)

    def version(self) -> str:
        return "1"

    def parse(self, data: bytes, suffix: str) -> Parsed:
        if not data.strip():
            raise ParseFailure("empty")
        return Parsed(data.decode().upper(), warnings=("shouted",))


class Sleeper(Upper):
    name = "sleeper"

    def parse(self, data: bytes, suffix: str) -> Parsed:
        time.sleep(60)
        return Parsed("never")


class Crasher(Upper):
    name = "crasher"

    def parse(self, data: bytes, suffix: str) -> Parsed:
        os._exit(3)


class Dialer(Upper):
    name = "dialer"

    def parse(self, data: bytes, suffix: str) -> Parsed:
        import socket

        socket.create_connection(("127.0.0.1", 9))
        return Parsed("connected")


def test_second_parse_is_served_by_the_cache_and_an_edit_reparses_only_that_file(tmp_path):
    a, b, empty = tmp_path / "a.html", tmp_path / "b.html", tmp_path / "e.html"
    a.write_text("alpha")
    b.write_text("beta")
    empty.write_text(" ")
    store = ParseCache(tmp_path / "parses.sqlite")
    first = parse_files([a, b, empty], Upper(), store)
    assert [o.parsed.text if o.parsed else o.reason for o in first] == ["ALPHA", "BETA", "empty"]
    assert [o.cached for o in first] == [False, False, False]
    again = parse_files([a, b, empty], Upper(), store)
    assert [o.cached for o in again] == [True, True, True]  # a deterministic failure is cached too
    assert again[0].parsed == Parsed("ALPHA", (), ("shouted",))
    b.write_text("beta edited")
    third = parse_files([a, b, empty], Upper(), store)
    assert [o.cached for o in third] == [True, False, True]
    assert third[1].parsed is not None and third[1].parsed.text == "BETA EDITED"


def test_a_hanging_parser_times_out_and_is_not_cached(tmp_path):
    f = tmp_path / "slow.html"
    f.write_text("x")
    store = ParseCache(tmp_path / "parses.sqlite")
    out = parse_files([f], Sleeper(), store, timeout=1.0)
    assert out[0].parsed is None and out[0].reason == "timed out after 1 s"
    assert len(store) == 0


def test_a_crashing_parser_is_a_recorded_failure():
    outcome, cacheable = parse_isolated(Crasher(), b"x", ".html", timeout=30)
    assert outcome.parsed is None and outcome.reason == "the parser crashed (exit code 3)" and not cacheable


def test_the_child_has_no_network():
    outcome, _ = parse_isolated(Dialer(), b"x", ".html", timeout=30)
    assert outcome.parsed is None and "network access is disabled" in outcome.reason


class Subclasser(Upper):
    """What a parser's packages do on import (ssl's SSLSocket, under requests and markitdown): subclass
    the socket class; then dial out through it."""

    name = "subclasser"

    def parse(self, data: bytes, suffix: str) -> Parsed:
        import socket

        class Wrapped(socket.socket):
            pass

        if data == b"dial":
            Wrapped().connect(("127.0.0.1", 9))
        return Parsed("imported")


def test_the_child_lets_packages_subclass_the_socket_class_and_still_refuses_the_network():
    outcome, _ = parse_isolated(Subclasser(), b"x", ".html", timeout=30)
    assert outcome.parsed == Parsed("imported"), outcome.reason  # was: TypeError: function() argument 'code' ...
    outcome, _ = parse_isolated(Subclasser(), b"dial", ".html", timeout=30)
    assert outcome.parsed is None and "network access is disabled" in outcome.reason


def test_a_file_over_the_size_bound_is_refused_unread(tmp_path, monkeypatch):
    import rag_bench.parsing.files as files

    monkeypatch.setattr(files, "MAX_BYTES", 10)
    f = tmp_path / "big.html"
    f.write_text("x" * 11)
    out = parse_files([f], Upper(), None)
    assert out[0].parsed is None and "limit" in out[0].reason


def test_other_file_types_go_to_auto_s_parser(tmp_path):
    pytest.importorskip("docx", reason="python-docx is in the parse extra")
    from tests.parsing.render import OWN, write_docx

    path = write_docx(tmp_path / "d.docx", "Policy", OWN)
    out = parse_files([path], Upper(), None)  # Upper reads .html only: the .docx goes to python-docx
    assert out[0].parsed is not None and out[0].parsed.text.startswith("# Policy")
    assert out[0].parser == "python_docx"
