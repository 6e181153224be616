"""Answer-level metrics: correctness, faithfulness (lexical proxy), citations, abstention.

All per question; undefined values are NaN (e.g. faithfulness of a refusal). Aggregation and
confidence intervals happen in the runner, like every other metric.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

import numpy as np

from rag_bench.geometry import covered_fraction, overlap_ratio
from rag_bench.records import Answer, EvidenceSpan, Passage
from rag_bench.text.normalize import facts_present, normalize
from rag_bench.text.sentences import sentence_spans
from rag_bench.text.tokenize import ENGLISH_STOPWORDS

_CITE = re.compile(r"\s*\[\d+\]")


def exact_match(answer: str, references: Sequence[str]) -> float:
    """1.0 when the normalised answer equals a normalised reference."""
    a = normalize(answer)
    return float(any(a == normalize(r) for r in references))


def token_f1(answer: str, references: Sequence[str]) -> float:
    """Best token-overlap F1 against the references (SQuAD).

    >>> round(token_f1("within 45 days", ["45 days of delivery"]), 3)
    0.571
    """
    a = normalize(answer).split()
    best = 0.0
    for r in references:
        b = normalize(r).split()
        common = sum((Counter(a) & Counter(b)).values())
        if common:
            p, rec = common / len(a), common / len(b)
            best = max(best, 2 * p * rec / (p + rec))
    return best


def is_correct(answer: Answer, facts: Sequence[str], references: Sequence[str], *, f1_threshold: float = 0.5) -> bool:
    """Facts all present when the question has facts; otherwise the best reference by exact match or
    token F1 >= ``f1_threshold``. A refusal or an empty answer is never correct."""
    if answer.refused or not answer.text:
        return False
    text = _CITE.sub("", answer.text)
    if facts:
        return facts_present(text, facts)
    if references:
        return exact_match(text, references) == 1.0 or token_f1(text, references) >= f1_threshold
    return False


def _content(text: str) -> set[str]:
    return {w for w in normalize(text).split() if w not in ENGLISH_STOPWORDS}


def faithfulness(answer: Answer, passages: Sequence[Passage], *, support: float = 0.6) -> float:
    """Share of the answer's sentences supported by the passages it cites (lexical proxy).

    A sentence is supported when at least ``support`` of its content words occur in the cited
    passages. NaN for refusals and empty answers; 0.0 for an answer that cites nothing.
    """
    if answer.refused or not answer.text:
        return float("nan")
    cited = " ".join(p.text for p in passages if p.number in answer.citations)
    vocab = _content(cited)
    text = _CITE.sub("", answer.text)
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
