"""Locating a quote (gold evidence as a person reads it) in a parse: exact, then normalised, then
bounded fuzzy; the method is recorded.

Normalised: Unicode NFKC (ligatures such as ``ﬁ``), dashes and quotes to ASCII, zero-width
characters and soft hyphens removed, a hyphen at a line end joined (``evi-\\ndence``), Markdown
emphasis dropped, table pipes read as a space (a cell boundary: ``|Late return|12 EUR|`` holds
``late return 12 eur``), whitespace runs as one space, case folded. Fuzzy: the best
window of the normalised text by difflib's ratio, at least :data:`FUZZY_MIN`, searched only in
texts up to :data:`FUZZY_MAX_CHARS` (bounded work per quote).
"""

from __future__ import annotations

import difflib
import unicodedata

FUZZY_MIN = 0.85
FUZZY_MAX_CHARS = 400_000
METHODS = ("exact", "normalised", "fuzzy")
_MAP = {**dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212", "-"),
        **dict.fromkeys("\u2018\u2019\u201a\u201b\u2032", "'"), **dict.fromkeys("\u201c\u201d\u201e\u2033", '"')}
_DROP = set("\u200b\u200c\u200d\u2060\ufeff\u00ad*_#`")


def normalise(text: str) -> tuple[str, list[int]]:
    """The normalised text and, for each of its characters, the offset in ``text`` it came from."""
    out: list[str] = []
    where: list[int] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "-" and i + 1 < n and text[i + 1] == "\n" and out and out[-1].isalpha():
            i += 2  # hyphenation at a line end: the word continues on the next line
            while i < n and text[i] in " \t":
                i += 1
            continue
        if ch in _DROP:
            i += 1
            continue
        ch = " " if ch == "|" else _MAP.get(ch, ch)
        for c in unicodedata.normalize("NFKC", ch).casefold():
            c = _MAP.get(c, c)
            if c.isspace():
                if out and out[-1] != " ":
                    out.append(" ")
                    where.append(i)
                continue
            out.append(c)
            where.append(i)
        i += 1
    return "".join(out), where


def _span(where: list[int], text: str, s: int, e: int) -> tuple[int, int]:
    return where[s], where[e - 1] + 1


def locate(text: str, quote: str) -> tuple[int, int, str] | None:
    """``(start, end, method)`` of ``quote`` in ``text`` (the first occurrence), or None (also for
    a blank quote)."""
    if not quote.strip():
        return None
    first = text.find(quote)
    if first != -1:
        return first, first + len(quote), "exact"
    nt, where = normalise(text)
    nq = normalise(quote)[0].strip()
    if not nq or not nt:
        return None
    pos = nt.find(nq)
    if pos != -1:
        s, e = _span(where, text, pos, pos + len(nq))
        return s, e, "normalised"
    if len(nt) > FUZZY_MAX_CHARS or len(nq) < 20:
        return None
    best, at = 0.0, -1
    width = len(nq)
    step = max(1, width // 8)
    matcher = difflib.SequenceMatcher(None, autojunk=False)
    matcher.set_seq2(nq)
    for s in range(0, max(1, len(nt) - width + 1), step):
        matcher.set_seq1(nt[s:s + width])
        if matcher.real_quick_ratio() < FUZZY_MIN or matcher.quick_ratio() < FUZZY_MIN:
            continue
        r = matcher.ratio()
        if r > best:
            best, at = r, s
    if at < 0 or best < FUZZY_MIN:
        return None
    # refine the window's start around the best coarse position
    for s in range(max(0, at - step), min(len(nt) - width, at + step) + 1):
        matcher.set_seq1(nt[s:s + width])
        r = matcher.ratio()
        if r > best:
            best, at = r, s
    s, e = _span(where, text, at, min(len(nt), at + width))
    return s, e, "fuzzy"
