"""Resolve evidence locators (quote / section / explicit offsets) to character spans."""

from __future__ import annotations

import unicodedata
from typing import Any

from rag_bench.domain import Document, EvidenceSpan, Section
from rag_bench.text.markdown import heading_path_at, trim


def _path_parts(section: str) -> tuple[str, ...]:
    return tuple(p.strip() for p in section.split(">") if p.strip())


def find_sections(doc: Document, section: str) -> list[Section]:
    """Sections whose heading path ends with ``section`` (written ``A > B`` or just ``B``)."""
    want = _path_parts(section)
    if not want:
        return []
    return [s for s in doc.sections if s.heading_path[-len(want):] == want]


_ZERO_WIDTH = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff\u00ad"))


def _invisible_difference(quote: str, text: str) -> str:
    """What separates a quote from the text when it is invisible: zero-width characters (incl.
    soft hyphens and BOMs) or Unicode normalisation (``é`` vs ``e`` + combining accent). Empty
    when the quote is not in the text even so.

    >>> _invisible_difference("caf\u00e9", "a cafe\u0301 here")
    'Unicode normalisation (NFC/NFD/NFKC forms)'
    >>> _invisible_difference("ab", "a\u200bb")
    'zero-width characters (U+200B, U+200D, soft hyphen, ...)'
    """
    stripped_q, stripped_t = quote.translate(_ZERO_WIDTH), text.translate(_ZERO_WIDTH)
    if stripped_q and stripped_q in stripped_t:
        return "zero-width characters (U+200B, U+200D, soft hyphen, ...)"
    for form in ("NFC", "NFKC"):
        nq = unicodedata.normalize(form, stripped_q)
        if nq and nq in unicodedata.normalize(form, stripped_t):
            return "Unicode normalisation (NFC/NFD/NFKC forms)"
    return ""


def resolve_locator(doc: Document, loc: dict[str, Any]) -> tuple[EvidenceSpan | None, str, str, str]:
    """Resolve one locator of ``doc``.

    Returns ``(span, field, message, hint)``; ``span`` is None when the locator cannot be resolved
    and the other three describe why.
    """
    text = doc.text
    section = loc.get("section")
    quote = loc.get("quote")
    lo, hi = 0, len(text)
    path: tuple[str, ...] = ()
    if section is not None:
        if not isinstance(section, str) or not section.strip():
            return None, "section", "must be a non-empty string", 'write e.g. "Returns > Opened items"'
        found = find_sections(doc, section)
        if not found:
            names = sorted({" > ".join(s.heading_path) for s in doc.sections if s.heading_path})
            shown = "; ".join(names[:8]) + (" ..." if len(names) > 8 else "")
            return (None, "section", f"no section {section!r} in document {doc.doc_id!r}",
                    f"use a heading text or path from the document: {shown}")
        if len(found) > 1:
            paths = "; ".join(" > ".join(s.heading_path) for s in found)
            return (None, "section", f"section {section!r} is ambiguous ({len(found)} matches: {paths})",
                    "write more of the heading path, e.g. 'Parent > Child'")
        lo, hi = doc.section_span(found[0])
        path = found[0].heading_path
    if quote is not None:
        if not isinstance(quote, str) or not quote.strip():
            return None, "quote", "must be a non-empty string", "copy the exact sentence from the document"
        first = text.find(quote, lo, hi)
        where = f"section {section!r} of " if section is not None else ""
        if first == -1:
            hint = "copy the text exactly (whitespace, punctuation and Markdown such as ** count)"
            if section is not None and text.find(quote) != -1:
                hint = "the quote exists elsewhere in the document: fix or drop 'section'"
            message = f"quote not found in {where}document {doc.doc_id!r}: {quote[:60]!r}"
            near = _invisible_difference(quote, text[lo:hi])
            if near:
                message += f"; it differs from the document only by {near}"
                hint = "copy the text from the document file itself (offsets count its exact characters)"
            return None, "quote", message, hint
        second = text.find(quote, first + 1, hi)
        if second != -1:
            count = text.count(quote, lo, hi)
            return (None, "quote", f"quote is ambiguous: {count} occurrences in {where}document {doc.doc_id!r}",
                    "make the quote longer or add 'section' to say which one")
        return EvidenceSpan(doc.doc_id, first, first + len(quote), path or heading_path_at(doc.sections, first)), "", "", ""
    if section is not None:
        s, e = trim(text, lo, hi)
        if s == e:
            return None, "section", f"section {section!r} has an empty body", "point at a section with text"
        return EvidenceSpan(doc.doc_id, s, e, path), "", "", ""
    start, end = loc.get("start"), loc.get("end")
    if start is None and end is None:
        return None, "", "locator needs 'quote', 'section' or 'start'/'end'", 'add e.g. "quote": "..."'
    if not (isinstance(start, int) and isinstance(end, int)) or isinstance(start, bool) or isinstance(end, bool):
        return None, "start/end", "'start' and 'end' must both be integers", "give character offsets"
    if not 0 <= start < end <= len(text):
        return (None, "start/end", f"span [{start}, {end}) is outside document {doc.doc_id!r} "
                f"(length {len(text)}) or empty", "use 0 <= start < end <= document length")
    return EvidenceSpan(doc.doc_id, start, end, heading_path_at(doc.sections, start)), "", "", ""

