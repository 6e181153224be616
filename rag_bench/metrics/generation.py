"""Answer-level metrics: correctness, faithfulness (lexical proxy), citations, abstention.

All per question; undefined values are NaN (e.g. faithfulness of a refusal). Aggregation and
confidence intervals happen in the runner, like every other metric.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from rag_bench.domain import Answer, EvidenceSpan, Passage
from rag_bench.geometry import covered_fraction, overlap_ratio
from rag_bench.metrics import squad
from rag_bench.text.normalize import contains, facts_present, lenient_normalize, lenient_words
from rag_bench.text.sentences import sentence_spans
from rag_bench.text.tokenize import ENGLISH_STOPWORDS

# Our answer contract's citation markers ("... 1066 [2]."): the answer's format, not its text. They
# are stripped before any matching; the official SQuAD script (score-answers) scores text as given.
_CITE = re.compile(r"\s*\[\d+\]")


def exact_match(answer: str, references: Sequence[str]) -> float:
    """SQuAD 2.0's exact match (:func:`rag_bench.metrics.squad.score`): 1.0 when the answer equals
    a reference after the official normalisation (ASCII punctuation deleted, articles a/an/the
    removed); no reference means the empty answer is the gold.

    >>> exact_match("The co-op.", ["coop"]), exact_match("14 days", ["14 Days!"])
    (1.0, 1.0)
    """
    return float(squad.score(references, answer)[0])


def token_f1(answer: str, references: Sequence[str]) -> float:
    """SQuAD 2.0's token F1, the best over the references (:func:`rag_bench.metrics.squad.score`).

    >>> round(token_f1("within 45 days", ["45 days of delivery"]), 3)
    0.571
    """
    return float(squad.score(references, answer)[1])


def squad_v2(answer: Answer, references: Sequence[str], *, answerable: bool) -> tuple[float, float]:
    """SQuAD v2's ``(exact, f1)`` of one answer, for answerable and unanswerable questions alike:
    an unanswerable question's gold is the empty answer and a refusal is the empty answer, so a
    refusal scores 1 there and 0 on an answerable question. ``[n]`` citation markers are stripped
    first; an output that broke the answer contract scores 0 (it is no deliberate empty answer);
    an answerable question without references is NaN (nothing to match against).

    >>> squad_v2(Answer("Rollo [1]."), ["Rollo"], answerable=True)
    (1.0, 1.0)
    >>> squad_v2(Answer("I cannot answer.", refused=True), [], answerable=False)
    (1.0, 1.0)
    >>> squad_v2(Answer("Rollo [1]."), [], answerable=False)
    (0.0, 0.0)
    """
    if answerable and not references:
        return float("nan"), float("nan")
    if answer.parse_error is not None:
        return 0.0, 0.0
    return _squad_score(tuple(references) if answerable else (), squad_prediction(answer.text, answer.refused))


def squad_prediction(text: str, refused: bool) -> str:
    """The text SQuAD v2's figures score for an answer: ``""`` for a refusal, else the answer with
    its ``[n]`` citation markers stripped (``rag-bench export --format squad`` writes these, so
    ``score-answers`` and the official script give the cell's figures).

    >>> squad_prediction("Rollo [1].", False), squad_prediction("I cannot answer.", True)
    ('Rollo.', '')
    """
    return "" if refused else _CITE.sub("", text)


@lru_cache(maxsize=1 << 16)  # pure (texts in, numbers out): the cells of a sweep score the same answers again
def _squad_score(references: tuple[str, ...], prediction: str) -> tuple[float, float]:
    em, f1 = squad.score(references, prediction)
    return float(em), float(f1)


ANSWER_MATCH_MODES = ("auto", "contains", "f1", "em", "facts")


@dataclass(frozen=True)
class AnswerMatch:
    """How an answer matches a question's references and facts (NaN where the question has none).

    ``exact_match`` and ``token_f1`` are SQuAD 2.0's, exactly as its official script computes them
    (:mod:`rag_bench.metrics.squad`). ``answer_recall`` is 1.0 when a reference occurs in the
    answer (the long-form RAG "accuracy" of Lost in the Middle and ALCE's STR-EM) and
    ``facts_present`` 1.0 when every fact occurs, both under the lenient Unicode-aware
    normalisation (:func:`~rag_bench.text.normalize.lenient_normalize`). ``[n]`` citation markers
    are stripped before matching. A refusal or an empty answer matches nothing (0.0). ``words``
    is the answer's length (NaN for refusals), reported beside correctness because containment
    rewards long answers.
    """

    exact_match: float
    token_f1: float
    answer_recall: float
    facts_present: float
    words: float


def match_answer(answer: Answer, facts: Sequence[str], references: Sequence[str]) -> AnswerMatch:
    """Every answer-matching measure of one answer.

    >>> m = match_answer(Answer("Computational complexity theory is a branch of the theory of computation [1]."),
    ...                  (), ["Computational complexity theory"])
    >>> m.answer_recall, m.exact_match, round(m.token_f1, 3), m.facts_present, m.words
    (1.0, 0.0, 0.5, nan, 11.0)
    """
    return _match(answer.refused, answer.text, tuple(facts), tuple(references))


@lru_cache(maxsize=1 << 16)
def _match(refused: bool, answer: str, facts: tuple[str, ...], references: tuple[str, ...]) -> AnswerMatch:
    # Pure in its arguments (memoised across the cells of a sweep that share answers).
    nan = float("nan")
    # References and facts that normalise to nothing ("...", ".") would match everything: dropped
    # (SQuAD drops them too, and scores a question left without one against the empty answer).
    refs = [r for r in references if lenient_normalize(r)]
    kept = [f for f in facts if lenient_normalize(f)]
    blank = refused or not answer
    text = _CITE.sub("", answer)
    em = f1 = nan
    if references:
        exact, overlap = squad.score(references, "" if blank else text)
        em, f1 = float(exact), float(overlap)
    recall = (0.0 if blank else float(any(contains(text, r) for r in refs))) if refs else nan
    facts_ok = (0.0 if blank else float(facts_present(text, kept))) if kept else nan
    return AnswerMatch(em, f1, recall, facts_ok, nan if blank else float(len(text.split())))


def correctness(match: AnswerMatch, mode: str = "auto", *, f1_threshold: float = 0.5) -> float:
    """1.0 / 0.0 by the chosen measure, NaN when the question has nothing to match against.

    ``auto``: facts present when the question has facts, else answer recall (containment);
    ``contains``, ``f1`` (token F1 >= ``f1_threshold``), ``em``, ``facts``: that measure only.
    """
    if mode not in ANSWER_MATCH_MODES:
        raise ValueError(f"mode must be one of {ANSWER_MATCH_MODES}, got {mode!r}")
    if mode == "auto":
        mode = "facts" if not np.isnan(match.facts_present) else "contains"
    value = {"contains": match.answer_recall, "em": match.exact_match, "facts": match.facts_present,
             "f1": match.token_f1 if np.isnan(match.token_f1) else float(match.token_f1 >= f1_threshold)}[mode]
    return float(value)



def _content(text: str) -> set[str]:
    # the words of lenient_normalize(text) (lenient_words: without joining and splitting them again),
    # stopwords out, by set operations in C
    return lenient_words(text) - ENGLISH_STOPWORDS


def faithfulness(answer: Answer, passages: Sequence[Passage], *, support: float = 0.6) -> float:
    """Share of the answer's sentences supported by the passages it cites (lexical proxy).

    A sentence is supported when at least ``support`` of its content words occur in the cited
    passages. NaN for refusals and empty answers; 0.0 for an answer that cites nothing.
    """
    if answer.refused or not answer.text:
        return float("nan")
    return _faithfulness(answer.text, " ".join(p.text for p in passages if p.number in answer.citations), support)


@lru_cache(maxsize=1 << 16)
def _faithfulness(answer: str, cited: str, support: float) -> float:
    # A pure function of the texts: cells of a sweep that hand the same cited passages to the
    # same answer (k=5 vs k=10, a cached generation) compute it once.
    vocab = _content(cited)
    text = _CITE.sub("", answer)
    sentences = [text[s:e] for s, e in sentence_spans(text)] or [text]
    ok = 0
    for sent in sentences:
        words = _content(sent)
        ok += bool(words) and len(words & vocab) / len(words) >= support
    return ok / len(sentences)


def _overlap(p: Passage, span: EvidenceSpan) -> float:
    return overlap_ratio(p.start, p.end, span.start, span.end) if p.doc_id == span.doc_id else 0.0


def citation_precision(answer: Answer, passages: Sequence[Passage], evidence: Sequence[EvidenceSpan], *,
                       min_coverage: float = 0.5) -> float:
    """Cited passages that are relevant (same overlap rule as chunk relevance) / cited. NaN when
    nothing is cited."""
    cited = [p for p in passages if p.number in answer.citations]
    if not cited:
        return float("nan")
    return sum(any(_overlap(p, s) >= min_coverage for s in evidence) for p in cited) / len(cited)


def citation_recall(answer: Answer, passages: Sequence[Passage], evidence: Sequence[EvidenceSpan], *,
                    min_coverage: float = 0.5) -> float:
    """Evidence spans whose characters the cited passages cover >= ``min_coverage`` / spans.
    NaN without evidence (unanswerable questions)."""
    if not evidence:
        return float("nan")
    cited = [(p.doc_id, p.start, p.end) for p in passages if p.number in answer.citations]
    return float(np.mean([covered_fraction(s, cited) >= min_coverage for s in evidence]))
