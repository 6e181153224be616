"""Words and sentences of a text as character spans (absolute offsets), for chunkers and answer metrics."""

from __future__ import annotations

import re

from rag_bench.text.markdown import line_kind, parse_blocks, trim

Span = tuple[int, int]

_WORD = re.compile(r"\S+")
# A sentence ends at . ! or ? (plus closing quotes/brackets/emphasis) followed by whitespace and
# something that can start a sentence.
_BOUNDARY = re.compile(r"[.!?][\"')\]*_]*(?=\s+[\"'(\[*_]*[A-Z0-9])")
_MARKER = re.compile(r"\s*(?:\d+[.)]|[-*+])[\"')\]*_]*")
_ABBREV = {"e.g", "i.e", "etc", "mr", "mrs", "ms", "dr", "no", "vs", "approx", "inc", "ltd", "st", "ext",
           "fig", "min", "max", "incl", "dept", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep",
           "sept", "oct", "nov", "dec", "mon", "tue", "wed", "thu", "fri", "sat", "sun"}


def word_spans(text: str, start: int = 0, end: int | None = None) -> list[Span]:
    """Whitespace-delimited words of ``text[start:end]``."""
    end = len(text) if end is None else end
    return [(m.start(), m.end()) for m in _WORD.finditer(text, start, end)]


def _split_sentences(text: str, start: int, end: int) -> list[Span]:
    out: list[Span] = []
    pos = start
    for m in _BOUNDARY.finditer(text, start, end):
        word = text[max(start, m.start() - 12): m.start()].split()
        last = word[-1].lower().lstrip("(\"'") if word else ""
        if last in _ABBREV or (len(last) == 1 and last.isalpha()):
            continue  # "e.g. Foo" or an initial: not a sentence end
        if _MARKER.fullmatch(text[pos:m.end()]):
            continue  # "1. Check..." : a list marker, not a sentence
        s, e = trim(text, pos, m.end())
        if s < e:
            out.append((s, e))
        pos = m.end()
    s, e = trim(text, pos, end)
    if s < e:
        out.append((s, e))
    return out


def one_sentence(text: str) -> bool:
    """Whether ``text`` is one line with no sentence end in it: :func:`sentence_spans` gives it as one
    span at most (its text without the whitespace around it), so a caller that only needs the
    sentences' words can skip the split (the claim judge reads every claim's names).

    >>> one_sentence("Rollo led the Normans"), one_sentence("Rollo led them. They settled")
    (True, False)
    """
    return "\n" not in text and _BOUNDARY.search(text) is None


def sentence_spans(text: str, start: int = 0, end: int | None = None) -> list[Span]:
    """Sentences of ``text[start:end]``, never crossing a block (paragraph, list item, table row).

    Headings, table rows and code blocks count as one "sentence" each; list items and paragraphs
    are split at sentence ends.
    """
    end = len(text) if end is None else end
    if text.find("\n", start, end) < 0:
        return _one_line(text, start, end)
    return _by_blocks(text, start, end)


def _by_blocks(text: str, start: int, end: int) -> list[Span]:
    out: list[Span] = []
    for block in parse_blocks(text, start, end):
        if block.kind in ("heading", "code"):
            out.append((block.start, block.end))
            continue
        # Rows and items are separate lines; a paragraph's soft line breaks are not boundaries.
        if block.kind in ("table", "list"):
            units = _line_units(text, block.start, block.end, block.kind)
        else:
            units = [(block.start, block.end)]
        for us, ue in units:
            if block.kind == "table":
                out.append(trim(text, us, ue))
            else:
                out.extend(_split_sentences(text, us, ue))
    return [s for s in out if s[0] < s[1]]


def _one_line(text: str, start: int, end: int) -> list[Span]:
    """:func:`sentence_spans` of a span without a line break, which is one block at most: what
    :func:`_by_blocks` finds, without building the block (the claim judge splits every answer, claim
    and clause of a sweep: a short line each, where the block parse was most of the cost)."""
    line = text[start:end]
    stop = start + len(line.rstrip())  # the block's end: trailing whitespace is no part of it
    if stop <= start:
        return []  # a blank line is no block
    kind = line_kind(line)
    if kind in ("fence", "heading"):
        return [(start, stop)]  # a heading, or a code block's opening fence: one "sentence"
    if kind == "table":
        s, e = trim(text, start, stop)
        return [(s, e)] if s < e else []
    return [s for s in _split_sentences(text, start, stop) if s[0] < s[1]]  # a paragraph or a list item


def _line_units(text: str, start: int, end: int, kind: str) -> list[Span]:
    units: list[Span] = []
    pos = start
    for line in text[start:end].split("\n"):
        ls, le = pos, pos + len(line)
        pos = le + 1
        if kind == "list" and units and line[:1].isspace():
            units[-1] = (units[-1][0], le)  # continuation line of the previous item
        else:
            units.append((ls, le))
    return units
