"""Lexical tokenisation for BM25: lowercase alphanumeric runs, English stopwords removed.

Identifiers such as ``KB-DW-4410`` or ``E21`` are kept twice: as their parts (``kb``, ``dw``,
``4410``) and joined (``kbdw4410``), so a query that writes ``KBDW4410`` or ``kb-dw-4410`` still
matches exactly.
"""

from __future__ import annotations

import re

_TOKEN = re.compile(r"[a-z0-9]+")
_COMPOUND = re.compile(r"[a-z0-9]+(?:[-_./][a-z0-9]+)+")

ENGLISH_STOPWORDS = frozenset("""
a about above after again against all am an and any are as at be because been before being below
between both but by can could did do does doing down during each few for from further had has have
having he her here hers herself him himself his how i if in into is it its itself just me more most
my myself no nor not now of off on once only or other our ours ourselves out over own same she
should so some such than that the their theirs them themselves then there these they this those
through to too under until up very was we were what when where which while who whom why will with
would you your yours yourself yourselves
""".split())

STOPWORD_SETS = {"english": ENGLISH_STOPWORDS, "none": frozenset()}


def tokenize(text: str, stopwords: frozenset[str] = ENGLISH_STOPWORDS) -> list[str]:
    """Tokens of ``text`` for lexical matching (see module docstring)."""
    low = text.lower()
    tokens = [t for t in _TOKEN.findall(low) if t not in stopwords]
    tokens.extend(re.sub(r"[-_./]", "", m) for m in _COMPOUND.findall(low))
    return tokens
