"""Answer normalisation (SQuAD-style, plus digit grouping) and normalised containment.

Shared by answer correctness, facts-mode chunk relevance and the extractive generator, so
"contains the fact" means the same thing everywhere.
"""

from __future__ import annotations

import re
import string
from collections.abc import Sequence

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans({c: " " for c in string.punctuation if c not in "$%"})


def normalize(text: str) -> str:
    """SQuAD-style normalisation plus digit grouping: case, punctuation, articles, whitespace,
    ``30,000`` = ``30000``. ``$`` and ``%`` are kept (they carry meaning in prices and rates).

    >>> normalize("The fee is $1,250.00!")
    'fee is $1250 00'
    """
    text = re.sub(r"(?<=\d),(?=\d{3}\b)", "", text.lower())
    text = text.translate(_PUNCT)
    return " ".join(_ARTICLES.sub(" ", text).split())


def contains(text: str, phrase: str) -> bool:
    """``phrase`` occurs in ``text`` after normalisation, as a whole-word sequence (False for a
    phrase that normalises to nothing).

    >>> contains("Computational complexity theory is a branch of...", "computational complexity theory")
    True
    >>> contains("the 10th century", "10")
    False
    """
    p = normalize(phrase)
    return bool(p) and f" {p} " in f" {normalize(text)} "


def facts_present(answer: str, facts: Sequence[str]) -> bool:
    """Every fact appears in the answer (normalised, as a whole-word sequence)."""
    a = f" {normalize(answer)} "
    return all(f" {normalize(f)} " in a for f in facts if normalize(f))
