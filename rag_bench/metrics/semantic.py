"""Semantic support of a claim: the best cosine between the claim and a sentence or a two-sentence
window of its passages, with the packaged embedding model (issue 55).

The lexical judge (:mod:`rag_bench.metrics.support`) sees words: a paraphrase with other words
("passed away" for "died") is a "no" once a fifth of a claim's words differ, which is most of the
claims of the long answers large models write. Here each claim is also embedded and compared with
every *unit* of its passages (:func:`units`: each sentence and each run of two consecutive
sentences, never across passages); the best unit's cosine is the claim's semantic support.

Texts are embedded through an :class:`~rag_bench.embedding.base.Embedder` (by default the packaged
all-MiniLM-L6-v2 with the persistent embedding cache, :func:`default_embedder`), so a claim or a
passage unit is encoded once per text -- across answers, cells and runs -- never per cell.

The judge (:class:`SemanticJudge`, the claims scorer's ``eval.claims_judge=semantic``) decides, per
claim and per set of passages, from the lexical judge's findings (its verdict, numbers and negation
in the best window) and the best cosine, with two thresholds and an answer-level share fitted on
people's judgments (:class:`Weights`, shipped as ``semantic_weights.json`` with its training script
``benchmarks/train_support_judge.py`` and the data it was fitted on). A cosine between the two
thresholds is *undecided*: ambiguous evidence is counted as such (:attr:`Support.undecided`), never
guessed.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from rag_bench.memo import Lru, digest
from rag_bench.metrics.support import FILLERS, ClaimVerdict, Support, judge_claims, read, windows
from rag_bench.storage import default_cache_dir

WEIGHTS_FILE = Path(__file__).with_name("semantic_weights.json")

UNIT_SENTENCES = 2  # a unit: one sentence or a run of two consecutive sentences of one passage


@dataclass(frozen=True)
class Match:
    """A claim's best unit: its cosine, the passage (0-based, in the order given; -1: none) and
    the unit's characters in it."""

    cosine: float
    passage: int
    start: int
    end: int


_UNITS = Lru(1 << 14, pure=True)  # passage digest -> its unit spans


def units(passage: str) -> tuple[tuple[int, int], ...]:
    """Spans of each sentence and each run of two consecutive sentences of ``passage``.

    >>> p = "Rollo was a Viking. He ruled Normandy. He died."
    >>> [p[s:e] for s, e in units(p)]
    ['Rollo was a Viking.', 'Rollo was a Viking. He ruled Normandy.', 'He ruled Normandy.', \
'He ruled Normandy. He died.', 'He died.']
    """
    return _UNITS.get_or(digest([passage]), lambda: windows(passage, UNIT_SENTENCES))


class Similarity:
    """Claim-to-passage cosines through ``embedder`` (its ``embed_documents``: one vector per text,
    L2-normalised; a cached embedder encodes each distinct text once)."""

    def __init__(self, embedder: Any) -> None:
        self.embedder = embedder

    def vectors(self, texts: Sequence[str]) -> np.ndarray:
        """One vector per text (distinct texts embedded once per call; the embedder's cache spares
        texts seen before)."""
        distinct = list(dict.fromkeys(texts))
        if not distinct:
            return np.zeros((0, 0), dtype=np.float32)
        vecs = np.asarray(self.embedder.embed_documents(distinct), dtype=np.float32)
        row = {t: i for i, t in enumerate(distinct)}
        return vecs[[row[t] for t in texts]]

    def best(self, claims: Sequence[str], passages: Sequence[str]) -> list[Match]:
        """Per claim, its best unit among ``passages`` (the first of equals)."""
        return [max(row, key=lambda m: m.cosine) if row else Match(0.0, -1, 0, 0)
                for row in self.per_passage(claims, passages)]

    def per_passage(self, claims: Sequence[str], passages: Sequence[str]) -> list[list[Match]]:
        """Per claim, per passage, its best unit there (cosine 0 and no span where the passage has
        none among the claim's candidates). More than :data:`MAX_UNITS` units in all are narrowed
        per claim first to the :data:`MAX_UNITS` sharing most of its content words
        (:func:`candidates`), so a long article costs a bounded number of encodings per claim, not
        one per sentence."""
        spans = [(i, s, e) for i, p in enumerate(passages) for s, e in units(p)]
        if not claims:
            return []
        if not spans:
            return [[Match(0.0, i, 0, 0) for i in range(len(passages))] for _ in claims]
        picks = [candidates(c, passages, spans) for c in claims]
        chosen = sorted({j for pick in picks for j in pick})
        texts = [passages[spans[j][0]][spans[j][1]:spans[j][2]] for j in chosen]
        vecs = self.vectors([*claims, *texts])
        column = {j: k for k, j in enumerate(chosen)}
        sims = vecs[:len(claims)] @ vecs[len(claims):].T
        out = []
        for row, pick in zip(sims, picks, strict=True):
            best = [Match(0.0, i, 0, 0) for i in range(len(passages))]
            for j in pick:  # in passage order: the first of equals stays
                i, s, e = spans[j]
                c = float(row[column[j]])
                if best[i].end == 0 or c > best[i].cosine:
                    best[i] = Match(c, i, s, e)
            out.append(best)
        return out


MAX_UNITS = 8  # units a claim is compared with at most (those sharing most of its words; all when fewer)


def candidates(claim: str, passages: Sequence[str], spans: Sequence[tuple[int, int, int]]) -> list[int]:
    """Indexes into ``spans`` of the units a claim is embedded against: all of them when there are
    at most :data:`MAX_UNITS`, else the :data:`MAX_UNITS` sharing most of the claim's content words
    (ties in passage order), in passage order."""
    if len(spans) <= MAX_UNITS:
        return list(range(len(spans)))
    words = read(claim, FILLERS).words
    shared = [len(words & read(passages[i][s:e]).words) for i, s, e in spans]
    top = sorted(range(len(spans)), key=lambda j: (-shared[j], j))[:MAX_UNITS]
    return sorted(top)


# Safe: at most 4 loaded models (one per cache folder a process uses; the packaged model, read-only
# weights), keyed by the folder their embedding cache writes to.
@functools.lru_cache(maxsize=4)
def default_embedder(cache_dir: str | None = None) -> Any:
    """The packaged all-MiniLM-L6-v2 (conf/embedder/minilm.yaml's defaults) with the persistent
    embedding cache (``cache_dir``: None = ``$RAG_BENCH_CACHE`` or ``~/.cache/rag_bench``): one per
    process, loaded on first use."""
    from rag_bench.embedding.sentence_transformer import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(cache_dir=cache_dir)


# A claim's features, in the order of Weights.coef: the best cosine, the share of its words in its
# best lexical window, the strict checks there (1 = passed) and the lexical verdict.
FEATURES = ("cosine", "coverage", "numbers_ok", "names_ok", "negation_ok", "lexical")


def features(lexical: Support, match: Match) -> tuple[float, ...]:
    """The model's inputs for one claim against one set of passages (:data:`FEATURES`)."""
    return (match.cosine, lexical.coverage, float(lexical.numbers_ok), float(lexical.names_ok),
            float(lexical.negation_ok), float(lexical.supported))


@dataclass(frozen=True)
class Weights:
    """The judge's decision rule over :data:`FEATURES`, with thresholds fitted on people's judgments
    (``benchmarks/train_support_judge.py``). A claim is

    - supported when the lexical judge supports it, or when its numbers and negation agree with its
      best window and its best cosine is at least ``high``;
    - not supported when a number or a negation disagrees (a changed fact is no paraphrase), or when
      its best cosine is below ``low`` and the lexical judge does not support it;
    - undecided otherwise (ambiguous evidence: a cosine between ``low`` and ``high``).

    An answer is supported when at least ``mostly`` of its claims are, not supported when more than
    ``1 - mostly`` of them are not, else undecided (``mostly`` = 1: every claim, as the lexical
    judge's ``answer_supported``). ``source``: where the rule came from."""

    high: float
    low: float
    mostly: float = 1.0
    source: str = ""

    def verdict(self, x: Sequence[float]) -> bool | None:
        """True (supported), False (not) or None (undecided) for one claim's features ``x``."""
        cosine, _, numbers_ok, _, negation_ok, lexical = x
        if lexical:
            return True
        if not (numbers_ok and negation_ok):
            return False
        if cosine >= self.high:
            return True
        if cosine < self.low:
            return False
        return None

    def answer(self, verdicts: Sequence[bool | None]) -> bool | None:
        """An answer's verdict from its claims' (:func:`answer_verdict` at ``mostly``)."""
        return answer_verdict(verdicts, self.mostly)

    def as_json(self) -> dict[str, Any]:
        """The JSON form (``semantic_weights.json``'s ``model``)."""
        return {"features": list(FEATURES), "high": self.high, "low": self.low, "mostly": self.mostly}

    @classmethod
    def from_json(cls, data: dict[str, Any], source: str = "") -> Weights:
        """Weights from :meth:`as_json`'s form (features checked against :data:`FEATURES`)."""
        if tuple(data.get("features", ())) != FEATURES:
            raise ValueError(f"{source or 'weights'}: features {data.get('features')} are not {list(FEATURES)}")
        return cls(float(data["high"]), float(data["low"]), float(data.get("mostly", 1.0)), source)


def answer_verdict(verdicts: Sequence[bool | None], mostly: float) -> bool | None:
    """True when at least ``mostly`` of the claims' ``verdicts`` are True, False when more than
    ``1 - mostly`` are False, else None (undecided; also for no claim).

    >>> answer_verdict([True, True, True, False], 0.75), answer_verdict([True, False], 1.0), answer_verdict([True, None], 1.0)
    (True, False, None)
    """
    n = len(verdicts)
    if not n:
        return None
    yes, no = sum(v is True for v in verdicts), sum(v is False for v in verdicts)
    if yes >= mostly * n - 1e-9:
        return True
    if no > (1.0 - mostly) * n + 1e-9:
        return False
    return None


# Safe: the parsed JSON of at most 4 weight files (the shipped one, read-only), keyed by path.
@functools.lru_cache(maxsize=4)
def load_weights(path: str | None = None) -> Weights:
    """The shipped model (``semantic_weights.json`` next to this module), or the file ``path``."""
    file = Path(path) if path else WEIGHTS_FILE
    return Weights.from_json(json.loads(file.read_text(encoding="utf-8"))["model"], str(file))


class SemanticJudge:
    """The claims scorer's kernel with the semantic model: :func:`judge_claims`'s verdicts (the same
    claims, citations, passages and spans: the lexical judge's best windows), each ``supported``
    decided again by :class:`Weights` over the lexical findings and the best cosine, and marked
    ``undecided`` where the model is within its band."""

    def __init__(self, embedder: Any, weights: Weights | None = None) -> None:
        self.similarity = Similarity(embedder)
        self.weights = weights or load_weights()
        self._memo = Lru(1 << 12, pure=True)

    def _decide(self, lexical: Support | None, match: Match | None) -> Support | None:
        if lexical is None or match is None:
            return lexical
        verdict = self.weights.verdict(features(lexical, match))
        return replace(lexical, supported=bool(verdict), undecided=verdict is None)

    def judge_claims(self, answer: str, sources: Sequence[int], passages: Sequence[tuple[int, str]], *,
                     ignore: frozenset[str] = FILLERS) -> tuple[ClaimVerdict, ...]:
        """:func:`rag_bench.metrics.support.judge_claims` decided by the model (see the class)."""
        key = digest([answer, repr(tuple(sources)), *(f"{n}:{t}" for n, t in passages), repr(self.weights)])
        return self._memo.get_or(key, lambda: self._judge(answer, sources, passages, ignore))

    def _judge(self, answer: str, sources: Sequence[int], passages: Sequence[tuple[int, str]],
               ignore: frozenset[str]) -> tuple[ClaimVerdict, ...]:
        from rag_bench.metrics.support import support_claim

        lexical = judge_claims(answer, sources, passages, ignore=ignore)
        text = dict(passages)
        order = {n: i for i, (n, _) in enumerate(passages)}
        # one comparison per claim with every passage of the context: its cited ones, each alone and
        # the whole context read from the same cosines
        rows = self.similarity.per_passage([v.claim.text for v in lexical], [t for _, t in passages])
        out = []
        for v, row in zip(lexical, rows, strict=True):
            cited = [row[order[n]] for n in v.citations]
            own = max(cited, key=lambda m: m.cosine) if cited else None
            ctx = max(row, key=lambda m: m.cosine) if row else None
            alone = tuple(bool(self.weights.verdict(features(support_claim(v.claim, [text[n]], ignore=ignore), m)))
                          for n, m in zip(v.citations, cited, strict=True))
            out.append(replace(v, own=self._decide(v.own, own), by_citation=alone,
                               context=self._decide(v.context, ctx)))
        return tuple(out)


def semantic_judge() -> SemanticJudge:
    """The claims scorer's semantic judge: the packaged model with the persistent embedding cache
    of the cache folder in effect now (``$RAG_BENCH_CACHE``) and the shipped weights, one per
    process and cache folder."""
    return _semantic_judge(str(default_cache_dir()))


# Safe: at most 4 judges (one per cache folder a process uses), each holding the packaged model.
@functools.lru_cache(maxsize=4)
def _semantic_judge(cache_dir: str) -> SemanticJudge:
    return SemanticJudge(default_embedder(cache_dir))
