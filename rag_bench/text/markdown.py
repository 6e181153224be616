"""Markdown structure as character spans: sections (heading paths) and blocks.

Only what chunking and evidence resolution need: ATX headings (``#`` .. ``######``) outside fenced
code, and blocks (paragraph, list, table, code, heading) inside a span. Every span indexes the
original text, so callers can keep exact offsets.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rag_bench.domain import Section

_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_TABLE = re.compile(r"^\s*\|")
_LIST = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")


def _lines(text: str, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """(start, end) of each line in ``text[start:end]``, end excluding the newline."""
    end = len(text) if end is None else end
    out = []
    pos = start
    while pos < end:
        nl = text.find("\n", pos, end)
        stop = end if nl == -1 else nl
        out.append((pos, stop))
        pos = stop + 1
    return out


def parse_sections(text: str) -> tuple[Section, ...]:
    """Split a Markdown document into non-overlapping sections.

    Text before the first heading (if not blank) is a section with an empty heading path. The
    heading path of a section lists the texts of its enclosing headings, outermost first, so the
    document's ``#`` title is the first component when there is one.
    """
    headings: list[tuple[int, int, int, str]] = []  # level, line start, line end, title
    in_fence = False
    for ls, le in _lines(text):
        line = text[ls:le]
        if _FENCE.match(line):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        m = _HEADING.match(line.rstrip("\r"))
        if m:
            headings.append((len(m.group(1)), ls, le, m.group(2).strip()))

    sections: list[Section] = []
    first = headings[0][1] if headings else len(text)
    if text[:first].strip():
        sections.append(Section((), 0, 0, 0, first))
    stack: list[tuple[int, str]] = []
    for i, (level, ls, le, title) in enumerate(headings):
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, title))
        end = headings[i + 1][1] if i + 1 < len(headings) else len(text)
        body_start = min(le + 1, end)
        sections.append(Section(tuple(t for _, t in stack), level, ls, body_start, end))
    return tuple(sections)


def trim(text: str, start: int, end: int) -> tuple[int, int]:
    """Shrink ``[start, end)`` so it neither starts nor ends with whitespace."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def heading_path_at(sections: tuple[Section, ...], offset: int) -> tuple[str, ...]:
    """Heading path of the section containing character ``offset`` (``()`` before any heading)."""
    path: tuple[str, ...] = ()
    for sec in sections:
        if sec.heading_start <= offset:
            path = sec.heading_path
        else:
            break
    return path


@dataclass(frozen=True)
class Block:
    """A structural block: ``kind`` in {paragraph, list, table, code, heading}."""

    kind: str
    start: int
    end: int


def line_kind(line: str) -> str:
    """What one line (no line break in it) opens or continues, outside a code block: ``fence``
    (a code fence), ``blank``, ``heading``, ``table`` (a row), ``list`` (an item) or ``text``.

    >>> [line_kind(x) for x in ("```py", "  ", "## Rates", "| a | b |", "2. Call", "Rollo led them.")]
    ['fence', 'blank', 'heading', 'table', 'list', 'text']
    """
    first = line[:1]
    if first.isascii() and first.isalpha():
        return "text"  # a letter first: no fence, heading, table row or list marker can follow
    if _FENCE.match(line):
        return "fence"
    if not line.strip():
        return "blank"
    if _HEADING.match(line.rstrip("\r")):
        return "heading"
    if _TABLE.match(line):
        return "table"
    if _LIST.match(line):
        return "list"
    return "text"


def parse_blocks(text: str, start: int = 0, end: int | None = None) -> list[Block]:
    """Blocks of ``text[start:end]``; blank lines separate paragraphs, a kind change ends a block.

    Tables and lists are whole blocks (consecutive rows/items, with indented continuation lines),
    so a chunker that keeps blocks whole never cuts a table or list.
    """
    blocks: list[Block] = []
    cur_kind: str | None = None
    cur_start = cur_end = 0
    in_fence = False

    def close() -> None:
        nonlocal cur_kind
        if cur_kind is not None:
            blocks.append(Block(cur_kind, cur_start, cur_end))
        cur_kind = None

    for ls, le in _lines(text, start, end):
        line = text[ls:le]
        if in_fence:
            cur_end = le
            if _FENCE.match(line):
                in_fence = False
                close()
            continue
        kind = line_kind(line)
        if kind == "fence":
            close()
            cur_kind, cur_start, cur_end, in_fence = "code", ls, le, True
            continue
        if kind == "blank":
            close()
            continue
        if kind == "text":
            # an indented continuation of a list item, else a paragraph's line
            kind = "list" if cur_kind == "list" and line[:1].isspace() else "paragraph"
        if kind != cur_kind or kind == "heading":
            close()
            cur_kind, cur_start = kind, ls
        cur_end = le
    close()
    return [_rstrip(text, b) for b in blocks]


def _rstrip(text: str, block: Block) -> Block:
    end = block.end
    while end > block.start and text[end - 1].isspace():
        end -= 1
    return Block(block.kind, block.start, end)
