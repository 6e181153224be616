"""The parser protocol, what a parse is, and the helpers every parser shares.

A parser turns one document file's bytes into :class:`Parsed`: text with Markdown structure
(headings as ``#``, lists, tables as Markdown tables), a page map (character offset where each
page starts) and warnings. The sections and blocks the chunkers read are derived from that text by
:mod:`rag_bench.text.markdown`, as for a ``.md`` document. A file a parser cannot read raises
:class:`ParseFailure` with the reason: the runner records it as a per-document failure.
"""

from __future__ import annotations

import bisect
import functools
import importlib
import importlib.metadata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from rag_bench.errors import ConfigError

# Bounds on one untrusted file (each a recorded failure, not a crash or a hang).
MAX_BYTES = 64 << 20
MAX_PAGES = 2000
TIMEOUT_S = 60.0


class ParseFailure(Exception):
    """The file cannot be parsed (malformed, encrypted, empty, no text layer, over a bound)."""


@dataclass(frozen=True)
class Parsed:
    """One document's parse: Markdown text, ``pages`` (the character offset where page 1, 2, ...
    starts; empty for formats without pages) and per-document warnings."""

    text: str
    pages: tuple[int, ...] = ()
    warnings: tuple[str, ...] = ()


def page_at(pages: Sequence[int], offset: int) -> int | None:
    """The 1-based page holding character ``offset`` of a parse whose ``pages`` (:attr:`Parsed.pages`)
    start at those offsets; None without a page map (or before its first page)."""
    return bisect.bisect_right(pages, offset) or None


class Parser(Protocol):
    """Reads document files of the suffixes it handles (``suffixes``) into :class:`Parsed`.

    Every setting that changes a parse is part of the parse cache key (:func:`parser_options`): a
    parser keeps each constructor argument as the attribute of the same name (``self.tables =
    tables``, scikit-learn's ``get_params`` convention), or defines ``options() -> dict`` returning
    every setting (JSON values). A constructor argument it keeps neither way is refused."""

    name: str
    suffixes: tuple[str, ...]

    def version(self) -> str:
        """The parsing package's version (part of the parse cache key)."""
        ...

    def parse(self, data: bytes, suffix: str) -> Parsed:
        """Parse one file's bytes; raise :class:`ParseFailure` when it cannot be read."""
        ...


def parser_options(parser: Any) -> dict[str, Any]:
    """Every setting of ``parser`` that may change its parse, by name (``name`` aside: it is in the
    key already): its ``options()`` when it defines one, else each constructor argument's value
    read from the attribute of the same name. A ConfigError when an argument is not kept (two
    parses of different settings would share one cache row), or the values are not JSON."""
    import inspect
    import json

    label = getattr(parser, "name", type(parser).__name__)
    own = getattr(parser, "options", None)
    if callable(own):
        found = own()
        if not isinstance(found, dict):
            raise ConfigError(f"parser={label}: options() returned {type(found).__name__}, not a dict -- fix: return "
                              "{setting: value} for every setting that changes the parse (docs/plugins.md)")
    else:
        found = {}
        for arg in list(inspect.signature(type(parser)).parameters.values()):
            if arg.name == "name":
                continue
            if arg.kind in (arg.VAR_POSITIONAL, arg.VAR_KEYWORD) or not hasattr(parser, arg.name):
                what = f"*{arg.name}" if arg.kind == arg.VAR_POSITIONAL else f"**{arg.name}" if \
                    arg.kind == arg.VAR_KEYWORD else arg.name
                raise ConfigError(f"parser={label}: {type(parser).__qualname__} takes {what} but keeps no attribute "
                                  "of that name, so the parse cache could not tell its settings apart -- fix: store "
                                  f"each argument as self.<argument>, or define options() returning every setting "
                                  "that changes the parse (docs/plugins.md, parsers)")
            found[arg.name] = getattr(parser, arg.name)
    try:
        json.dumps(found, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"parser={label}: a setting is not a JSON value ({exc}) -- fix: keep plain values "
                          "(str, number, bool, list, dict) or return them from options()") from exc
    return found


def require(module: str, package: str, parser: str) -> Any:
    """Import ``module`` or fail with the install command (a ConfigError: exit 2)."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ConfigError(f"parser={parser} needs the package {package!r}, which is not installed -- fix: "
                          f"pip install '{package}' (or pip install 'rag-bench-harness[parse]', make parse)") from exc


# One entry per parser package named (a dozen): every cell's dataset key asks for the default parsers'
# versions, and importlib.metadata reads the installed distributions afresh each time (~1.4 ms a cell,
# issue 57); a package installed or upgraded while the process runs is seen by the next process.
@functools.lru_cache(maxsize=64)
def package_version(package: str) -> str:
    """Installed version of ``package`` ('' when it is not installed)."""
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return ""


def join_pages(pages: list[str], warnings: list[str]) -> Parsed:
    """Pages' texts joined by a blank line, with the page map; an all-blank result (a scan without
    a text layer, an empty file) is a failure."""
    if len(pages) > MAX_PAGES:
        raise ParseFailure(f"{len(pages)} pages (limit {MAX_PAGES})")
    out: list[str] = []
    starts: list[int] = []
    pos = 0
    for page in pages:
        starts.append(pos)
        body = page.strip("\n")
        out.append(body)
        pos += len(body) + 2
    text = "\n\n".join(out)
    if not text.strip():
        raise ParseFailure("no text (an empty document, or a scan without a text layer)")
    empty = sum(1 for p in pages if not p.strip())
    if empty:
        warnings.append(f"{empty} of {len(pages)} pages have no text layer")
    return Parsed(text=text, pages=tuple(starts), warnings=tuple(warnings))


def check_pages(count: int) -> None:
    """Refuse a document over :data:`MAX_PAGES` before reading its pages."""
    if count > MAX_PAGES:
        raise ParseFailure(f"{count} pages (limit {MAX_PAGES})")
    if count == 0:
        raise ParseFailure("the document has no pages")


def cell_text(value: Any) -> str:
    """A table cell as one line of a Markdown table (newlines to spaces, ``|`` escaped)."""
    return " ".join(str(value or "").split()).replace("|", "\\|")


def markdown_table(rows: list[list[Any]]) -> str:
    """Rows (the first the header) as a Markdown table, every line starting with ``|`` (what
    :func:`rag_bench.text.markdown.parse_blocks` reads as one table block); '' without cells."""
    rows = [[cell_text(c) for c in row] for row in rows if any(cell_text(c) for c in row)]
    if not rows:
        return ""
    width = max(len(r) for r in rows)
    rows = [r + [""] * (width - len(r)) for r in rows]
    lines = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * width]
    lines += ["| " + " | ".join(r) + " |" for r in rows[1:]]
    return "\n".join(lines)
