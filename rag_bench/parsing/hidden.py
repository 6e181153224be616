"""Text a person does not see: what counts as hidden, and the per-document warning.

A parser wrapper drops hidden text where the parser tells it apart cheaply (html2text: elements
with ``display:none``/``visibility:hidden``/``hidden``, comments; python_docx: ``w:vanish``, white
and tiny runs; pdfplumber: white and tiny characters) and warns with the count of characters; where
it cannot drop it (pypdf: the text is extracted before its colour is known) it counts and warns.
The warning starts ``hidden text`` (what metrics.json's ``hidden_text_warnings`` collects).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

# Part of every wrapper's version() (so of the parse cache key): a parse cached before the wrappers
# dropped or counted hidden text is never served for one made by these rules. Bump when they change.
RULES = "hidden-1"
MIN_SIZE = 2.0  # points: smaller text is not readable on a page (1pt text is a hiding technique)


def is_white(color: Any) -> bool:
    """A PDF fill colour that is white: gray 1, RGB (1, 1, 1) or CMYK (0, 0, 0, 0) (None: not white)."""
    if isinstance(color, (int, float)):
        color = (color,)
    if not isinstance(color, (tuple, list)) or not all(isinstance(c, (int, float)) for c in color):
        return False
    values = [float(c) for c in color]
    if len(values) in (1, 3):
        return all(v >= 0.98 for v in values)
    if len(values) == 4:
        return all(v <= 0.02 for v in values)
    return False


def is_tiny(size: Any) -> bool:
    """A font size (points) below :data:`MIN_SIZE` (0 included)."""
    return isinstance(size, (int, float)) and float(size) < MIN_SIZE


def warning(counts: dict[str, int], dropped: bool) -> list[str]:
    """``hidden text: N characters in white/tiny text (dropped)``, or nothing when none."""
    total = sum(counts.values())
    if not total:
        return []
    how = "/".join(k for k, v in counts.items() if v)
    return [f"hidden text: {total} characters in {how} text " + (
        "(dropped from the parse)" if dropped else "(kept: this parser cannot drop it; a person does not see it)")]


class PdfHiddenCounter:
    """pypdf visitors counting characters drawn white or below :data:`MIN_SIZE` (fill colour tracked
    through ``q``/``Q``; the size is the font size times the text and transformation matrices' scale)."""

    def __init__(self) -> None:
        self.counts = {"white": 0, "tiny": 0}
        self._fill: Any = (0.0,)
        self._stack: list[Any] = []

    def before(self, op: bytes, args: Sequence[Any], cm: Sequence[float], tm: Sequence[float]) -> None:
        """Track the fill colour (``g``, ``rg``, ``k``; ``q``/``Q`` save and restore it)."""
        if op == b"q":
            self._stack.append(self._fill)
        elif op == b"Q":
            self._fill = self._stack.pop() if self._stack else (0.0,)
        elif op in (b"g", b"rg", b"k"):
            try:
                self._fill = tuple(float(a) for a in args)
            except (TypeError, ValueError):
                self._fill = (0.0,)

    def text(self, text: str, cm: Sequence[float], tm: Sequence[float], font: Any, size: float) -> None:
        """Count the visible characters of ``text`` drawn hidden."""
        n = sum(not c.isspace() for c in text)
        if not n:
            return
        try:
            scale = math.sqrt(abs(tm[0] * tm[3] - tm[1] * tm[2]) * abs(cm[0] * cm[3] - cm[1] * cm[2]))
        except (TypeError, IndexError):
            scale = 1.0
        if is_white(self._fill):
            self.counts["white"] += n
        elif is_tiny(float(size or 0) * scale):
            self.counts["tiny"] += n
