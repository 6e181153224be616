"""Lexical tokenisation for BM25 in any language.

Text is NFKC-normalised and case-folded; a token is a run of letters, digits and combining marks
of any script (so ``Café résumé naïve`` keeps its words and Russian keeps its own). Scripts
written without spaces (Han, Hiragana, Katakana) are cut into overlapping character bigrams, as
Lucene's CJK analyser does, so a Japanese text never tokenises to nothing. Stopwords are removed
per language; an optional Snowball stemmer (PyStemmer) reduces words to their stems.
Identifiers such as ``KB-DW-4410`` are kept twice: as their parts (``kb``, ``dw``, ``4410``)
and joined (``kbdw4410``), so ``KBDW4410`` and ``kb-dw-4410`` still match exactly.

For ASCII text with the default settings (English stopwords, no stemmer) the tokens are exactly
those of the earlier ``[a-z0-9]+`` tokenizer, so BM25 scores of English corpora are unchanged.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache

import regex

from rag_bench.errors import ConfigError

_WORD = regex.compile(r"[\p{L}\p{N}\p{M}]+")
_COMPOUND = regex.compile(r"[\p{L}\p{N}\p{M}]+(?:[-_./][\p{L}\p{N}\p{M}]+)+")
_JOIN = regex.compile(r"[-_./]")
# Scripts written without spaces between words: tokenised as character bigrams.
_UNSPACED = regex.compile(r"[\p{Han}\p{Hiragana}\p{Katakana}ー]+")

ENGLISH_STOPWORDS = frozenset("""
a about above after again against all am an and any are as at be because been before being below
between both but by can could did do does doing down during each few for from further had has have
having he her here hers herself him himself his how i if in into is it its itself just me more most
my myself no nor not now of off on once only or other our ours ourselves out over own same she
should so some such than that the their theirs them themselves then there these they this those
through to too under until up very was we were what when where which while who whom why will with
would you your yours yourself yourselves
""".split())

def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


@lru_cache(maxsize=64)  # a packaged list per language: read-only data, returned frozen
def stopwords_for(language: str) -> frozenset[str]:
    """The stopword list of ``language``: ours for English (unchanged), else the ``stop-words``
    package's list (NFKC, case-folded). ConfigError naming the languages when there is none."""
    if language == "english":
        return ENGLISH_STOPWORDS
    from stop_words import AVAILABLE_LANGUAGES, get_stop_words

    if language not in AVAILABLE_LANGUAGES:
        raise ConfigError(f"retriever.language={language!r} has no stopword list -- fix: one of "
                          f"{', '.join(sorted(AVAILABLE_LANGUAGES))}, or retriever.stopwords=none")
    return frozenset(_fold(w) for w in get_stop_words(language))


def stemmer_for(language: str) -> Callable[[str], str]:
    """The Snowball stemmer of ``language`` (PyStemmer); ConfigError naming the languages it has."""
    import Stemmer

    if language not in Stemmer.algorithms():
        raise ConfigError(f"retriever.stemmer=snowball has no stemmer for {language!r} -- fix: "
                          f"retriever.language one of {', '.join(Stemmer.algorithms())}, or retriever.stemmer=none")
    stem: Callable[[str], str] = Stemmer.Stemmer(language).stemWord
    return stem


@dataclass(frozen=True)
class Tokenizer:
    """Tokens for BM25 (see the module docstring).

    Parameters
    ----------
    language:
        Selects the stopword list (``stopwords="auto"``) and the stemmer.
    stopwords:
        ``auto`` (the language's list), ``none``, or another language's name.
    stemmer:
        ``none`` or ``snowball``.
    """

    language: str = "english"
    stopwords: str = "auto"
    stemmer: str = "none"
    _stop: frozenset[str] = field(init=False, repr=False, compare=False)
    _stem: Callable[[str], str] | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.stemmer not in ("none", "snowball"):
            raise ConfigError(f"retriever.stemmer must be none or snowball, got {self.stemmer!r} "
                              "-- fix: retriever.stemmer=snowball")
        source = self.language if self.stopwords == "auto" else self.stopwords
        stop = frozenset() if source == "none" else stopwords_for(source)
        object.__setattr__(self, "_stop", stop)
        object.__setattr__(self, "_stem", stemmer_for(self.language) if self.stemmer == "snowball" else None)

    @property
    def stopword_set(self) -> frozenset[str]:
        """The stopwords removed."""
        return self._stop

    @property
    def identity(self) -> list[str]:
        """What changes the tokens (part of index cache keys)."""
        return [self.language, self.stopwords, self.stemmer, str(len(self._stop))]

    def __call__(self, text: str) -> list[str]:
        """Tokens of ``text``."""
        return tokenize(text, self._stop, self._stem)


def _words(text: str) -> list[str]:
    if text.isascii() or not _UNSPACED.search(text):
        return _WORD.findall(text)  # no unspaced script in it: every word is a token (one scan, not one per word)
    return _words_each(text)


def _words_each(text: str) -> list[str]:
    """:func:`_words`, each word searched for an unspaced run."""
    out: list[str] = []
    for w in _WORD.findall(text):
        if not _UNSPACED.search(w):
            out.append(w)
            continue
        # Split off the unspaced runs and cut each into bigrams (a single character stays itself).
        pos = 0
        for m in _UNSPACED.finditer(w):
            if m.start() > pos:
                out.append(w[pos:m.start()])
            run = m.group()
            out.extend([run] if len(run) == 1 else [run[i:i + 2] for i in range(len(run) - 1)])
            pos = m.end()
        if pos < len(w):
            out.append(w[pos:])
    return out


def tokenize(text: str, stopwords: frozenset[str] = ENGLISH_STOPWORDS,
             stem: Callable[[str], str] | None = None) -> list[str]:
    """Tokens of ``text`` for lexical matching (see the module docstring).

    >>> tokenize("Café résumé naïve")
    ['café', 'résumé', 'naïve']
    >>> tokenize("Ошибка E21 на посудомоечной машине", frozenset())
    ['ошибка', 'e21', 'на', 'посудомоечной', 'машине']
    >>> tokenize("東京都に住む")
    ['東京', '京都', '都に', 'に住', '住む']
    >>> tokenize("Call KB-DW-4410 now")
    ['call', 'kb', 'dw', '4410', 'kbdw4410']
    """
    low = _fold(text)
    tokens = [t for t in _words(low) if t not in stopwords]
    tokens.extend(_JOIN.sub("", m) for m in _COMPOUND.findall(low))
    if stem is not None:
        tokens = [stem(t) for t in tokens]
    return tokens
