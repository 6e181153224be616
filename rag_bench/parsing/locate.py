"""Locating a quote (gold evidence as a person reads it) in a parse: exact, then normalised, then
bounded fuzzy; the method is recorded.

Normalised: Unicode NFKC (ligatures such as ``ﬁ``), dashes and quotes to ASCII, zero-width
characters and soft hyphens removed, a hyphen at a line end joined (``evi-\\ndence``), Markdown
emphasis dropped, table pipes read as a space (a cell boundary: ``|Late return|12 EUR|`` holds
``late return 12 eur``), whitespace runs as one space, case folded. Fuzzy: the best
window of the normalised text by difflib's ratio, at least :data:`FUZZY_MIN`, within a bound on
the work per quote, :data:`FUZZY_WORK` character comparisons (a window's ``quick_ratio`` costs its
width, a ``ratio`` its width squared) whatever the text's length: windows are scored best
``quick_ratio`` first, and the best one's start is refined around it (every start within a step
when the bound allows, else by halving steps). A quote that no window matched before the bound
was spent is :data:`OVER_BOUND` -- not located within the bound, which the caller reports as such
(a longer quote or document is not silently a lost one, nor minutes of work).
"""

from __future__ import annotations

import difflib
import unicodedata

FUZZY_MIN = 0.85
# Character comparisons one quote's fuzzy search may make: ~3 s of difflib at the widest quotes
# (a 3,000-character window's ratio() costs 9e6 of them, ~0.9 s; a 200-character one 4e4, ~1 ms).
FUZZY_WORK = 30_000_000
METHODS = ("exact", "normalised", "fuzzy")
OVER_BOUND = "over_bound"  # the method of a quote not located within FUZZY_WORK (start and end -1)
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


def locate(text: str, quote: str, work: int = FUZZY_WORK) -> tuple[int, int, str] | None:
    """``(start, end, method)`` of ``quote`` in ``text`` (the first occurrence), or None (also for
    a blank quote); ``(-1, -1, OVER_BOUND)`` when the fuzzy search spent ``work`` comparisons
    without a match."""
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
    if len(nq) < 20:
        return None
    found = _fuzzy(nt, nq, work)
    if found is None:
        return None
    if found < 0:
        return -1, -1, OVER_BOUND
    s, e = _span(where, text, found, min(len(nt), found + len(nq)))
    return s, e, "fuzzy"


def _fuzzy(nt: str, nq: str, work: int) -> int | None:
    """The start of the best window of ``nt`` for ``nq`` (ratio at least FUZZY_MIN), None when
    there is none, -1 when ``work`` comparisons were spent before any window matched."""
    width = len(nq)
    step = max(1, width // 8)
    last = max(0, len(nt) - width)
    cost = width * width  # one ratio()
    matcher = difflib.SequenceMatcher(None, autojunk=False)
    matcher.set_seq2(nq)
    spent = 0
    candidates: list[tuple[float, int]] = []
    for s in range(0, last + 1, step):
        spent += width
        if spent > work:
            return -1
        matcher.set_seq1(nt[s:s + width])
        if matcher.real_quick_ratio() >= FUZZY_MIN:
            quick = matcher.quick_ratio()
            if quick >= FUZZY_MIN:
                candidates.append((-quick, s))
    candidates.sort()  # most alike characters first: the window that holds the quote, if any
    best, at, spent_out = 0.0, -1, False
    for _, s in candidates:
        if spent + cost > work:
            spent_out = True
            break
        spent += cost
        matcher.set_seq1(nt[s:s + width])
        r = matcher.ratio()
        if r > best or (r == best and s < at):
            best, at = r, s
    if at < 0 or best < FUZZY_MIN:
        return -1 if spent_out else None

    def score(s: int) -> float:
        matcher.set_seq1(nt[s:s + width])
        return matcher.ratio()

    # refine the window's start around the best coarse position: every start within a step when the
    # bound allows it, else by halving steps (each costs two ratio() calls) while it lasts
    starts = range(max(0, at - step), min(last, at + step) + 1)
    if spent + len(starts) * cost <= work:
        for s in starts:
            r = score(s)
            if r > best:
                best, at = r, s
        return at
    d = step // 2
    while d >= 1 and spent + 2 * cost <= work:
        spent += 2 * cost
        centre = at
        for s in (centre - d, centre + d):
            if 0 <= s <= last:
                r = score(s)
                if r > best:
                    best, at = r, s
        d //= 2
    return at
