"""Offline support of an answer by its passages: each claim checked against one passage (issue 42).

The lexical proxy (:func:`rag_bench.metrics.generation.faithfulness`) pools the content words of all
cited passages and counts a sentence supported when 60 % of its words occur somewhere in the pool.
Here:

1. :func:`split_claims`: the answer's sentences, cut at citation markers (the text before ``[2]``
   is what the answer attributes to passage 2), each cut further at ``;``, at ``but`` and at
   ``, and`` when both sides carry at least :data:`MIN_CLAUSE_WORDS` content words (two facts, not a
   list of items); the markers themselves are blanked out. A sentence ending in ``?`` is no
   claim from its first clause that opens with a question word or an auxiliary on
   (:func:`question_start`): a question asserts nothing (a question back to the asker, a dialogue's
   "Have you been there?"), so a rhetorical one ("Did you know it opened in 1900?") is not judged
   either; a statement before it ("Goldendoodles are designer dogs, do you like them?") and a
   statement with a question mark ("Rollo was the king of England?") are.
2. A claim's *informative words*: lower-cased, stopwords, single letters and :data:`FILLERS`
   ("yes", "well", "actually", "I think" ...) out, Snowball-stemmed ("jumping" = "jumps"); numbers
   written out are digits ("two" = "2", "twelve" = "12", "7th" = "7"; not "one", a pronoun as often).
3. Each passage is cut into *windows*: runs of at most ``max_sentences`` consecutive sentences
   (``max_sentences`` < 1: the whole passage is one window). Windows never span two passages.
4. :func:`support_claim`: the window holding most of the claim's informative words is its evidence
   (which passage, which characters). The claim is supported when that window holds at least
   ``min_coverage`` of them AND (``strict``) every number of the claim, every name (a capitalised
   word not starting a sentence) and, when the claim is negated (not, no, never, n't ...; or it
   denies itself: "It is untrue that ...", "... - false"), a negation in the window's sentence holding
   most of its words. A number must keep its unit or noun (:func:`quantities`: "12 sons" is a "no"
   against "3 sons and 12 ships"); a list item's numbering ("2. Delete ...", "... as follows: 1.") is
   no number of the claim. Anything less (partial support) is "no". Text is read as a reader
   sees it (:func:`visible`: zero-width characters dropped, look-alike Cyrillic and Greek letters read
   as Latin ones).
5. :func:`support_answer`: the answer is supported when every claim is; ``None`` when no claim has
   an informative word (nothing to judge).
6. :func:`judge_claims` (the claims scorer's kernel): each claim judged by the passages *it* cites
   (:func:`claim_citations`: the ``[n]`` marker it is followed by, else its sentence's next marker,
   else, in an answer without markers, the answer's ``sources``), by each of them alone, and by
   every passage of the context.

Defaults (``min_coverage=0.8``, ``max_sentences=0``: one in five words may be paraphrased; numbers,
names and negation may not; the evidence is one passage) are the variant with the best agreement
with people on both dev sets of ``benchmarks/support_kappa.py``, one rule for both, chosen after
measuring them (the rule chosen before, every word within 2 sentences, was too strict for paraphrase).

Limits: it sees words, not meaning. A paraphrase with other words ("passed away" for "died") is a
"no" once more than a fifth of the words differ; a claim built from a passage's words in another
relation ("A beat B" from "B beat A") is a "yes", and so are an antonym, swapped order or degree
words (before/after, at least/at most, only: stopwords) -- docs/metrics.md lists them with examples;
negation is matched by presence in the claim's sentence, not by scope; with
the whole passage as window, a long passage still pools its own words (only pooling *across*
passages is gone; a smaller ``max_sentences`` stops that, at a cost in agreement on WiCE, whose
claims draw on facts spread over the cited article). Names are recognised by capitals only, so
lower-cased text has none. English only (stopwords, stemmer, fillers).

Pure functions of their arguments, no I/O. What they read of a text, how an answer splits and how a
claim fits a passage are remembered by content digest in bounded in-process memos (:func:`read`), so
the cells of a sweep, which judge the same passages and often the same answers, read each once.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from functools import cached_property, lru_cache
from itertools import filterfalse
from typing import Any, NamedTuple, TypeVar

import regex

from rag_bench.memo import Lru, digest
from rag_bench.text.normalize import lenient_words
from rag_bench.text.sentences import one_sentence, sentence_spans
from rag_bench.text.tokenize import ENGLISH_STOPWORDS

_T = TypeVar("_T")

_CITE = re.compile(r"\s*\[\d+(?:\s*,\s*\d+)*\]")  # a citation marker with the whitespace before it
_BRACKETS = re.compile(r"\[\d+(?:\s*,\s*\d+)*\]")  # the marker alone: the regex engine skips to each "["
_DIGITS = re.compile(r"\d+")
_NON_DIGIT = re.compile(r"\D")
_BEFORE_STOP = re.compile(r"\s+(?=[.,;:!?])")  # the space a blanked marker left before a full stop
_SPACE_STOP = re.compile(r" [.,;:!?]")  # where _BEFORE_STOP matches in single-spaced text (found from each " ")
_NUMBER = re.compile(r"\d")
_TOKEN = re.compile(r"[^\W_]+")
_CAPITAL = re.compile(r"[A-Z]")  # an ASCII word's capital first letter (``str.isupper`` of its first character)
# _TOKEN's words of an ASCII text, by one bytes.translate: [^\W_] is [A-Za-z0-9] there, all else splits
_ASCII_NON_TOKEN = bytes(c if c < 128 and chr(c).isalnum() else 32 for c in range(256))
_DIGIT_BYTES = b"0123456789"
_ASCII_NON_WORD = bytes(c if c < 128 and (chr(c).isalnum() or c == 95) else 32 for c in range(256))  # \w runs stay
_WORDLIKE = re.compile(r"[^\W_]")
NEGATIONS = frozenset({"not", "no", "never", "none", "nor", "neither", "nobody", "nothing", "nowhere",
                       "without", "cannot", "nt"})
# Words that carry no fact of their own: discourse markers, hedges and fillers of conversational
# answers ("Yes, well, I think it is actually ..."), single letters (the "s" of "it's").
FILLERS = frozenset({"yes", "yeah", "yea", "yep", "oh", "ok", "okay", "well", "also", "really", "actually", "think",
                     "know", "guess", "believe", "like", "love", "sure", "lot", "lots", "pretty", "quite", "great",
                     "good", "interesting", "fun", "cool", "wow", "us", "one", "thing", "things", "kind", "sort",
                     "probably", "maybe", "perhaps", "definitely", "absolutely", "even", "still", "much", "many"})
# A list item's number at a claim's start ("2. Delete ...", "3) Open ...") or the next item's number
# left after a colon at its end ("... take these actions: 1."): numbering, not a number the claim states.
_ENUMERATOR = re.compile(r"^\s*\d{1,2}[.)]\s+|:\s*\d{1,2}[.)]?\s*$")
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
    number, every name of the claim in the window; a negation in the claim matched by one there);
    ``undecided``: the evidence is ambiguous (``supported`` is then False; only the semantic judge
    of :mod:`rag_bench.metrics.semantic` leaves a claim undecided).
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
    undecided: bool = False


@lru_cache(maxsize=1)  # one Snowball stemmer per process: pure (a word's stem never changes), a few kB
def _snowball() -> Any:
    import Stemmer  # PyStemmer, a dependency of the lexical retriever

    # No cache of its own (maxCacheSize 0): _STEMS remembers each word's stem. PyStemmer's cache
    # cost twice the stemming itself in a cold cell (its bookkeeping on every miss).
    return Stemmer.Stemmer("english", 0)


# A word's Snowball stem (interned), for every word the judge has stemmed in this process: a cell's
# passages and claims share most of their words, so each distinct word is stemmed once. Bounded:
# cleared once past _STEMS_KEPT words (~10 MB); a stem is a pure function of the word.
_STEMS: dict[str, str] = {}
_STEMS_KEPT = 1 << 17


def _stems(words: list[str]) -> frozenset[str]:
    """The Snowball stems of ``words`` (interned): the words not met before stemmed in one call,
    the others read from :data:`_STEMS` (both loops run in C: filterfalse, map)."""
    known = _STEMS
    new = list(filterfalse(known.__contains__, words))
    if new:
        if len(known) + len(new) > _STEMS_KEPT:
            known.clear()
            new = words  # the words known a moment ago are gone too
        known.update(zip(new, map(sys.intern, _snowball().stemWords(new))))
    return frozenset(map(known.__getitem__, words))


def _stem(word: str) -> str:
    """The Snowball stem of one word (:func:`_stems`)."""
    stem = _STEMS.get(word)
    return stem if stem is not None else next(iter(_stems([word])))


# Numbers written out are numbers: "two platinum albums" is "2 platinum albums", "twelve-bar" is "12 bar".
# "one" is left alone: it is a pronoun as often as a number ("one of the most ...").
NUMBER_WORDS = {w: str(i) for i, w in enumerate(
    "zero _ two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty".split()) if w != "_"} | {
    w: str(10 * i) for i, w in enumerate("_ _ _ thirty forty fifty sixty seventy eighty ninety".split()) if w != "_"}
_ORDINAL = re.compile(r"^(\d+)(?:st|nd|rd|th)$")  # "7th" is 7, "21st" is 21
_ORDINAL_ENDS = frozenset({"st", "nd", "rd", "th"})


# Letters of other scripts drawn like Latin ones (Cyrillic, Greek): inside a word that holds Latin
# letters, or one made of them only, they are read as those letters, so "nоt" with a Cyrillic "о"
# and "ηοτ" in Greek are "not" (a word with other letters of its script is left alone: "Привет").
_SHAPES = ("аеорсухіјѕԁһӏԛԝАВЕКМНОРСТХІЈЅҮοαιρνκτυηΑΒΕΖΗΙΚΜΝΟΡΤΥΧ",
           "aeopcyxijsdhlqwABEKMHOPCTXIJSYoaipvktunABEZHIKMNOPTYX")
_LOOKALIKES = str.maketrans(*_SHAPES)
_LOOKALIKE = frozenset(_SHAPES[0])
_LOOKALIKE_ANY = re.compile(f"[{_SHAPES[0]}]")
_INVISIBLE = regex.compile(r"\p{Cf}")  # zero-width space and joiners, word joiner, soft hyphen, BOM ...
_WORD_ANY = regex.compile(r"[\p{L}\p{M}]+")
_LATIN = regex.compile(r"\p{Latin}")


def visible(text: str) -> str:
    """``text`` as a reader sees it: invisible format characters dropped and look-alike letters
    of other scripts inside a Latin word read as Latin, so a claim cannot hide a word from the rules
    ("n\u200bot", "nоt" with a Cyrillic "о" and the Greek "ηοτ" are "not").

    >>> visible("Rollo did n\u200bot lead them"), visible("Rollo did nоt lead them"), visible("ηοτ"), visible("Привет")
    ('Rollo did not lead them', 'Rollo did not lead them', 'not', 'Привет')
    """
    if text.isascii():
        return text
    text = _INVISIBLE.sub("", text)
    if not _LOOKALIKE_ANY.search(text):  # accents and other scripts without look-alikes: nothing to read again
        return text
    return _WORD_ANY.sub(lambda m: m.group().translate(_LOOKALIKES)
                         if _LATIN.search(m.group()) or _LOOKALIKE.issuperset(m.group()) else m.group(), text)


_NT = re.compile(r"n't\b", re.IGNORECASE)
_NONE: frozenset[str] = frozenset()
_ASCII_CHARS = frozenset(map(chr, range(128)))  # an ASCII text's one-character words, out at once


def _has_digit(text: str) -> bool:
    """Whether ``text`` holds a digit (``\\d``: of any script; of an ASCII text by a bytes.translate)."""
    if text.isascii():
        return len(text.encode("ascii").translate(None, _DIGIT_BYTES)) != len(text)
    return _NUMBER.search(text) is not None


def _tokens(text: str) -> list[str]:
    """``_TOKEN.findall(text)``: the runs of letters and digits."""
    if text.isascii():
        return text.encode("ascii").translate(_ASCII_NON_TOKEN).decode("ascii").split()
    return _TOKEN.findall(text)


def _raw_words(text: str) -> tuple[set[str], set[str]]:
    """The distinct words of ``text`` as the judge reads them (each looked at once, however often it
    occurs), and those of them not made of letters alone (where its numbers are: a few words)."""
    # "don't" -> "don t" by the normaliser's punctuation rule; keep "nt" recognisable as a negation.
    text = visible(text)
    words = lenient_words(_NT.sub(" nt", text) if "'" in text else text)  # no apostrophe, no "n't"
    spelt = words.intersection(NUMBER_WORDS)
    other = set(filterfalse(str.isalpha, words))  # a word starting with a digit is among them (found in C)
    # _ORDINAL starts with a digit and ends in st/nd/rd/th: the other words are themselves.
    digits = {w for w in other if w[0].isdigit()}
    if spelt or digits:
        numbers = [NUMBER_WORDS[w] for w in spelt]
        ordinals = [_ORDINAL.sub(r"\1", w) if w[-2:] in _ORDINAL_ENDS else w for w in digits]
        words -= spelt
        words -= digits
        words.update(numbers, ordinals)
        other -= digits  # (a spelt number is letters: never among them)
        other.update(numbers, ordinals)  # digits only, or a digit first: no word of letters
    return words, other


class _found_once(cached_property):  # type: ignore[type-arg]
    """``functools.cached_property`` without its lock (Python 3.11 takes an RLock each first time):
    the value is a pure function of the instance, so two threads that both find it store the same."""

    def __get__(self, instance: Any, owner: Any = None) -> Any:
        if instance is None:
            return self
        value = instance.__dict__[self.attrname] = self.func(instance)  # the next read finds it there
        return value


@dataclass(frozen=True)
class Reading:
    """What the judge reads of one text (:func:`read`): its stemmed content words (``ignore`` out),
    its numbers and whether it holds a negation; ``key`` names the text and ``ignore`` by content."""

    key: tuple[str, frozenset[str]]
    words: frozenset[str]
    numbers: frozenset[str]
    negated: bool
    text: str = field(default="", repr=False, compare=False)  # what was read (for ``quantities``)

    @_found_once
    def quantities(self) -> frozenset[tuple[str, str]]:
        """:func:`quantities` of the text, found when first asked: only a claim's and the windows
        of a claim that binds a number to a unit are (the regex was a quarter of the judge's time)."""
        return quantities(self.text)


# Memos of pure functions keyed by content (a text's digest, never the text): every cell of a sweep
# judges the same passages and, with a cached or extractive generator, the same answers, so each
# text is read, each answer split and each (claim, passage) pair weighed once per process. Bounded
# (oldest dropped): a passage's reading is a few kB (its stems interned), a pair's fit ~200 bytes.
_READINGS = Lru(1 << 14, pure=True)   # (text digest, ignore) -> Reading
_FITS = Lru(1 << 16, pure=True)       # (claim's Reading key, passage digest, max_sentences) -> _Fit | None
_CLAIM_READINGS = Lru(1 << 14, pure=True)  # (claim text digest, ignore) -> _ClaimReading (its names too)
_SPLITS = Lru(1 << 13, pure=True)     # answer digest -> its claims
_CITED = Lru(1 << 13, pure=True)      # (answer digest, sources) -> its claims' citations
_MARKED = Lru(1 << 13, pure=True)     # answer digest -> its citation markers and the answer with them blanked
_JUDGED = Lru(1 << 13, pure=True)     # (answer digest, sources, (number, digest) per passage, settings) -> verdicts


def read(text: str, ignore: frozenset[str] = frozenset()) -> Reading:
    """The :class:`Reading` of ``text`` (computed once per content and ``ignore``, then remembered).

    >>> r = read("Two of them did not come in 1066.")
    >>> sorted(r.words), sorted(r.numbers), r.negated
    (['1066', '2', 'come'], ['1066', '2'], True)
    """
    return _read(digest([text]), text, ignore)


def _read(key: str, text: str, ignore: frozenset[str]) -> Reading:
    return _READINGS.get_or((key, ignore), _read_anew, key, text, ignore)


def _read_anew(key: str, text: str, ignore: frozenset[str]) -> Reading:
    raw, other = _raw_words(text)  # each distinct word looked at (and stemmed) once
    nums = frozenset(filter(_NUMBER.search, other)) if other else _NONE  # words holding a digit
    content = raw.difference(ENGLISH_STOPWORDS, NEGATIONS, ignore, _ASCII_CHARS)  # single letters out
    kept = [*content, *nums] if text.isascii() else [w for w in content if len(w) > 1] + [*nums]
    words = _stems(kept)  # the words not met before stemmed in one call
    return _new(Reading, (key, ignore), words, nums, not NEGATIONS.isdisjoint(raw), text)


def content_words(text: str, ignore: frozenset[str] = frozenset()) -> frozenset[str]:
    """Stemmed content words of ``text``: stopwords and ``ignore`` (e.g. :data:`FILLERS`) out, and
    single letters; negations are kept apart (:func:`negated`).

    >>> sorted(content_words("The jumps were jumping over 3 fences."))
    ['3', 'fenc', 'jump']
    """
    return read(text, ignore).words


def numbers(text: str) -> frozenset[str]:
    """Words of ``text`` holding a digit, numbers written out as digits ("1066", "3rd" -> "3", "two" ->
    "2", "2.5" -> "25" after normalising).

    >>> sorted(numbers("Two platinum albums on June 7th, 2010"))
    ['2', '2010', '7']
    """
    return read(text).numbers


_NUMBER_WORD = "|".join(sorted(NUMBER_WORDS, key=len, reverse=True))
# A number and the word right after it (a space or a hyphen between, nothing else): "12 sons",
# "50 metres", "twelve-bar", "40%". A comma, a full stop or a line between them binds nothing.
_QUANTITY = re.compile(rf"(?<![\w.,/])(\d+(?:[.,]\d+)*|(?i:{_NUMBER_WORD})\b)(?:st|nd|rd|th)?"
                       r"(%|(?:[ \t\u00a0]+|-)[^\W\d_]+)?")
_PERCENT = {"%", "percent", "pct"}


def quantities(text: str) -> frozenset[tuple[str, str]]:
    """(number, unit) of each number of ``text`` bound to the lower-case word right after it (its
    unit or noun, stemmed; ``%`` and "percent" are one unit): numbers must agree with their units
    and nouns, not merely occur. A capitalised word (a name: "in 911 Rollo") or a stopword ("in 911
    he") binds nothing.

    >>> sorted(quantities("Rollo had 3 sons and twelve ships, 50% of them in 911. In 911 Rollo came"))
    [('12', 'ship'), ('3', 'son'), ('50', '%')]
    """
    out = set()
    for m in _quantity_matches(visible(text)):
        number, unit = m.group(1), (m.group(2) or "").strip(" \t\u00a0-")
        number = NUMBER_WORDS.get(number.lower()) or _NON_DIGIT.sub("", number)
        if unit in _PERCENT or unit.lower() in _PERCENT:
            out.add((number, "%"))
        elif unit and unit.islower() and unit not in ENGLISH_STOPWORDS and unit not in NEGATIONS and len(unit) > 1:
            out.add((number, _stem(unit)))
    return frozenset(out)


def _quantity_matches(text: str) -> list[re.Match[str]]:
    """``_QUANTITY.finditer(text)``. In an ASCII text the regex is tried only where a number can start
    (a run of digits; a number word in any case, which matches only as a whole word): it starts with a
    lookbehind, so the regex engine would try it at every character."""
    if not text.isascii():
        return list(_QUANTITY.finditer(text))
    starts = {m.start() for m in _DIGITS.finditer(text)} if _has_digit(text) else set()
    low = text.lower()
    for w in NUMBER_WORDS.keys() & low.encode("ascii").translate(_ASCII_NON_WORD).decode("ascii").split():
        at = low.find(w)
        while at >= 0:
            starts.add(at)
            at = low.find(w, at + 1)
    out: list[re.Match[str]] = []
    end = 0
    for at in sorted(starts):
        if at >= end and (m := _QUANTITY.match(text, at)):  # finditer goes on after a match's end
            out.append(m)
            end = m.end()
    return out


def _quantities_agree(claim: frozenset[tuple[str, str]], window: Reading) -> bool:
    """Each number the claim binds to a unit agrees with the window: the window does not bind that
    unit to another number only ("12 sons" against "3 sons and 12 ships" is a "no"), nor that number
    to another unit while the claim's unit is nowhere in it ("50 feet" against "50 metres"; "66
    playwrights" against "66 responses by playwrights" agrees)."""
    if not claim:  # nothing bound: the window's quantities are not needed (nor found)
        return True
    for number, unit in claim - window.quantities:
        for n, u in window.quantities:
            if (u == unit and n != number) or (n == number and u != unit and unit not in window.words):
                return False
    return True


_CLAUSE = re.compile(r"[,;:()\"\u201c\u201d\u2013\u2014]")  # where a claim's clauses and quotes part
# A claim that denies itself: "It is untrue that ...", "... - false". Read as negated.
_DENIAL = re.compile(r"^\W*(?:it\s+is\s+|it's\s+)?(?:untrue|false|incorrect|wrong)\s+that\b"
                     r"|[-\u2013\u2014:(,]\s*(?:false|untrue|incorrect|wrong|not\s+true)\W*$", re.IGNORECASE)
_DENIAL_WORDS = ("true", "false", "incorrect", "wrong")  # one is in each denial ("untrue", "not true")


def _denies(text: str) -> bool:
    """Whether ``text`` denies itself (:data:`_DENIAL`); an ASCII text without a word of
    :data:`_DENIAL_WORDS` does not (the regex tries every character)."""
    text = visible(text)
    if text.isascii():
        low = text.lower()
        if not any(w in low for w in _DENIAL_WORDS):
            return False
    return _DENIAL.search(text) is not None


# A sentence ending in "?" asks from the first of its clauses that opens with a question word or an
# auxiliary verb ("Did you know ...?", "Goldendoodles are designer dogs, do you like them?"): what
# comes before that clause is a statement, judged; a sentence in a statement's order ("Rollo was king
# of England?") with MIN_CLAUSE_WORDS content words or more is a claim with a question mark.
_ASKING = frozenset("""who whom whose what which when where why how is are was were am isn aren wasn weren do does
did don doesn didn have has had haven hasn hadn can could will would shall should may might must cannot couldn won
wouldn shouldn mustn""".split())
_LEADS = frozenset({"so", "and", "but", "or", "then", "now", "also", "hi", "hey", "sorry"}) | FILLERS


_CLAUSE_START = re.compile(r"[,;:!]|\s[-\u2013\u2014]\s")


def _asks_from(clause: str) -> bool:
    words = [w for w in _TOKEN.findall(visible(clause).lower()) if w not in _LEADS]
    return bool(words) and (words[0] in _ASKING or words[:2] in (["you", "mean"], ["wonder", "if"]))


def question_start(text: str, start: int = 0, end: int | None = None) -> int:
    """Where the question of a sentence ending in "?" (``text[start:end]``) begins: ``start`` when
    all of it asks, the start of its first clause that opens with a question word or an auxiliary
    when a statement comes first, and ``end`` when none does and it holds
    :data:`MIN_CLAUSE_WORDS` content words or more (a statement with a question mark); a short one
    ("Anything else?", "Fine?") asks.

    >>> s = "Goldendoodles are designer dogs, do you like them?"
    >>> s[:question_start(s)], question_start("Did you know it opened in 1900?"), question_start("Fine?")
    ('Goldendoodles are designer dogs,', 0, 0)
    >>> question_start("Rollo was the king of England?")
    30
    """
    end = len(text) if end is None else end
    for at in [start, *(m.end() for m in _CLAUSE_START.finditer(text, start, end))]:
        if _asks_from(text[at:end]):
            return at
    return end if len(content_words(text[start:end], FILLERS)) >= MIN_CLAUSE_WORDS else start


def names(text: str) -> frozenset[str]:
    """Stemmed, lower-cased capitalised words of ``text`` that do not start a sentence ("in Paris",
    "the Bronx"): names, which evidence must hold (a name absent from it is a "no").

    >>> sorted(names("Yesterday Rollo met the King of France."))
    ['franc', 'king', 'rollo']
    """
    found: set[str] = set()
    text = visible(text)
    ascii_ = text.isascii()
    for s, e in [(0, len(text))] if one_sentence(text) else sentence_spans(text) or [(0, len(text))]:
        words = _tokens(text[s:e])[1:]  # not the first word
        found.update(map(str.lower, filter(_CAPITAL.match, words)) if ascii_ else
                     (w.lower() for w in words if w[0].isupper()))
    found.difference_update(ENGLISH_STOPWORDS, NEGATIONS)
    return _stems(list(found)) if found else _NONE


def negated(text: str) -> bool:
    """Whether ``text`` holds a negation word (:data:`NEGATIONS`)."""
    return read(text).negated


def _citations(text: str) -> list[tuple[int, int]]:
    """The spans ``_CITE.finditer(text)`` finds: each marker with the whitespace before it, back to
    the previous marker (found from the "[" on: _CITE's leading ``\\s*`` is tried at every character)."""
    out: list[tuple[int, int]] = []
    last = 0
    for m in _BRACKETS.finditer(text):
        s = m.start()
        while s > last and text[s - 1].isspace():
            s -= 1
        out.append((s, m.end()))
        last = m.end()
    return out


def _marked(answer: str) -> tuple[tuple[tuple[int, int], ...], str]:
    """The citation markers of ``answer`` (:func:`_citations`) and the answer with them blanked out
    (:func:`_blank_citations`): found once per answer, for its claims and their citations alike."""
    return _MARKED.get_or(digest([answer]), _find_marked, answer)


def _find_marked(answer: str) -> tuple[tuple[tuple[int, int], ...], str]:
    spans = _citations(answer)
    return tuple(spans), _blank_citations(answer, spans)


def _blank_citations(text: str, spans: Sequence[tuple[int, int]] | None = None) -> str:
    """``text`` with each citation marker (``spans``: :func:`_citations`) blanked out, its length kept."""
    spans = _citations(text) if spans is None else spans
    if not spans:
        return text
    parts, at = [], 0
    for s, e in spans:
        parts += [text[at:s], " " * (e - s)]
        at = e
    return "".join([*parts, text[at:]])


def split_claims(answer: str) -> tuple[Claim, ...]:
    """The answer's claims (see the module docstring), spans into ``answer``.

    >>> [c.text for c in split_claims("Rollo led the Normans [1]. Vikings settled Normandy in 911; "
    ...                                "the French king paid them tribute. Have you been there?")]
    ['Rollo led the Normans', 'Vikings settled Normandy in 911', 'the French king paid them tribute.']
    """
    return _SPLITS.get_or(digest([answer]), _split_claims, answer)


def _split_claims(answer: str) -> tuple[Claim, ...]:
    cites, text = _marked(answer)
    # A citation marker ends a claim: what precedes it is what the answer attributes to that source.
    marks = [s for s, _ in cites]
    parts = list(zip([0, *marks], [*marks, len(text)], strict=True))
    spans = [sp for a, b in parts for sp in sentence_spans(text, a, b)] or [(0, len(text))]
    low = text.lower() if text.isascii() else None  # (the same length: its indices are the text's)
    out: list[Claim] = []
    for s, e in spans:
        if text[s:e].rstrip().endswith("?"):
            e = question_start(text, s, e)  # a question asserts nothing ("What do you like?"); a statement before it does
            if e <= s:
                continue
        cuts = [s]
        for m in _SPLIT.finditer(text, s, e) if low is None or _may_split(text, low, s, e) else ():
            if text.count("(", s, m.start()) > text.count(")", s, m.start()):
                continue  # inside parentheses: "The Normans (Norman: Nourmands; French: Normands)" is one claim
            left, right = text[cuts[-1]:m.start()], text[m.end():e]
            if len(content_words(left)) >= MIN_CLAUSE_WORDS and len(content_words(right)) >= MIN_CLAUSE_WORDS:
                cuts.extend([m.start(), m.end()])
        cuts.append(e)
        for a, b in zip(cuts[::2], cuts[1::2], strict=True):
            piece = text[a:b]
            lead, trail = len(piece) - len(piece.lstrip()), len(piece.rstrip())
            if _WORDLIKE.search(piece):
                clean = " ".join(piece.split())
                if _SPACE_STOP.search(clean):
                    clean = _BEFORE_STOP.sub("", clean)  # a blanked marker's space before a full stop
                out.append(_new(Claim, clean, a + lead, a + trail))
    return tuple(out)


def _may_split(text: str, low: str, s: int, e: int) -> bool:
    """Whether :data:`_SPLIT` can match in ``text[s:e]`` (``low``: the ASCII text lower-cased): a
    ";", a "but", or an "and" with a comma before it (the regex engine tries every whitespace)."""
    return (text.find(";", s, e) >= 0 or low.find("but", s, e) >= 0
            or (low.find("and", s, e) >= 0 and text.find(",", s, e) >= 0))


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
    return _support(claim, _ClaimReading.of(claim.text, ignore), [(digest([t]), t) for t in passages],
                    min_coverage, max_sentences, strict)


@dataclass(frozen=True)
class _ClaimReading:
    """A claim's :class:`Reading` with its names among its words."""

    reading: Reading
    named: frozenset[str]
    negated: bool  # a negation word, or a denial of itself ("It is untrue that ...")
    negated_words: frozenset[str] = frozenset()  # the content words of its clauses holding a negation word

    @classmethod
    def of(cls, text: str, ignore: frozenset[str]) -> _ClaimReading:
        """The claim reading of ``text`` (remembered by content, as :func:`read` is)."""
        return _CLAIM_READINGS.get_or((digest([text]), ignore), cls._anew, text, ignore)

    @classmethod
    def _anew(cls, text: str, ignore: frozenset[str]) -> _ClaimReading:
        if _has_digit(text):  # "2. Delete the models" claims no number 2: list numbering
            text = _ENUMERATOR.sub("", text)
        r = _read(digest([text]), text, ignore)
        clauses = [read(c, ignore) for c in _CLAUSE.split(text)] if r.negated else []
        return _new(cls, r, names(text) & r.words, r.negated or _denies(text),
                   frozenset(w for c in clauses if c.negated for w in c.words))


class _Fit(NamedTuple):
    """A claim's best window in one passage: the share of its words there (``found``), the window's
    characters, the words missing (sorted only for the verdict's best window: :func:`_verdict`) and
    the strict checks against that window. A tuple: made ~1,000 times a cold cell, never changed."""

    found: float
    start: int
    end: int
    missing: frozenset[str]
    numbers_ok: bool
    names_ok: bool
    negation_ok: bool


_NEW_TUPLE = tuple.__new__


def _fit(claim: _ClaimReading, passage: tuple[str, str], max_sentences: int) -> _Fit | None:
    """The claim's first best window in ``passage`` ((digest, text)); None when it has no window.
    The same claim in the same passage fits the same in every answer and every cell: remembered."""
    return _FITS.get_or((claim.reading.key, passage[0], max_sentences), _fit_anew, claim, passage, max_sentences)


def _fits(claim: _ClaimReading, passages: Sequence[tuple[str, str]], max_sentences: int) -> list[_Fit | None]:
    """:func:`_fit` of the claim in each of ``passages``, in order."""
    return [_fit(claim, passage, max_sentences) for passage in passages]


def _fit_anew(claim: _ClaimReading, passage: tuple[str, str], max_sentences: int) -> _Fit | None:
    words, (key, text) = claim.reading.words, passage
    if max_sentences < 1:  # the whole passage is the one window, read under the digest the caller has
        return _fit_in(claim, text, _read(key, text, _NONE), 0, len(text)) if text.strip() else None
    best: tuple[int, int, int, Reading] | None = None
    for s, e in windows(text, max_sentences):
        # a window that is the whole passage is read under the digest the caller already has
        window = _read(key, text, _NONE) if s == 0 and e == len(text) else read(text[s:e])
        shared = len(words & window.words)
        if best is None or shared > best[0]:
            best = (shared, s, e, window)
    return None if best is None else _fit_in(claim, text, best[3], best[1], best[2])


def _fit_in(claim: _ClaimReading, text: str, window: Reading, s: int, e: int) -> _Fit:
    """The claim's fit in ``window``, the reading of ``text[s:e]``."""
    words = claim.reading.words
    missing = words - window.words
    found = (len(words) - len(missing)) / len(words) if words else 0.0  # |words & window| / |words|
    numbers_ok = claim.reading.numbers <= window.numbers and _quantities_agree(claim.reading.quantities, window)
    negation_ok = not claim.negated or (window.negated and _negated_where(claim, text[s:e]))
    # _Fit(...) without the Python-level __new__ a NamedTuple has (a cold cell makes ~1,000 fits)
    return _NEW_TUPLE(_Fit, (found, s, e, missing, numbers_ok, claim.named <= window.words, negation_ok))


def _negated_where(claim: _ClaimReading, window: str) -> bool:
    """Whether the negation comes from the claim's own sentence of the window: the sentence holding
    most of the claim's words is negated (one of them, when several hold as many), or a negated
    sentence holds the words of the claim's negated clause ("he hasn't done it" in a longer claim),
    80 % of them as for the claim. A negation elsewhere in the passage is another statement's."""
    words = claim.reading.words
    sentences = [read(window[s:e]) for s, e in sentence_spans(window)] or [read(window)]
    most = max(len(words & r.words) for r in sentences)
    if any(r.negated for r in sentences if len(words & r.words) == most):
        return True
    near = claim.negated_words
    return bool(near) and any(r.negated and len(near & r.words) >= 0.8 * len(near) for r in sentences)


def _support(claim: Claim, reading: _ClaimReading, passages: Sequence[tuple[str, str]], min_coverage: float,
             max_sentences: int, strict: bool) -> Support:
    """:func:`support_claim` over passages given as (digest, text): the first passage holding the
    claim's best window (each passage's first best window, :func:`_fit`)."""
    return _verdict(claim, reading, [_fit(reading, p, max_sentences) for p in passages], min_coverage, strict)


def _best(fits: Sequence[_Fit | None]) -> tuple[_Fit | None, int]:
    """The first of ``fits`` with the largest share found, and its index (None, -1 when none is)."""
    best: _Fit | None = None
    index = -1
    for i, fit in enumerate(fits):
        if fit is not None and (best is None or fit.found > best.found):
            best, index = fit, i
    return best, index


def _none_found(reading: _ClaimReading) -> _Fit:
    """No window at all: nothing found, nothing missing, no number or negation there."""
    return _Fit(-1.0, 0, 0, _NONE, not reading.reading.numbers, True, not reading.negated)


def _holds(reading: _ClaimReading, fit: _Fit, min_coverage: float, strict: bool) -> bool:
    """Whether ``fit`` (a passage's, or :func:`_none_found`) supports the claim."""
    return bool(reading.reading.words) and fit.found >= min_coverage and (
        not strict or (fit.numbers_ok and fit.names_ok and fit.negation_ok))


def _first_best(found: Sequence[float | None]) -> int:
    """The index of the first of ``found`` with the largest share (-1 when all are None): the
    passage :func:`_best` picks among their fits."""
    index = -1
    top = 0.0
    for i, f in enumerate(found):
        if f is not None and (index < 0 or f > top):
            index, top = i, f
    return index


def _verdict(claim: Claim, reading: _ClaimReading, fits: Sequence[_Fit | None], min_coverage: float,
             strict: bool) -> Support:
    """The verdict on ``claim`` by the passages whose fits are ``fits`` (in the passages' order)."""
    best, index = _best(fits)
    return _verdict_of(claim, reading, best, index, min_coverage, strict)


def _verdict_of(claim: Claim, reading: _ClaimReading, best: _Fit | None, index: int, min_coverage: float,
                strict: bool) -> Support:
    """The verdict on ``claim`` whose best fit is ``best`` (that of passage ``index``; None, -1: no window)."""
    if best is None:
        best = _none_found(reading)
    return _new(Support, claim, _holds(reading, best, min_coverage, strict), index, best.start, best.end,
                max(best.found, 0.0), tuple(sorted(best.missing)), best.numbers_ok, best.names_ok,
                best.negation_ok, False)


_FIELDS: dict[type, tuple[str, ...]] = {}  # a dataclass's field names, for _new (one entry per class of this module)


def _new(cls: type[_T], *values: Any) -> _T:
    """``cls(*values)`` for a frozen dataclass of this module, every field given, its fields set at
    once: the dataclass's ``__init__`` sets each by ``object.__setattr__`` (a Support's made half the
    cost of a verdict; a cold cell makes ~1,500 claims, readings, verdicts). None has __post_init__."""
    names = _FIELDS.get(cls)
    if names is None:
        names = _FIELDS[cls] = tuple(f.name for f in fields(cls))  # type: ignore[arg-type]
    made: _T = object.__new__(cls)
    made.__dict__.update(zip(names, values, strict=True))
    return made


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


# --- claims with their own citations (the claims scorer, rag_bench/evaluation/scorers/claims.py) ------------------

@dataclass(frozen=True)
class ClaimVerdict:
    """One judged claim of an answer: the passage numbers it cites, its verdict by those passages
    (``own``; None when it cites nothing), by each of them alone (``by_citation``, in the order of
    ``citations``) and by any passage of the context (``context``). ``own_passage`` and
    ``context_passage`` are the passage *numbers* holding the best window (None when none)."""

    claim: Claim
    citations: tuple[int, ...]
    own: Support | None
    by_citation: tuple[bool, ...]
    context: Support | None
    own_passage: int | None
    context_passage: int | None

    @property
    def supported(self) -> bool:
        """Supported by the passages it cites (an uncited claim is not)."""
        return self.own is not None and self.own.supported

    @property
    def context_supported(self) -> bool:
        """Supported by some passage of the context, cited or not."""
        return self.context is not None and self.context.supported

    @property
    def undecided(self) -> bool:
        """Its own passages' verdict is undecided (ambiguous evidence: neither supported nor not)."""
        return self.own is not None and self.own.undecided


def _markers(answer: str, spans: Sequence[tuple[int, int]]) -> list[tuple[int, tuple[int, ...]]]:
    """(start, numbers) of each citation marker of ``answer`` (``[2]``, ``[1, 3]``; ``spans``: :func:`_citations`)."""
    return [(s, tuple(map(int, _DIGITS.findall(answer, s, e)))) for s, e in spans]


def claim_citations(answer: str, claims: Sequence[Claim], sources: Sequence[int]) -> tuple[tuple[int, ...], ...]:
    """The passage numbers each claim of ``answer`` cites.

    - A marker (``[2]``, ``[1, 3]``) belongs to the claim it follows: the last claim ending at or
      before it (the text before a marker is what the answer attributes to that source).
    - A claim without a marker of its own takes those of the next claim of the same sentence that
      has one ("Rollo was a Viking; he ruled Normandy [1]." cites 1 for both clauses).
    - An answer with no marker at all cites by its answer-level list (``sources``): every claim
      cites all of them (a one-claim answer gets the answer's sources).
    - Only numbers in ``sources`` count (the answer's valid citations: markers outside the context
      are counted by ``invalid_citations``, not here).

    >>> text = "Rollo led the Normans [1]. Rollo was a Viking chief; he ruled Normandy from Rouen [2, 3]. Paris is big."
    >>> claim_citations(text, split_claims(text), [1, 2, 3])
    ((1,), (2, 3), (2, 3), ())
    >>> claim_citations("Rollo led the Normans.", split_claims("Rollo led the Normans."), [2])
    ((2,),)
    """
    valid = set(sources)
    spans, blank = _marked(answer)
    marks = _markers(answer, spans)
    if not marks:
        return tuple(tuple(sorted(valid)) for _ in claims)
    own: list[list[int]] = [[] for _ in claims]
    for pos, nums in marks:
        before = [i for i, c in enumerate(claims) if c.end <= pos]
        if before:
            own[before[-1]] += [n for n in nums if n in valid and n not in own[before[-1]]]
    if all(own):  # every claim has markers of its own: none inherits (the answer's sentences not needed)
        return tuple(tuple(o) for o in own)
    sentences = sentence_spans(blank) or [(0, len(answer))]

    def sentence(c: Claim) -> int:
        return next((j for j, (s, e) in enumerate(sentences) if s <= c.start < e), -1)

    out = [tuple(o) for o in own]
    for i in range(len(claims) - 1, -1, -1):  # from the end: a clause inherits the next clause's markers
        if not out[i] and i + 1 < len(claims) and sentence(claims[i]) == sentence(claims[i + 1]):
            out[i] = out[i + 1]
    return tuple(out)


def judge_claims(answer: str, sources: Sequence[int], passages: Sequence[tuple[int, str]], *,
                 min_coverage: float = 0.8, max_sentences: int = 0, strict: bool = True,
                 ignore: frozenset[str] = FILLERS) -> tuple[ClaimVerdict, ...]:
    """Every claim of ``answer`` with an informative word, judged by its own cited passages, by each
    of them alone and by the whole context (``passages``: (number, text) in context order).

    >>> ps = [(1, "Rollo was a Viking."), (2, "Rollo became the first ruler of Normandy in 911.")]
    >>> v = judge_claims("Rollo became ruler of Normandy in 911 [1].", [1], ps)[0]
    >>> v.citations, v.supported, v.context_supported, v.context_passage
    ((1,), False, True, 2)
    """
    settings = (min_coverage, max_sentences, strict, ignore)
    # Each text's digest is remembered (digest's cache, keyed by the text): a tuple of them is the key
    numbered = tuple([(n, digest([t])) for n, t in passages])
    return _JUDGED.get_or((digest([answer]), tuple(sources), numbered, settings), _judge_claims, answer, sources,
                          numbered, passages, settings)


def _judge_claims(answer: str, sources: Sequence[int], numbered: Sequence[tuple[int, str]],
                  context: Sequence[tuple[int, str]], settings: tuple[float, int, bool, frozenset[str]]
                  ) -> tuple[ClaimVerdict, ...]:
    min_coverage, max_sentences, strict, ignore = settings
    # (number, (digest, text)) of each passage: the digests of the key, made once
    passages = [(n, (d, t)) for (n, d), (_, t) in zip(numbered, context, strict=True)]
    claims = split_claims(answer)
    cites = _CITED.get_or((digest([answer]), tuple(sources)), claim_citations, answer, claims, sources)
    numbers_all = [n for n, _ in passages]
    at = {n: i for i, n in enumerate(numbers_all)}  # a number's passage (the last, should two share one)
    plain = [p for _, p in passages]
    # The whole passage is the window (the default): each passage's words, read once for all claims
    whole = [None if not t or t.isspace() else _read(d, t, _NONE) for d, t in plain] if max_sentences < 1 else None
    # (a whole-passage fit is made from these readings where a verdict needs one: cheaper than its memo)
    out = []
    for claim, cited in zip(claims, cites, strict=True):
        reading = _ClaimReading.of(claim.text, ignore)
        words = reading.reading.words
        if not words:
            continue
        # The share of the claim's words each passage holds (in its best window); a passage's whole
        # fit (where, what is missing, the strict checks) is made only where a verdict needs it: the
        # best passage of the context and of its citations, and a cited passage holding enough of it.
        fits: list[_Fit | None] | None = None
        if whole is not None:
            found = [None if r is None else len(words & r.words) / len(words) for r in whole]
        else:
            fits = _fits(reading, plain, max_sentences)
            found = [None if f is None else f.found for f in fits]

        def fit(i: int, reading: _ClaimReading = reading, fits: list[_Fit | None] | None = fits) -> _Fit:
            """Passage i's fit (one that has a window: its share found is not None); with the whole
            passage as window, made from the reading in hand (what _fit_anew would make)."""
            made = fits[i] if fits is not None else None
            if made is None:
                text, window = plain[i][1], whole[i]  # type: ignore[index]
                assert window is not None
                made = _fit_in(reading, text, window, 0, len(text))
            return made

        cited = tuple(filter(at.__contains__, cited))
        mine = [at[n] for n in cited]
        own = None
        if cited:
            best = _first_best([found[i] for i in mine])
            own = _verdict_of(claim, reading, fit(mine[best]) if best >= 0 else None, best, min_coverage, strict)
        alone = tuple([_holds(reading, _none_found(reading), min_coverage, strict) if (f := found[i]) is None else
                       f >= min_coverage and _holds(reading, fit(i), min_coverage, strict) for i in mine])
        ctx = None
        if passages:
            best = _first_best(found)
            ctx = _verdict_of(claim, reading, fit(best) if best >= 0 else None, best, min_coverage, strict)
        out.append(_new(ClaimVerdict, claim, cited, own, alone, ctx,
                                cited[own.passage] if own is not None and own.passage >= 0 else None,
                                numbers_all[ctx.passage] if ctx is not None and ctx.passage >= 0 else None))
    return tuple(out)
