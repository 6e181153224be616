"""What the query transform did (metrics.json ``query``; the stage: :mod:`rag_bench.query`),
measured on its own, not only downstream. Reported for runs with a transform (``query`` other
than ``none``); each a mean over questions with n and a CI.

- ``fallback_rate``: questions searched as they are because the transform failed on them (a model
  call that failed, a reply that does not parse or holds nothing usable; the reason is in
  records.parquet ``query_fallback``; the texts searched are ``query_texts``, what the transform wrote ``query_output``).
- ``calls``: model calls per question the transform needs (0 without a model; the same whether
  the reply came from the generation cache or not). ``ms``: what producing it took per question
  (a cached reply's original time: what it costs, as the generator's seconds are priced).
- ``fan_out``: texts searched per question (fused by RRF when more than one).
- ``kept_terms``: the share of the question's key terms -- its numbers, its names (capitalised
  past the first word) and its rare content words (in at most ``rare_df`` of the passages, or in
  none), as stemmed content words (:func:`rag_bench.text.normalize.content_words`); all its content
  words when it has no key term -- found in the texts searched. A rewrite that drops "E21" or
  "Kettleby" scores below 1. NaN for a question without content words.
- ``gold_overlap``: recall of the people-written standalone question's content words
  (:attr:`Question.standalone`) in the texts searched; reported when a question carries one.
- ``lift@k``: hit@k of the first stage's ranking with the transform minus hit@k of the
  untransformed question's (:attr:`QuestionRun.untransformed`), at ``pipeline.k``: +1 where the
  transform brought a relevant passage into the top k, -1 where it lost the only one. Defined where
  the ranking measures are (answerable questions with a relevant passage); like
  ``rerank/hit_lift@k``, it grades a ranking no other scorer grades, from the run.

What these cannot see: whether a rewrite is *right* when it keeps the terms (a rewrite that
resolves "it" to the wrong product keeps every term of the question), and what the transform
costs downstream beyond retrieval.
"""

from __future__ import annotations

import re

from rag_bench.domain import Question, Ranking
from rag_bench.evaluation.grade import Graded
from rag_bench.evaluation.run import SystemRun
from rag_bench.evaluation.scorer import Measure, Part, ScoringInput, Settings
from rag_bench.evaluation.scorers.chunk_ranking import GRADED_BY
from rag_bench.text.normalize import content_words

SECTION = "query"
RARE_DF = 0.05  # a content word in at most this share of the passages is rare
QUERY = (
    Measure("fallback_rate", SECTION, prefix="query_", higher_is_better=False, description="questions searched as they are because "
            "the transform failed on them (call failed, reply unparseable or empty)", short="q_fallback"),
    Measure("calls", SECTION, prefix="query_", higher_is_better=False, description="model calls per question the transform needs "
            "(cached or not)", short="q_calls"),
    Measure("ms", SECTION, prefix="query_", higher_is_better=False, description="milliseconds per question the transform took (a "
            "cached reply's original time)", short="q_ms"),
    Measure("fan_out", SECTION, prefix="query_", higher_is_better=None, description="texts searched per question (fused by RRF when "
            "more than one)", short="q_fan_out"),
    Measure("kept_terms", SECTION, prefix="query_", description="share of the question's numbers, names and rare content words "
            "(stemmed) found in the texts searched", short="q_kept", params=(f"rare_df={RARE_DF}",)),
    Measure("gold_overlap", SECTION, prefix="query_", description="recall of the people-written standalone question's content words "
            "(stemmed) in the texts searched", short="q_gold"),
    Measure("lift", SECTION, prefix="query_", cut="required", description="hit@k of the first stage's ranking with the transform "
            "minus hit@k of the question searched as it is", short="q_lift", params=GRADED_BY),
)
FALLBACK_RATE, CALLS, MS, FAN_OUT, KEPT_TERMS, GOLD_OVERLAP, LIFT = QUERY
# records.parquet: what the transform made of each question
QUERIES, OUTPUT, FALLBACK = "query_texts", "query_output", "query_fallback"
# what each text retrieved on its own: its first relevant rank (null: none in its ranking), its top k
TEXT_FIRST, TEXT_TOP = "query_text_first_relevant", "query_text_top"
_NUMBER = re.compile(r"\d")
_WORD = re.compile(r"[^\W_]+(?:[-'./][^\W_]+)*", re.UNICODE)


def transformed(run: SystemRun) -> bool:
    """Whether the run's questions went through a query transform."""
    return any(q.query is not None for q in run.questions)


def key_terms(question: str, rare: frozenset[str] | None = None) -> frozenset[str]:
    """The question's stemmed key terms: words with a digit, names (capitalised past the first
    word), and content words in ``rare``; all its content words when none is a key term.

    >>> sorted(key_terms("What does error E21 mean on the Kettleby dishwasher?"))
    ['e21', 'kettlebi']
    >>> sorted(key_terms("how do returns work"))
    ['return', 'work']
    """
    words = content_words(question)
    keys: set[str] = set()
    for i, w in enumerate(_WORD.findall(question)):
        if _NUMBER.search(w) or (i > 0 and w[:1].isupper()):
            keys |= content_words(w)
    if rare is not None:
        keys |= {w for w in words if w in rare}
    keys &= words
    return frozenset(keys) if keys else words


def kept(question: str, queries: tuple[str, ...], rare: frozenset[str] | None = None) -> float:
    """Share of ``question``'s :func:`key_terms` among the content words of ``queries`` (NaN: none).

    >>> kept("Is error E21 covered?", ("What does the E21 fault mean?",))
    1.0
    """
    keys = key_terms(question, rare)
    if not keys:
        return float("nan")
    have = content_words(" ".join(queries))
    return len(keys & have) / len(keys)


def recall(gold: str, queries: tuple[str, ...]) -> float:
    """Share of ``gold``'s content words among the content words of ``queries`` (NaN: none)."""
    want = content_words(gold)
    return len(want & content_words(" ".join(queries))) / len(want) if want else float("nan")


def _hit(ranking: Ranking | None, g: Graded, k: int, level: int) -> bool:
    return ranking is not None and any(g.qrels.get(j, 0) >= level for j in ranking.indices[:k])


def query_lost(qr: object, g: Graded, k: int, level: int) -> bool:
    """Whether the question's evidence is in the top k of the untransformed question's ranking, or
    of its people-written standalone form's, and not of the transform's: the ``query`` failure
    label (:mod:`rag_bench.evaluation.scorers.attribution`)."""
    if getattr(qr, "query", None) is None:
        return False
    found = _hit(qr.untransformed, g, k, level) or _hit(qr.standalone_ranking, g, k, level)  # type: ignore[attr-defined]
    return found and not _hit(qr.retrieved, g, k, level)  # type: ignore[attr-defined]


def rare_words(run: SystemRun) -> frozenset[str]:
    """The content words of the run's questions that occur in at most :data:`RARE_DF` of its passages."""
    words = frozenset().union(*(content_words(q.question.question) for q in run.questions))
    df = dict.fromkeys(words, 0)
    for p in run.passages:
        for w in content_words(p.text) & words:
            df[w] += 1
    limit = RARE_DF * max(1, len(run.passages))
    return frozenset(w for w, n in df.items() if n <= limit)


class QueryScorer:
    """The scorer of the ``query`` section and the transform's records columns."""

    name = "query"
    requires: tuple[str, ...] = ("query",)  # the evaluation runs it only on a run that has it

    def measures(self, run: SystemRun, settings: Settings) -> list[Measure]:
        """Every measure of a run with a transform; gold_overlap when a question has a standalone form."""
        gold = any(q.question.standalone for q in run.questions)
        return [FALLBACK_RATE, CALLS, MS, FAN_OUT, KEPT_TERMS, *([GOLD_OVERLAP] if gold else []),
                LIFT.at(settings.k)]

    def score(self, scoring: ScoringInput) -> list[Part]:
        """Per question: the transform's figures, its texts, output and fallback reason."""
        run = scoring.run
        k, level = scoring.settings.k, scoring.settings.relevance_level
        rare = rare_words(run)
        cols: dict[str, list[object]] = {m.column: [] for m in (FALLBACK_RATE, CALLS, MS, FAN_OUT, KEPT_TERMS)}
        gold: list[float] = []
        lift: list[float] = []
        texts: list[list[str]] = []
        firsts: list[list[int | None]] = []
        tops: list[list[str]] = []
        outputs: list[str] = []
        reasons: list[str | None] = []
        for qr, g in zip(run.questions, scoring.grades.questions):
            q: Question = qr.question
            t = qr.query
            if t is None:  # a question the transform did not see: nothing to say of it
                for c in cols.values():
                    c.append(float("nan"))
                gold.append(float("nan"))
                lift.append(float("nan"))
                texts.append([q.question])
                firsts.append([])
                tops.append([])
                outputs.append("")
                reasons.append(None)
                continue
            cols[FALLBACK_RATE.column].append(float(t.fallback is not None))
            cols[CALLS.column].append(float(t.calls))
            cols[MS.column].append(1000.0 * t.seconds)
            cols[FAN_OUT.column].append(float(len(t.queries)))
            cols[KEPT_TERMS.column].append(kept(q.question, t.queries, rare))
            gold.append(recall(q.standalone, t.queries) if q.standalone else float("nan"))
            if q.answerable and g.n_relevant > 0 and qr.untransformed is not None:
                lift.append(float(_hit(qr.retrieved, g, k, level)) - float(_hit(qr.untransformed, g, k, level)))
            else:
                lift.append(float("nan"))
            texts.append(list(t.queries))
            own = qr.query_rankings or (qr.retrieved,)
            firsts.append([next((n + 1 for n, j in enumerate(r.indices) if g.qrels.get(j, 0) >= level), None)
                           for r in own])
            tops.append([" ".join(run.passages[j].chunk_id for j in r.indices[:k]) for r in own])
            outputs.append(t.output)
            reasons.append(t.fallback)
        columns: dict[str, object] = {**cols, LIFT.at(k).column: lift}
        if any(qr.question.standalone for qr in run.questions):
            columns[GOLD_OVERLAP.column] = gold
        columns.update({QUERIES: texts, OUTPUT: outputs, FALLBACK: reasons, TEXT_FIRST: firsts, TEXT_TOP: tops})
        failed = sum(r is not None for r in reasons)
        warnings = (f"query: the transform fell back to the question for {failed} of {len(reasons)} questions "
                    f"(first reason: {next(r for r in reasons if r)}) -- see records.parquet query_fallback",) \
            if failed else ()
        return [Part("query", columns, warnings=warnings)]


SCORER = QueryScorer()
