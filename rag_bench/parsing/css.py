"""A CSS declaration list (an HTML ``style`` attribute) read as a browser reads it: comments
stripped, escapes unescaped, declarations split at top-level ``;``, the last declaration of a
property winning (``!important`` over one without), property names case-insensitive. Values are
tokenised into numbers with units, words and functions; :func:`length_pt` evaluates a length
(``.0px``, ``0e0px``, ``calc(0px)``, ``1pt``) in points. Pure functions: no parser package needed.
"""

from __future__ import annotations

import re

_COMMENT = re.compile(r"/\*.*?(?:\*/|$)", re.S)
_ESCAPE = re.compile(r"\\([0-9a-fA-F]{1,6})[ \t\n\r\f]?|\\(.)", re.S)
NUMBER = re.compile(r"([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)([a-zA-Z%]*)")
# points per unit (em/rem/% against the 16px default font size; vw/vh against a 1280x800 viewport)
_PT = {"pt": 1.0, "px": 0.75, "in": 72.0, "cm": 72 / 2.54, "mm": 72 / 25.4, "q": 72 / 101.6, "pc": 12.0,
       "em": 12.0, "rem": 12.0, "%": 0.12, "ex": 6.0, "ch": 6.0, "vw": 9.6, "vh": 6.0, "vmin": 6.0, "vmax": 9.6,
       "": 0.75}


def _unescape(text: str) -> str:
    def one(m: re.Match[str]) -> str:
        if m.group(1):
            code = int(m.group(1), 16)
            return chr(code) if 0 < code <= 0x10FFFF and not 0xD800 <= code <= 0xDFFF else "\ufffd"
        return "" if m.group(2) == "\n" else m.group(2)

    return _ESCAPE.sub(one, text)


def _split_top(text: str, sep: str) -> list[str]:
    """``text`` split at ``sep`` outside parentheses and quotes."""
    parts, depth, quote, start = [], 0, "", 0
    for i, c in enumerate(text):
        if quote:
            quote = "" if c == quote else quote
        elif c in "\"'":
            quote = c
        elif c == "(":
            depth += 1
        elif c == ")":
            depth = max(0, depth - 1)
        elif c == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def declarations(style: str) -> dict[str, str]:
    """``property -> value`` (lower-cased, whitespace collapsed, ``!important`` removed) of a
    ``style`` attribute; the later declaration of a property wins unless the earlier is important."""
    out: dict[str, str] = {}
    important: set[str] = set()
    for decl in _split_top(_COMMENT.sub(" ", style or ""), ";"):
        name, colon, value = decl.partition(":")
        if not colon:
            continue
        name = _unescape(name).strip().lower()
        value = " ".join(_unescape(value).split()).lower()
        is_important = bool(re.search(r"!\s*important\s*$", value))
        value = re.sub(r"\s*!\s*important\s*$", "", value).strip()
        if not name or not value or (name in important and not is_important):
            continue
        out[name] = value
        if is_important:
            important.add(name)
    return out


def _calc(expr: str) -> float | None:
    """A ``calc()`` body of lengths and numbers with ``+ - * /`` and parentheses, in points."""
    tokens = re.findall(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?[a-zA-Z%]*|[-+*/()]", expr)
    if "".join(tokens).replace(" ", "") != re.sub(r"\s+", "", expr):
        return None
    pos = 0

    def atom() -> tuple[float, bool] | None:  # (value, is a length)
        nonlocal pos
        if pos >= len(tokens):
            return None
        tok = tokens[pos]
        pos += 1
        if tok == "(":
            val = add()
            if val is None or pos >= len(tokens) or tokens[pos] != ")":
                return None
            pos += 1
            return val
        m = NUMBER.fullmatch(tok)
        if not m:
            return None
        unit = m.group(2).lower()
        if unit and unit not in _PT:
            return None
        return (float(m.group(1)) * _PT[unit], True) if unit else (float(m.group(1)), False)

    def mul() -> tuple[float, bool] | None:
        nonlocal pos
        left = atom()
        while left is not None and pos < len(tokens) and tokens[pos] in "*/":
            op = tokens[pos]
            pos += 1
            right = atom()
            if right is None or (op == "/" and (right[1] or right[0] == 0)):
                return None
            left = (left[0] * right[0], left[1] or right[1]) if op == "*" else (left[0] / right[0], left[1])
        return left

    def add() -> tuple[float, bool] | None:
        nonlocal pos
        left = mul()
        while left is not None and pos < len(tokens) and tokens[pos] in "+-":
            op = tokens[pos]
            pos += 1
            right = mul()
            if right is None:
                return None
            left = (left[0] + right[0] if op == "+" else left[0] - right[0], left[1] or right[1])
        return left

    result = add()
    return result[0] if result is not None and pos == len(tokens) else None


def length_pt(value: str) -> float | None:
    """A CSS length in points (``0``, ``.0px``, ``0e0px``, ``1pt``, ``calc(0px)``, ``50%`` of 16px);
    None when it is not one (a keyword such as ``small``)."""
    value = value.strip().lower()
    for fn in ("calc(", "min(", "max(", "clamp("):
        if value.startswith(fn) and value.endswith(")"):
            inner = value[len(fn):-1]
            if fn == "calc(":
                return _calc(inner)
            vals = [length_pt(v) for v in _split_top(inner, ",")]
            if any(v is None for v in vals) or not vals:
                return None
            nums = [v for v in vals if v is not None]
            return min(nums) if fn == "min(" else max(nums) if fn == "max(" else sorted(nums)[len(nums) // 2]
    m = NUMBER.fullmatch(value)
    if not m:
        return None
    unit = m.group(2).lower()
    if unit not in _PT:
        return None
    return float(m.group(1)) * _PT[unit]


def number(value: str) -> float | None:
    """A CSS number or percentage as a fraction (``0``, ``.05``, ``5%``); None otherwise."""
    m = NUMBER.fullmatch(value.strip())
    if not m or m.group(2) not in ("", "%"):
        return None
    return float(m.group(1)) / (100.0 if m.group(2) == "%" else 1.0)


def words(value: str) -> list[str]:
    """A value's top-level space-separated tokens (``rect(0 0 0 0)`` stays one token)."""
    return [w for w in _split_top(value, " ") if w]
