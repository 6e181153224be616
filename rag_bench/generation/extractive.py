"""Extractive generator: a deterministic, model-free baseline that makes every generation metric
meaningful offline.

It scores each sentence of each passage by the share of the question's content words it
contains, answers with the best sentence (plus the runner-up from another passage when it is
nearly as good — two-part questions), cites their passages, and says the refusal sentence when
the best support is under ``threshold``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from rag_bench.errors import ConfigError
from rag_bench.generation.base import Generation, GenerationInput, Traits
from rag_bench.generation.context import count_tokens, prompt_tokens
from rag_bench.generation.prompt import REFUSAL
from rag_bench.text.sentences import sentence_spans
from rag_bench.text.tokenize import ENGLISH_STOPWORDS, tokenize


class ExtractiveGenerator:
    """Parameters
    ----------
    threshold:
        Minimum share of question content words a sentence must contain to be an answer.
    max_sentences:
        1 or 2: add the runner-up sentence (from a different passage) when its support is at
        least ``second_ratio`` of the best.
    second_ratio:
        See ``max_sentences``.
    """

    # Cached like any generator: a batched lookup is ~100x cheaper than re-reading every passage,
    # which is what makes a warm re-run of a large sweep cheap. Bump VERSION when _answer changes.
    cacheable = True
    VERSION = 1

    def __init__(self, threshold: float = 0.5, max_sentences: int = 2, second_ratio: float = 0.8) -> None:
        if not (isinstance(threshold, (int, float)) and 0 <= threshold <= 1):
            raise ConfigError(f"generator.threshold must be in [0, 1], got {threshold!r}")
        if max_sentences not in (1, 2):
            raise ConfigError(f"generator.max_sentences must be 1 or 2, got {max_sentences!r}")
        self.threshold, self.max_sentences, self.second_ratio = float(threshold), max_sentences, float(second_ratio)
        self.identity: dict[str, Any] = {"generator": "extractive", "version": self.VERSION, "threshold": self.threshold,
                                         "max_sentences": max_sentences, "second_ratio": self.second_ratio}

    def traits(self) -> Traits:
        """A stand-in for a model: it answers offline and deterministically, so its refusals are a
        threshold's, not a reader's (``experiment.primary=auto`` never ranks configurations by them)."""
        return Traits(stand_in=True, refusal_setting="generator.threshold", can_clarify=False)

    def _answer(self, item: GenerationInput,
                split: dict[str, list[tuple[str, frozenset[str]]]] | None = None) -> dict[str, Any]:
        """``split``: passage text -> its sentences and their content words, filled as passages are
        met (a batch's prompts share most passages: each is split and tokenized once per batch)."""
        split = {} if split is None else split
        q = {t for t in tokenize(item.question, ENGLISH_STOPWORDS)}
        scored: list[tuple[float, int, int, str]] = []  # (support, passage, order, sentence)
        for p in item.passages:
            sentences = split.get(p.text)
            if sentences is None:
                sentences = split[p.text] = [(p.text[s:e], frozenset(tokenize(p.text[s:e], ENGLISH_STOPWORDS)))
                                             for s, e in sentence_spans(p.text)]
            for order, (sent, words) in enumerate(sentences):
                support = len(q & words) / len(q) if q else 0.0
                scored.append((support, p.number, order, sent))
        if not scored:
            return {"answer": REFUSAL, "sources": []}
        scored.sort(key=lambda t: (-t[0], t[1], t[2]))
        best = scored[0]
        if best[0] < self.threshold:
            return {"answer": REFUSAL, "sources": []}
        picks = [best]
        if self.max_sentences == 2:
            for cand in scored[1:]:
                if cand[1] != best[1] and cand[0] >= self.second_ratio * best[0]:
                    picks.append(cand)
                    break
        text = " ".join(f"{sent} [{num}]" for _, num, _, sent in picks)
        return {"answer": text, "sources": sorted({num for _, num, _, _ in picks})}

    def generate(self, items: Sequence[GenerationInput]) -> list[Generation]:
        """Deterministic answers, as JSON in the contract's format."""
        out = []
        split: dict[str, list[tuple[str, frozenset[str]]]] = {}  # this batch's passages, split once each
        for item in items:
            raw = json.dumps(self._answer(item, split))
            # attempts=0: no model or endpoint was called (nothing to count as an endpoint call).
            out.append(Generation(raw, None, prompt_tokens(item.prompt.system, item.prompt.user), count_tokens(raw),
                                  attempts=0))
        return out
