"""The parse child's network guard leaves ``socket.socket`` a class: a module imported while
parsing may subclass it (ssl's SSLSocket, urllib3 -- trafilatura imports both), yet no socket
can be made."""

from __future__ import annotations

from rag_bench.parsing.base import Parsed
from rag_bench.parsing.files import parse_isolated
from tests.parsing.test_files import Upper


class Subclasser(Upper):
    name = "subclasser"

    def parse(self, data: bytes, suffix: str) -> Parsed:
        import socket

        class Wrapped(socket.socket):  # what `import ssl` does at import time
            pass

        try:
            Wrapped()
        except OSError as exc:
            return Parsed(f"subclassed; opening one: {exc}")
        return Parsed("a socket was made")


def test_a_parser_may_subclass_socket_but_not_open_one():
    outcome, ok = parse_isolated(Subclasser(), b"x", ".html", timeout=30)
    assert ok and outcome.parsed is not None, outcome.reason
    assert outcome.parsed.text == "subclassed; opening one: network access is disabled while parsing"
