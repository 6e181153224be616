"""Parsing a dataset's document files: once per (file bytes sha256, parser, version, options), in a
child process with bounds, cached on disk like embeddings (shared by every cell and sweep).

Each file is parsed in a fresh child process (``forkserver``: cheap forks from a small server,
never from a process holding models or threads) with a time bound (:data:`~rag_bench.parsing.base.TIMEOUT_S`),
an address-space bound and no network (sockets refused); the size bound is checked before the file
is read and the page bound by every parser. A file that fails, times out or crashes its child is a
per-document failure with its reason, never a crashed sweep. Successes and deterministic failures
are cached (a timeout is not: a faster machine may finish).
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import time
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from rag_bench.parsing.auto import AutoParser, default_parser
from rag_bench.parsing.base import MAX_BYTES, TIMEOUT_S, Parsed, ParseFailure, Parser, parser_options
from rag_bench.storage import BlobStore, default_cache_dir, get_or_compute

MAX_ADDRESS_SPACE = 8 << 30  # the child's memory bound (a decompression bomb fails, not the machine)


@dataclass(frozen=True)
class Outcome:
    """One file's parse: ``parsed`` or the failure ``reason``; ``seconds`` the parse took (when it
    was computed, also for a cached one); ``cached`` when it came from the cache."""

    parsed: Parsed | None
    reason: str
    seconds: float
    cached: bool = False
    parser: str = ""


def parser_for(chosen: Parser, suffix: str) -> Parser:
    """The chosen parser when it reads ``suffix`` files, else ``auto``'s for the type (``auto``
    itself is its type's parser: ``parser=auto`` and ``parser=pypdf`` share a PDF's cached parse)."""
    if isinstance(chosen, AutoParser) or suffix not in tuple(getattr(chosen, "suffixes", ())):
        return default_parser(suffix)
    return chosen


def parser_key(parser: Parser) -> str:
    """What identifies a parser's output: its class, name, package version and every option
    (:func:`~rag_bench.parsing.base.parser_options`; a parser without options has the key it
    always had, so its cached parses stay valid)."""
    cls = type(parser)
    options = parser_options(parser)
    settings = f":{json.dumps(options, sort_keys=True, separators=(',', ':'))}" if options else ""
    return f"{cls.__module__}.{cls.__qualname__}:{parser.name}{settings}:{parser.version()}"


def _no_network(*args: Any, **kwargs: Any) -> Any:
    raise OSError("network access is disabled while parsing")


def _refusing_socket() -> type:
    """``socket.socket`` as a class whose instances cannot be made: modules a parser imports in the
    child may subclass it (ssl, urllib3 under trafilatura), which a plain function would break."""
    import socket

    class NoSocket(socket.socket):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            _no_network()

    return NoSocket


def _child(conn: Connection, parser: Parser, data: bytes, suffix: str) -> None:  # pragma: no cover - child
    import resource
    import socket

    try:
        resource.setrlimit(resource.RLIMIT_AS, (MAX_ADDRESS_SPACE, MAX_ADDRESS_SPACE))
    except (ValueError, OSError):
        pass
    # The socket class stays a class (packages subclass it on import: ssl under requests/urllib3):
    # a new socket cannot be made, and what reaches the network on a class made earlier is refused.
    for method in ("connect", "connect_ex", "sendto"):
        setattr(socket.socket, method, _no_network)
    socket.socket = _refusing_socket()  # type: ignore[assignment,misc]
    socket.create_connection = _no_network
    socket.getaddrinfo = _no_network
    try:
        parsed = parser.parse(data, suffix)
        conn.send(("ok", parsed.text, list(parsed.pages), list(parsed.warnings)))
    except ParseFailure as exc:
        conn.send(("fail", str(exc)))
    except MemoryError:
        conn.send(("fail", f"out of memory (limit {MAX_ADDRESS_SPACE >> 30} GiB)"))
    except Exception as exc:
        conn.send(("fail", f"parser error ({type(exc).__name__}: {str(exc)[:200]})"))
    finally:
        conn.close()


def parse_isolated(parser: Parser, data: bytes, suffix: str, timeout: float = TIMEOUT_S) -> tuple[Outcome, bool]:
    """Parse in a child process; ``(outcome, cacheable)`` (a timeout or crash is not cacheable)."""
    ctx = multiprocessing.get_context("forkserver")
    here, there = ctx.Pipe(duplex=False)
    start = time.perf_counter()
    proc = ctx.Process(target=_child, args=(there, parser, data, suffix), daemon=True)
    proc.start()
    there.close()
    try:
        if not here.poll(timeout):
            proc.kill()
            proc.join()
            return Outcome(None, f"timed out after {timeout:g} s", time.perf_counter() - start), False
        try:
            msg = here.recv()
        except EOFError:
            proc.join()
            return Outcome(None, f"the parser crashed (exit code {proc.exitcode})", time.perf_counter() - start), False
    finally:
        here.close()
    proc.join(5)
    if proc.is_alive():
        proc.kill()
        proc.join()
    seconds = time.perf_counter() - start
    if msg[0] == "ok":
        return Outcome(Parsed(text=msg[1], pages=tuple(msg[2]), warnings=tuple(msg[3])), "", seconds), True
    return Outcome(None, str(msg[1]), seconds), True


def _encode(o: Outcome) -> bytes:
    p = o.parsed
    return json.dumps({"reason": o.reason, "seconds": o.seconds, "parser": o.parser,
                       "parsed": None if p is None else {"text": p.text, "pages": list(p.pages),
                                                         "warnings": list(p.warnings)}}).encode()


def _decode(b: bytes) -> Outcome:
    d = json.loads(b)
    p = d["parsed"]
    parsed = None if p is None else Parsed(p["text"], tuple(p["pages"]), tuple(p["warnings"]))
    return Outcome(parsed, d["reason"], float(d["seconds"]), cached=True, parser=d.get("parser", ""))


class ParseCache(BlobStore):
    """Parses by (file sha256, parser key). Keyed (rag_bench.storage): a parse is served as the
    document's text with nothing downstream to check it against, so a row not written under this
    cache's secret -- a forged one with a recomputed plain checksum -- is never served."""

    table = "parses"
    keyed = True


def cache_store() -> ParseCache:
    """The parse cache (``$RAG_BENCH_CACHE/parses.sqlite``)."""
    return ParseCache(default_cache_dir() / "parses.sqlite")


def parse_files(paths: Sequence[Path], chosen: Parser, store: BlobStore | None = None,
                timeout: float = TIMEOUT_S) -> list[Outcome]:
    """Each file's :class:`Outcome`, in order: from the cache, or parsed (and cached)."""
    keys: list[str] = []
    jobs: dict[str, tuple[Path, Parser]] = {}
    outcomes: dict[int, Outcome] = {}
    for i, path in enumerate(paths):
        suffix = path.suffix.lower()
        size = path.stat().st_size
        if size > MAX_BYTES:
            outcomes[i] = Outcome(None, f"file is {size >> 20} MiB (limit {MAX_BYTES >> 20} MiB)", 0.0)
            keys.append("")
            continue
        parser = parser_for(chosen, suffix)
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        key = f"{digest}:{suffix}:{parser_key(parser)}"
        keys.append(key)
        jobs.setdefault(key, (path, parser))
    cacheable: set[int] = set()  # ids of computed outcomes that may be cached

    def compute(todo: list[str]) -> list[tuple[str, Outcome]]:
        out = []
        for key in todo:
            path, parser = jobs[key]
            outcome, ok = parse_isolated(parser, path.read_bytes(), path.suffix.lower(), timeout)
            outcome = Outcome(outcome.parsed, outcome.reason, outcome.seconds, False, parser.name)
            if ok:
                cacheable.add(id(outcome))
            out.append((key, outcome))
        return out

    looked = get_or_compute(store, [k for k in keys if k], compute=compute, encode=_encode, decode=_decode,
                            keep=lambda o: id(o) in cacheable)  # a timeout or crash is not kept
    for i, key in enumerate(keys):
        if key:
            outcomes[i] = looked.values[key]
    return [outcomes[i] for i in range(len(paths))]
