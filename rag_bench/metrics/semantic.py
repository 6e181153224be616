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
claim and per set of passages, from the lexical judge's findings (its verdict over the whole passage
and within two sentences, numbers and negation in the best window), an antonym swap against the
best unit (:func:`antonym_swap`) and the best cosine, with two thresholds and an answer-level share
fitted on people's judgments (:class:`Weights`, shipped as ``semantic_weights.json`` with its training script
``benchmarks/train_support_judge.py`` and the data it was fitted on). A cosine between the two
thresholds is *undecided*: ambiguous evidence is counted as such (:attr:`Support.undecided`), never
guessed. Pieces of an answer that assert nothing checkable (:func:`non_claim`: a list's header, a code
block, "I hope this helps") are not judged.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from rag_bench.memo import Lru, digest
from rag_bench.metrics.support import FILLERS, Claim, ClaimVerdict, Support, judge_claims, read, support_claim, windows
from rag_bench.storage import default_cache_dir
from rag_bench.text.tokenize import ENGLISH_STOPWORDS

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


# Antonym pairs (one pair per "|"), read as the judge reads words (stemmed): a claim that puts one
# where its evidence has the other ("small" -> "big", "remove" -> "keep", "federal" -> "provincial")
# states the opposite with the same words, which neither word overlap nor a cosine sees. Written for
# this judge (issue 55); stopwords ("up", "more", "before") are no words of a claim, so not here.
ANTONYM_PAIRS = """big small|large small|high low|higher lower|highest lowest|increase decrease|increase reduce|increase cut|
rise fall|rise drop|grow shrink|gain lose|gain loss|win lose|won lost|profit loss|many few|open close|opened closed|start end|
start finish|begin end|first last|early late|earlier later|new old|young old|old modern|long short|longer shorter|fast slow|
quick slow|hot cold|warm cool|strong weak|rich poor|cheap expensive|easy difficult|easy hard|simple complex|safe dangerous|
safe unsafe|good bad|better worse|best worst|positive negative|success failure|succeed fail|accept reject|approve reject|
allow ban|allow forbid|allow prohibit|permit ban|agree disagree|support oppose|like dislike|love hate|friend enemy|ally enemy|
true false|right wrong|correct incorrect|legal illegal|public private|internal external|inside outside|domestic foreign|
national international|federal state|federal provincial|local national|north south|east west|left right|top bottom|
upper lower|front back|buy sell|bought sold|import export|lend borrow|give take|push pull|add remove|add subtract|
include exclude|keep remove|keep discard|keep lose|save spend|join leave|enter exit|arrive depart|come go|attack defend|
arrest release|guilty innocent|convict acquit|hire fire|employ dismiss|appoint dismiss|raise lower|raise cut|expand shrink|
expand reduce|boost cut|strengthen weaken|improve worsen|increase lower|higher reduced|full empty|present absent|alive dead|
live die|birth death|male female|man woman|men women|boy girl|husband wife|mother father|son daughter|brother sister|
king queen|day night|morning evening|summer winter|spring autumn|past future|ancient modern|always never|often rarely|
everyone nobody|everything nothing|major minor|majority minority|maximum minimum|wide narrow|thick thin|deep shallow|
heavy light|dark light|black white|wet dry|clean dirty|happy sad|calm angry|quiet loud|soft hard|smooth rough|tight loose|
certain uncertain|likely unlikely|possible impossible|able unable|known unknown|official unofficial|formal informal|
temporary permanent|partial complete|partly fully|secret public|hidden visible|hide reveal|hide unveil|conceal reveal|
show hide|confirm deny|admit deny|accept refuse|agree refuse|victory defeat|peace war|ascend descend|minimal maximal|
spur slow|accelerate slow|speed slow|encourage discourage|help hurt|benefit harm|protect endanger|cause prevent|
enable prevent|stop continue|stop start|pause resume|cancel continue|postpone advance|delay expedite|ahead behind|lead trail|
leader follower|pre post|input output|online offline|inbound outbound|upload download|plus minus|asset liability|
credit debit|income expense|revenue cost|surplus deficit|optimistic pessimistic|bullish bearish|boom bust|surge plunge|
soar plunge|jump drop|climb fall|gain drop|lift lower|bright dim|remember forget|teach learn|question answer|ask answer|
cheaper dearer|biggest smallest|largest smallest|bigger smaller|larger smaller|greater lesser|older younger|oldest youngest|
richest poorest|strongest weakest|fastest slowest|cheapest priciest|inexpensive expensive|affordable expensive|
sufficient insufficient|adequate inadequate|legal unlawful|lawful unlawful|mandatory optional|required optional|
compulsory voluntary|voluntary forced|wholesale retail|senior junior|elder younger|superior inferior|maximum minimal|
upward downward|increasing decreasing|rising falling|growing shrinking|winning losing|winner loser|buyer seller|
employer employee|teacher student|parent child|host guest|landlord tenant|predecessor successor|import ban|create destroy|
build demolish|construct destroy|launch end|launch cancel|unveil withdraw|introduce withdraw|approve veto|pass veto|
pass fail|elect defeat|exclusive inclusive|agree object"""


# Safe: one table, built once from the constant above (the stemmer is pure).
@functools.lru_cache(maxsize=1)
def antonyms() -> dict[str, frozenset[str]]:
    """Each stemmed word of :data:`ANTONYM_PAIRS` with its antonyms (both ways)."""
    table: dict[str, set[str]] = {}
    for pair in ANTONYM_PAIRS.replace("\n", "").split("|"):
        a, b = (next(iter(read(w).words), "") for w in pair.split())
        if a and b and a != b:
            table.setdefault(a, set()).add(b)
            table.setdefault(b, set()).add(a)
    return {w: frozenset(o) for w, o in table.items()}


def antonym_swap(claim: str, unit: str, passages: Sequence[str] = (),
                 ignore: frozenset[str] = FILLERS) -> tuple[str, str] | None:
    """(the claim's word, its antonym in ``unit``) when the claim has a word that neither ``unit``
    nor any of ``passages`` (its evidence) holds, whose antonym ``unit`` holds and the claim does not
    (the claim says the opposite of its evidence); None otherwise. Words are stemmed as the lexical
    judge reads them.

    >>> antonym_swap("The agency will deploy a tool for big drones", "The agency will deploy a tool for small drones.")
    ('big', 'small')
    >>> antonym_swap("Prices rose, then fell", "Prices rose sharply and fell back.") is None
    True
    """
    words, unit_words = read(claim, ignore).words, read(unit).words
    evidence = unit_words.union(*(read(p).words for p in passages))
    table = antonyms()
    for w in sorted(words - evidence):
        for o in sorted(table.get(w, ())):
            if o in unit_words and o not in words:
                return w, o
    return None


# What asserts nothing checkable: a list's or an example's header ("Here are the steps:", "For
# example:"), a code block, a greeting, sympathy, or a closing line ("I hope this helps", "Let me know ...",
# "If you have any other questions ...", "... should help you resolve it"). Long answers are full of
# them; judged, they are "no" (no passage holds them) in answers people call faithful.
_NON_CLAIM = re.compile(r"""^\W*(?:hi|hello|hey|sure|certainly|of\ course|great\ question|thanks?(?:\ you)?)\W*$
    |\bhope\ (?:this|that|it)\ helps\b
    |\b(?:let\ me\ know|feel\ free\ to)\b
    |\bshould\ help\ you\b
    |\bsorry\ to\ hear\b
    |\bif\ you(?:'re|\ are)?\ (?:still\ )?(?:have|having|need)\ (?:any\ )?(?:more\ |further\ |other\ |additional\ )?
       (?:questions|issues|problems|help)\b""", re.IGNORECASE | re.VERBOSE)


def non_claim(text: str) -> bool:
    """Whether a piece of an answer asserts nothing to check against passages (:data:`_NON_CLAIM`):
    it ends with ":" (a header), opens a code block, or is a greeting or a closing line.

    >>> [non_claim(t) for t in ("Here are the steps:", "I hope this helps!", "Rollo ruled Normandy.")]
    [True, True, False]
    """
    t = text.strip()
    return t.endswith(":") or t.startswith("```") or bool(_NON_CLAIM.search(t))


# The speaker's own person outside quotes ("I played wide receiver", "my favourite series"): a statement
# about whoever answers, which no passage can support (people call it not attributable).
_SPEAKER = re.compile(r"(?<![\w'])(?:i|i'm|i've|i'd|i'll|me|my|myself)(?![\w'])", re.IGNORECASE)
_QUOTED = re.compile(r'"[^"]*"|\u201c[^\u201d]*\u201d')


# "I" after a capitalised word is a numeral ("Richard I of Normandy", "King David I", "World War I")
# unless that word opens a sentence and is a function word or a filler ("Yes I did", "When I was").
_BEFORE = re.compile(r"(^|[.!?]\s+|[^\s.!?]\s+)([A-Z][\w'-]*)\s+$")


def _numeral(text: str, at: int) -> bool:
    m = _BEFORE.search(text, 0, at)
    if m is None:
        return False
    opens = not m.group(1).strip() or m.group(1).strip()[-1] in ".!?"
    return not opens or m.group(2).lower() not in ENGLISH_STOPWORDS | FILLERS


def about_speaker(text: str) -> bool:
    """Whether a claim speaks of its speaker (I, me, my; quoted words and regnal numerals aside).

    >>> about_speaker("I played wide receiver."), about_speaker('The film "I Sleep When I Can" came out in 2016.')
    (True, False)
    >>> about_speaker("Richard I of Normandy, whose son Alexander I married Sybilla"), about_speaker("Yes I did")
    (False, True)
    """
    text = _QUOTED.sub(" ", text)
    return any(m.group() != "I" or not _numeral(text, m.start()) for m in _SPEAKER.finditer(text))


NEAR_SENTENCES = 2  # the lexical judge's verdict within a run of at most two sentences (FEATURES' lexical_near)

# A claim's features, in the order the rule reads them: the best cosine, the share of its words in
# its best lexical window (the whole passage), the strict checks there (1 = passed), the lexical
# verdict there and within two sentences (words pooled from a long passage are no evidence of one
# statement), an antonym swap against the best unit (1 = found) and whether it speaks of its speaker.
FEATURES = ("cosine", "coverage", "numbers_ok", "names_ok", "negation_ok", "lexical", "lexical_near", "antonym",
            "speaker")


def features(claim: Claim, lexical: Support, match: Match, passages: Sequence[str], unit: str,
             ignore: frozenset[str] = FILLERS) -> tuple[float, ...]:
    """The rule's inputs for one claim against one set of ``passages`` (:data:`FEATURES`):
    ``lexical`` is the lexical judge's verdict there, ``match`` the best unit and ``unit`` its text."""
    near = support_claim(claim, passages, max_sentences=NEAR_SENTENCES, ignore=ignore).supported
    return (match.cosine, lexical.coverage, float(lexical.numbers_ok), float(lexical.names_ok),
            float(lexical.negation_ok), float(lexical.supported), float(near),
            float(antonym_swap(claim.text, unit, passages, ignore) is not None), float(about_speaker(claim.text)))


@dataclass(frozen=True)
class Weights:
    """The judge's decision rule over :data:`FEATURES`, with thresholds fitted on people's judgments
    (``benchmarks/train_support_judge.py``). A claim is

    - not supported when it puts a word its evidence lacks where its best unit has that word's antonym
      (:func:`antonym_swap`)
      or speaks of its speaker (:func:`about_speaker`: "I played wide receiver");
    - supported when the lexical judge supports it within two sentences of one passage, or when its
      numbers and negation agree with its best window and its best cosine is at least ``high``;
    - not supported when a number or a negation disagrees (a changed fact is no paraphrase), or when
      its best cosine is below ``low``;
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
        cosine, _, numbers_ok, _, negation_ok, lexical, near, antonym, speaker = x
        if antonym or speaker:
            return False
        if lexical and near:
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

    def _verdict(self, claim: Claim, lexical: Support, match: Match, passages: Sequence[str],
                 everything: Sequence[str], ignore: frozenset[str]) -> bool | None:
        """The rule's verdict on ``claim`` by ``passages`` (``lexical``: the lexical judge's there;
        ``match``: its best unit, indexing ``everything``, the context's texts)."""
        unit = everything[match.passage][match.start:match.end] if match.passage >= 0 else ""
        return self.weights.verdict(features(claim, lexical, match, passages, unit, ignore))

    def _decide(self, claim: Claim, lexical: Support | None, match: Match | None, passages: Sequence[str],
                everything: Sequence[str], ignore: frozenset[str]) -> Support | None:
        """``lexical`` decided again by the rule (:meth:`_verdict`), undecided marked."""
        if lexical is None or match is None:
            return lexical
        verdict = self._verdict(claim, lexical, match, passages, everything, ignore)
        return replace(lexical, supported=bool(verdict), undecided=verdict is None)

    def judge_claims(self, answer: str, sources: Sequence[int], passages: Sequence[tuple[int, str]], *,
                     ignore: frozenset[str] = FILLERS) -> tuple[ClaimVerdict, ...]:
        """:func:`rag_bench.metrics.support.judge_claims` decided by the model (see the class),
        without the pieces that assert nothing (:func:`non_claim`)."""
        key = digest([answer, repr(tuple(sources)), *(f"{n}:{t}" for n, t in passages), repr(self.weights)])
        return self._memo.get_or(key, lambda: self._judge(answer, sources, passages, ignore))

    def _judge(self, answer: str, sources: Sequence[int], passages: Sequence[tuple[int, str]],
               ignore: frozenset[str]) -> tuple[ClaimVerdict, ...]:
        lexical = [v for v in judge_claims(answer, sources, passages, ignore=ignore) if not non_claim(v.claim.text)]
        text = dict(passages)
        texts = [t for _, t in passages]
        order = {n: i for i, (n, _) in enumerate(passages)}
        # one comparison per claim with every passage of the context: its cited ones, each alone and
        # the whole context read from the same cosines
        rows = self.similarity.per_passage([v.claim.text for v in lexical], texts)
        out = []
        for v, row in zip(lexical, rows, strict=True):
            cited = [row[order[n]] for n in v.citations]
            own = max(cited, key=lambda m: m.cosine) if cited else None
            ctx = max(row, key=lambda m: m.cosine) if row else None
            alone = tuple(bool(self._verdict(v.claim, support_claim(v.claim, [text[n]], ignore=ignore), m, [text[n]],
                                             texts, ignore))
                          for n, m in zip(v.citations, cited, strict=True))
            out.append(replace(v, own=self._decide(v.claim, v.own, own, [text[n] for n in v.citations], texts, ignore),
                               by_citation=alone, context=self._decide(v.claim, v.context, ctx, texts, texts, ignore)))
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
