"""Offline support of an answer by its passages: claims aligned to passage windows (issue 42).

The lexical proxy (:func:`rag_bench.metrics.generation.faithfulness`) pools the content words of every
cited passage, so a long passage "supports" almost any sentence. This module judges each claim
against one place in the evidence instead:

1. :func:`split_claims`: the answer's sentences, each cut further at ``;`` and at ``but`` and at
   ``, and`` when both sides carry at least :data:`MIN_CLAUSE_WORDS` content words (two facts, not a
   list of items); citation markers (``[2]``) are not part of any claim.
2. Each passage is cut into sentences; a *window* is a run of at most ``max_sentences`` consecutive
   sentences of one passage.
3. :func:`support_claim`: a claim's content words (lower-cased, stopwords out, Snowball-stemmed) are
   looked up in every window; the window covering most of them is the claim's evidence. The claim is
   supported when that window covers at least ``min_coverage`` of them AND (``strict``) every number
   of the claim is in it AND a negation (not, no, never, n't, ...) in the claim is matched by one in
   the window. Partial support is "no".
4. :func:`support_answer`: the answer is supported when every claim is (an answer with no claim
   with content words is not judged: ``None``).

Limits: it sees words, not meaning. A paraphrase with other words ("passed away" for "died") is a
"no"; a claim built from words of one window in another order or relation ("A beat B" vs "B beat
A") is a "yes". Negation is matched by presence only, not by scope. Names are handled as any
content word (they must be found like every other word at ``min_coverage`` 1).

Pure functions of their arguments, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from rag_bench.text.normalize import lenient_normalize
from rag_bench.text.sentences import sentence_spans
from rag_bench.text.tokenize import ENGLISH_STOPWORDS

_CITE = re.compile(r"\s*\[\d+(?:\s*,\s*\d+)*\]")
_NUMBER = re.compile(r"\d")
NEGATIONS = frozenset({"not", "no", "never", "none", "nor", "neither", "nobody", "nothing", "nowhere",
                       "without", "cannot", "nt"})
MIN_CLAUSE_WORDS = 3  # content words on each side of "and"/"but"/";" before it splits two facts
_SPLIT = re.compile(r";|,?\s+but\s+|,\s+and\s+", re.IGNORECASE)


@dataclass(frozen=True)
class Claim:
    """One checkable statement of an answer: its text and its character span in the answer."""

    text: str
    start: int
    end: int


@dataclass(frozen=True)
class Support:
    """The verdict on one claim.

    ``passage``: index (0-based, in the order given) of the passage holding the best window, -1
    when there is none; ``start``/``end``: that window's characters in the passage; ``coverage``:
    share of the claim's content words found in it; ``missing``: the claim's content words
    (stemmed) not found there; ``numbers_ok``/``negation_ok``: the strict checks.
    """

    claim: Claim
    supported: bool
    passage: int
    start: int
    end: int
    coverage: float
    missing: tuple[str, ...]
    numbers_ok: bool
    negation_ok: bool


@lru_cache(maxsize=1)
def _stemmer() -> Callable[[str], str]:
    import Stemmer  # PyStemmer, a dependency of the lexical retriever

    stem: Callable[[str], str] = Stemmer.Stemmer("english").stemWord
    return stem


def _raw_words(text: str) -> list[str]:
    # "don't" -> "don t" by the normaliser's punctuation rule; keep "nt" recognisable as a negation.
    return lenient_normalize(re.sub(r"n't\b", " nt", text, flags=re.IGNORECASE)).split()


def content_words(text: str) -> frozenset[str]:
    """Stemmed content words of ``text`` (stopwords out, negations kept apart by :func:`negated`).

    >>> sorted(content_words("The jumps were jumping over 3 fences."))
    ['3', 'fenc', 'jump']
    """
    stem = _stemmer()
    return frozenset(stem(w) for w in _raw_words(text) if w not in ENGLISH_STOPWORDS and w not in NEGATIONS)


def numbers(text: str) -> frozenset[str]:
    """Words of ``text`` holding a digit ("1066", "3rd", "2.5" -> "25" after normalising)."""
    return frozenset(w for w in _raw_words(text) if _NUMBER.search(w))


def negated(text: str) -> bool:
    """Whether ``text`` holds a negation word (:data:`NEGATIONS`)."""
    return any(w in NEGATIONS for w in _raw_words(text))


def _blank_citations(text: str) -> str:
    return _CITE.sub(lambda m: " " * len(m.group()), text)


def split_claims(answer: str) -> tuple[Claim, ...]:
    """The answer's claims (see the module docstring), spans into ``answer``.

    >>> [c.text for c in split_claims("Rollo led the Normans [1]. Vikings settled Normandy in 911; "
    ...                                "the French king paid them tribute.")]
    ['Rollo led the Normans.', 'Vikings settled Normandy in 911', 'the French king paid them tribute.']
    """
    text = _blank_citations(answer)
    out: list[Claim] = []
    for s, e in sentence_spans(text) or [(0, len(text))]:
        cuts = [s]
        for m in _SPLIT.finditer(text, s, e):
            left, right = text[cuts[-1]:m.start()], text[m.end():e]
            if len(content_words(left)) >= MIN_CLAUSE_WORDS and len(content_words(right)) >= MIN_CLAUSE_WORDS:
                cuts.extend([m.start(), m.end()])
        cuts.append(e)
        for a, b in zip(cuts[::2], cuts[1::2], strict=True):
            piece = text[a:b]
            lead, trail = len(piece) - len(piece.lstrip()), len(piece.rstrip())
            if piece.strip():
                clean = re.sub(r"\s+(?=[.,;:!?])", "", " ".join(piece.split()))  # markers blanked out
                out.append(Claim(clean, a + lead, a + trail))
    return tuple(out)


def windows(passage: str, max_sentences: int) -> tuple[tuple[int, int], ...]:
    """Runs of 1..``max_sentences`` consecutive sentences of ``passage``, as character spans."""
    spans = sentence_spans(passage) or ([(0, len(passage))] if passage.strip() else [])
    return tuple((spans[i][0], spans[j][1]) for i in range(len(spans))
                 for j in range(i, min(i + max_sentences, len(spans))))


def support_claim(claim: Claim, passages: Sequence[str], *, min_coverage: float = 1.0, max_sentences: int = 2,
                  strict: bool = True) -> Support:
    """The verdict on ``claim`` against its best window among ``passages`` (module docstring).

    >>> p = ["Rollo was a Viking. He became the first ruler of Normandy in 911."]
    >>> support_claim(Claim("Rollo ruled Normandy from 911", 0, 29), p).supported
    False
    >>> support_claim(Claim("Rollo became ruler of Normandy in 911", 0, 37), p).supported
    True
    """
    words = content_words(claim.text)
    nums, neg = numbers(claim.text), negated(claim.text)
    best: tuple[float, int, int, int, frozenset[str]] = (-1.0, -1, 0, 0, words)
    for i, text in enumerate(passages):
        for s, e in windows(text, max_sentences):
            vocab = _window_words(text[s:e])
            found = len(words & vocab) / len(words) if words else 0.0
            if found > best[0]:
                best = (found, i, s, e, vocab)
    coverage, index, start, end, vocab = best
    window = passages[index][start:end] if index >= 0 else ""
    numbers_ok = nums <= numbers(window)
    negation_ok = (not neg) or negated(window)
    ok = bool(words) and coverage >= min_coverage and (not strict or (numbers_ok and negation_ok))
    return Support(claim, ok, index, start, end, max(coverage, 0.0), tuple(sorted(words - vocab)), numbers_ok,
                   negation_ok)


@lru_cache(maxsize=1 << 16)
def _window_words(text: str) -> frozenset[str]:
    return content_words(text)


def support_answer(answer: str, passages: Sequence[str], *, min_coverage: float = 1.0, max_sentences: int = 2,
                   strict: bool = True) -> tuple[bool | None, tuple[Support, ...]]:
    """Whether every claim of ``answer`` is supported by ``passages``, with each claim's verdict;
    ``None`` when the answer has no claim with a content word (nothing to judge)."""
    verdicts = tuple(support_claim(c, passages, min_coverage=min_coverage, max_sentences=max_sentences, strict=strict)
                     for c in split_claims(answer) if content_words(c.text))
    if not verdicts:
        return None, ()
    return all(v.supported for v in verdicts), verdicts
