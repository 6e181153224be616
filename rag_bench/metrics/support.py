"""Offline support of an answer by its passages: each claim checked against one passage (issue 42).

The lexical proxy (:func:`rag_bench.metrics.generation.faithfulness`) pools the content words of all
cited passages and counts a sentence supported when 60 % of its words occur somewhere in the pool.
Here:

1. :func:`split_claims`: the answer's sentences, cut at citation markers (the text before ``[2]``
   is what the answer attributes to passage 2), each cut further at ``;``, at ``but`` and at
   ``, and`` when both sides carry at least :data:`MIN_CLAUSE_WORDS` content words (two facts, not a
   list of items); the markers themselves are blanked out.
2. A claim's *informative words*: lower-cased, stopwords, single letters and :data:`FILLERS`
   ("yes", "well", "actually", "I think" ...) out, Snowball-stemmed ("jumping" = "jumps").
3. Each passage is cut into *windows*: runs of at most ``max_sentences`` consecutive sentences
   (``max_sentences`` < 1: the whole passage is one window). Windows never span two passages.
4. :func:`support_claim`: the window holding most of the claim's informative words is its evidence
   (which passage, which characters). The claim is supported when that window holds at least
   ``min_coverage`` of them AND (``strict``) every number of the claim, every name (a capitalised
   word not starting a sentence) and, when the claim is negated (not, no, never, n't ...), a
   negation. Anything less (partial support) is "no".
5. :func:`support_answer`: the answer is supported when every claim is; ``None`` when no claim has
   an informative word (nothing to judge).

Defaults (``min_coverage=0.8``, ``max_sentences=0``: one in five words may be paraphrased; numbers,
names and negation may not; the evidence is one passage) are the variant with the best agreement
with people on both dev sets of ``benchmarks/support_kappa.py``, one rule for both, chosen after
measuring them (the rule chosen before, every word within 2 sentences, was too strict for paraphrase).

Limits: it sees words, not meaning. A paraphrase with other words ("passed away" for "died") is a
"no" once more than a fifth of the words differ; a claim built from a passage's words in another
relation ("A beat B" from "B beat A") is a "yes"; negation is matched by presence, not by scope; with
the whole passage as window, a long passage still pools its own words (only pooling *across*
passages is gone; a smaller ``max_sentences`` stops that, at a cost in agreement on WiCE, whose
claims draw on facts spread over the cited article). Names are recognised by capitals only, so
lower-cased text has none. English only (stopwords, stemmer, fillers).

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
_TOKEN = re.compile(r"[^\W_]+")
_WORDLIKE = re.compile(r"[^\W_]")
NEGATIONS = frozenset({"not", "no", "never", "none", "nor", "neither", "nobody", "nothing", "nowhere",
                       "without", "cannot", "nt"})
# Words that carry no fact of their own: discourse markers, hedges and fillers of conversational
# answers ("Yes, well, I think it is actually ..."), single letters (the "s" of "it's").
FILLERS = frozenset({"yes", "yeah", "yea", "yep", "oh", "ok", "okay", "well", "also", "really", "actually", "think",
                     "know", "guess", "believe", "like", "love", "sure", "lot", "lots", "pretty", "quite", "great",
                     "good", "interesting", "fun", "cool", "wow", "us", "one", "thing", "things", "kind", "sort",
                     "probably", "maybe", "perhaps", "definitely", "absolutely", "even", "still", "much", "many"})
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
    (stemmed) not found there; ``numbers_ok``/``names_ok``/``negation_ok``: the strict checks (every
    number, every name of the claim in the window; a negation in the claim matched by one there).
    """

    claim: Claim
    supported: bool
    passage: int
    start: int
    end: int
    coverage: float
    missing: tuple[str, ...]
    numbers_ok: bool
    names_ok: bool
    negation_ok: bool


@lru_cache(maxsize=1)
def _stemmer() -> Callable[[str], str]:
    import Stemmer  # PyStemmer, a dependency of the lexical retriever

    stem: Callable[[str], str] = Stemmer.Stemmer("english").stemWord
    return stem


def _raw_words(text: str) -> list[str]:
    # "don't" -> "don t" by the normaliser's punctuation rule; keep "nt" recognisable as a negation.
    return lenient_normalize(re.sub(r"n't\b", " nt", text, flags=re.IGNORECASE)).split()


def content_words(text: str, ignore: frozenset[str] = frozenset()) -> frozenset[str]:
    """Stemmed content words of ``text``: stopwords and ``ignore`` (e.g. :data:`FILLERS`) out, and
    single letters; negations are kept apart (:func:`negated`).

    >>> sorted(content_words("The jumps were jumping over 3 fences."))
    ['3', 'fenc', 'jump']
    """
    stem = _stemmer()
    return frozenset(stem(w) for w in _raw_words(text)
                     if w not in ENGLISH_STOPWORDS and w not in NEGATIONS and w not in ignore and len(w) > 1
                     or _NUMBER.search(w))


def numbers(text: str) -> frozenset[str]:
    """Words of ``text`` holding a digit ("1066", "3rd", "2.5" -> "25" after normalising)."""
    return frozenset(w for w in _raw_words(text) if _NUMBER.search(w))


def names(text: str) -> frozenset[str]:
    """Stemmed, lower-cased capitalised words of ``text`` that do not start a sentence ("in Paris",
    "the Bronx"): names, which evidence must hold (a name absent from it is a "no").

    >>> sorted(names("Yesterday Rollo met the King of France."))
    ['franc', 'king', 'rollo']
    """
    stem = _stemmer()
    out = set()
    for s, e in sentence_spans(text) or [(0, len(text))]:
        for i, w in enumerate(_TOKEN.findall(text[s:e])):
            low = w.lower()
            if i and w[0].isupper() and low not in ENGLISH_STOPWORDS and low not in NEGATIONS:
                out.add(stem(low))
    return frozenset(out)


def negated(text: str) -> bool:
    """Whether ``text`` holds a negation word (:data:`NEGATIONS`)."""
    return any(w in NEGATIONS for w in _raw_words(text))


def _blank_citations(text: str) -> str:
    return _CITE.sub(lambda m: " " * len(m.group()), text)


def split_claims(answer: str) -> tuple[Claim, ...]:
    """The answer's claims (see the module docstring), spans into ``answer``.

    >>> [c.text for c in split_claims("Rollo led the Normans [1]. Vikings settled Normandy in 911; "
    ...                                "the French king paid them tribute.")]
    ['Rollo led the Normans', 'Vikings settled Normandy in 911', 'the French king paid them tribute.']
    """
    text = _blank_citations(answer)
    # A citation marker ends a claim: what precedes it is what the answer attributes to that source.
    marks = [m.start() for m in _CITE.finditer(answer)]
    parts = list(zip([0, *marks], [*marks, len(text)], strict=True))
    spans = [sp for a, b in parts for sp in sentence_spans(text, a, b)] or [(0, len(text))]
    out: list[Claim] = []
    for s, e in spans:
        cuts = [s]
        for m in _SPLIT.finditer(text, s, e):
            left, right = text[cuts[-1]:m.start()], text[m.end():e]
            if len(content_words(left)) >= MIN_CLAUSE_WORDS and len(content_words(right)) >= MIN_CLAUSE_WORDS:
                cuts.extend([m.start(), m.end()])
        cuts.append(e)
        for a, b in zip(cuts[::2], cuts[1::2], strict=True):
            piece = text[a:b]
            lead, trail = len(piece) - len(piece.lstrip()), len(piece.rstrip())
            if _WORDLIKE.search(piece):
                clean = re.sub(r"\s+(?=[.,;:!?])", "", " ".join(piece.split()))  # markers blanked out
                out.append(Claim(clean, a + lead, a + trail))
    return tuple(out)


def windows(passage: str, max_sentences: int) -> tuple[tuple[int, int], ...]:
    """Runs of 1..``max_sentences`` consecutive sentences of ``passage``, as character spans; the
    whole passage as one window when ``max_sentences`` < 1."""
    if max_sentences < 1:
        return ((0, len(passage)),) if passage.strip() else ()
    spans = sentence_spans(passage) or ([(0, len(passage))] if passage.strip() else [])
    return tuple((spans[i][0], spans[j][1]) for i in range(len(spans))
                 for j in range(i, min(i + max_sentences, len(spans))))


def support_claim(claim: Claim, passages: Sequence[str], *, min_coverage: float = 0.8, max_sentences: int = 0,
                  strict: bool = True, ignore: frozenset[str] = FILLERS) -> Support:
    """The verdict on ``claim`` against its best window among ``passages`` (module docstring).

    >>> p = ["Rollo was a Viking. He became the first ruler of Normandy in 911."]
    >>> support_claim(Claim("Rollo became ruler of Normandy in 912", 0, 37), p).supported
    False
    >>> v = support_claim(Claim("Rollo became ruler of Normandy in 911", 0, 37), p)
    >>> v.supported, v.passage, p[v.passage][v.start:v.end] == p[0]
    (True, 0, True)
    """
    words = content_words(claim.text, ignore)
    nums, neg, named = numbers(claim.text), negated(claim.text), names(claim.text) & words
    best: tuple[float, int, int, int, frozenset[str]] = (-1.0, -1, 0, 0, words)
    for i, text in enumerate(passages):
        for s, e in windows(text, max_sentences):
            vocab = _window_words(text[s:e])
            found = len(words & vocab) / len(words) if words else 0.0
            if found > best[0]:
                best = (found, i, s, e, vocab)
    coverage, index, start, end, vocab = best
    window = passages[index][start:end] if index >= 0 else ""
    numbers_ok, names_ok = nums <= numbers(window), named <= vocab
    negation_ok = (not neg) or negated(window)
    ok = bool(words) and coverage >= min_coverage and (not strict or (numbers_ok and names_ok and negation_ok))
    return Support(claim, ok, index, start, end, max(coverage, 0.0), tuple(sorted(words - vocab)), numbers_ok,
                   names_ok, negation_ok)


@lru_cache(maxsize=1 << 16)  # pure (text in, words out), bounded: every claim of an answer reads the same windows
def _window_words(text: str) -> frozenset[str]:
    return content_words(text)


def support_answer(answer: str, passages: Sequence[str], *, min_coverage: float = 0.8, max_sentences: int = 0,
                   strict: bool = True, ignore: frozenset[str] = FILLERS) -> tuple[bool | None, tuple[Support, ...]]:
    """Whether every claim of ``answer`` is supported by ``passages``, with each claim's verdict;
    ``None`` when the answer has no claim with a content word (nothing to judge)."""
    verdicts = tuple(support_claim(c, passages, min_coverage=min_coverage, max_sentences=max_sentences, strict=strict,
                                   ignore=ignore)
                     for c in split_claims(answer) if content_words(c.text, ignore))
    if not verdicts:
        return None, ()
    return all(v.supported for v in verdicts), verdicts
