"""Claims (metrics.json ``claims``): each claim of an answer judged by the passages it cites (issue 42).

Per answered question the answer is split into claims and each claim is judged by the offline
support judge of :mod:`rag_bench.metrics.support` (:func:`~rag_bench.metrics.support.judge_claims`,
its defaults: 80 % of the claim's informative words in one passage, every number, name and
negation there):

- a claim's citations are the ``[n]`` markers attached to it (the marker it is followed by; a
  clause without one takes the next marker of its sentence); an answer with no marker at all cites
  by its ``sources`` list, which then applies to every claim (a one-claim answer gets the answer's
  sources);
- ``claim_support``: claims supported by their own cited passages / claims (an uncited claim is
  unsupported);
- ``citation_precision_claims``: (claim, citation) pairs whose passage alone supports the claim it
  is attached to / pairs (NaN when no claim cites anything);
- ``citation_coverage``: claims some single one of whose citations supports them / claims;
- ``unsupported_claims``: claims no passage of the context supports, cited or not (lower is better);
- ``answer_supported``: 1 when every claim is supported by the passages it cites, else 0 -- the
  offline support verdict, the stand-in for people's ``faithfulness`` label
  (:mod:`rag_bench.calibration.standins`).

With ``eval.claims_judge=semantic`` (issue 55) each claim is judged by the semantic judge of
:mod:`rag_bench.metrics.semantic` (the lexical findings and the claim's best cosine with a passage
sentence or window, weighed by a model fitted on people's judgments), which may leave a claim
*undecided* (ambiguous evidence): an undecided claim counts as not supported in the shares above;
``answer_supported`` is 1 when at least the judge's ``mostly`` share of the claims is supported (its
fitted rule: docs/metrics.md), 0 when more than the rest is not, and undefined (NaN: not guessed)
in between; ``claims_undecided`` (undecided claims / claims) and the records' ``undecided`` per
claim show how many. The lexical judge (the default) decides every claim, and an answer only when
all are supported.

Undefined (NaN) for a refusal, an unparseable output, a failed call and an answer with no claim
holding an informative word. ``generation/faithfulness`` (the lexical proxy) and
``citation/citation_precision`` (cited passages that overlap the gold evidence) stay for comparison.
The per-question column ``claims`` holds each judged claim (records.parquet, docs/contract.md §5).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rag_bench.evaluation.run import QuestionRun, SystemRun
from rag_bench.evaluation.scorer import Measure, Part, ScoringInput, Settings
from rag_bench.evaluation.scorers.generation import undefined_warning
from rag_bench.metrics.support import ClaimVerdict, judge_claims

SECTION = "claims"
DEFAULTS = "offline judge: >= 80 % of the claim's words in one passage, numbers, names, negation there"
CLAIMS = (
    Measure("claim_support", SECTION,
            description=f"claims supported by the passages they cite / claims ({DEFAULTS})", short="claim_sup"),
    Measure("citation_precision_claims", SECTION,
            description="(claim, citation) pairs whose cited passage alone supports the claim it is attached to / "
            "pairs", short="cite_p_claims"),
    Measure("citation_coverage", SECTION,
            description="claims with a citation whose passage supports them / claims", short="cite_cov"),
    Measure("unsupported_claims", SECTION, higher_is_better=False,
            description="claims no passage of the context supports, cited or not (count per answer)",
            short="unsup_claims"),
    Measure("answer_supported", SECTION,
            description="every claim of the answer supported by the passages it cites (the offline support "
            "verdict)", short="supported"),
)
CLAIM_SUPPORT, CITATION_PRECISION_CLAIMS, CITATION_COVERAGE, UNSUPPORTED_CLAIMS, ANSWER_SUPPORTED = CLAIMS
CLAIMS_UNDECIDED = Measure("claims_undecided", SECTION, higher_is_better=None,
                           description="claims the semantic judge leaves undecided (ambiguous evidence) / claims",
                           short="undecided")
COLUMN = "claims"  # records.parquet: the judged claims of each answer (list of structs)
METHOD = "offline_claim_window_judge"  # metrics.json methods.claims
METHODS = {"lexical": METHOD, "semantic": "offline_claim_semantic_judge"}


def _span(v: Any, passage: int | None) -> tuple[int | None, int | None]:
    return (v.start, v.end) if v is not None and passage is not None else (None, None)


def claim_record(v: ClaimVerdict, undecided: bool = False) -> dict[str, Any]:
    """One claim as stored in records.parquet's ``claims`` column: its text and [start, end) in
    the answer, the passage numbers it cites, its verdict by them (``supported``) and by each alone
    (``by_citation``), the passage and [span_start, span_end) of its best window among them,
    the share of its words found there and those missing, and its verdict, passage and span by
    the whole context (``context_*``); with ``undecided`` (the semantic judge) also whether its
    verdict is undecided."""
    own_s, own_e = _span(v.own, v.own_passage)
    ctx_s, ctx_e = _span(v.context, v.context_passage)
    return {"text": v.claim.text, "start": v.claim.start, "end": v.claim.end, "citations": list(v.citations),
            "supported": v.supported, "by_citation": list(v.by_citation), "passage": v.own_passage,
            "span_start": own_s, "span_end": own_e, "coverage": float(v.own.coverage) if v.own else 0.0,
            "missing": list(v.own.missing) if v.own else [], "context_supported": v.context_supported,
            "context_passage": v.context_passage, "context_span_start": ctx_s, "context_span_end": ctx_e,
            **({"undecided": v.undecided} if undecided else {})}


def question_values(verdicts: tuple[ClaimVerdict, ...] | None, undecided: bool = False,
                    mostly: float = 1.0) -> dict[str, float]:
    """One answer's claim measures by column; NaN throughout when ``verdicts`` is None (not judged)
    or empty (no claim to judge). With ``undecided`` (the semantic judge) also ``claims_undecided``,
    and ``answer_supported`` by the judge's answer rule (at least ``mostly`` of the claims supported;
    :func:`rag_bench.metrics.semantic.answer_verdict`)."""
    nan = float("nan")
    measures = (*CLAIMS, CLAIMS_UNDECIDED) if undecided else CLAIMS
    if not verdicts:
        return {m.column: nan for m in measures}
    pairs = [ok for v in verdicts for ok in v.by_citation]
    n = len(verdicts)
    supported = [v.supported for v in verdicts]  # each verdict's properties read once
    answer = float(all(supported))
    # Shares of 0/1 values: a count over n is the float numpy's mean gives (integer sums are exact), at a
    # fraction of its cost per question.
    out = {CLAIM_SUPPORT.column: sum(supported) / n,
           CITATION_PRECISION_CLAIMS.column: sum(pairs) / len(pairs) if pairs else nan,
           CITATION_COVERAGE.column: sum([any(v.by_citation) for v in verdicts]) / n,
           UNSUPPORTED_CLAIMS.column: float(n - sum([v.context_supported for v in verdicts])),
           ANSWER_SUPPORTED.column: answer}
    if undecided:  # the semantic judge's answer rule: at least `mostly` of the claims (undecided: NaN, not guessed)
        from rag_bench.metrics.semantic import answer_verdict

        open_ = [v.undecided for v in verdicts]
        said = answer_verdict([None if o else s for o, s in zip(open_, supported, strict=True)], mostly)
        out[ANSWER_SUPPORTED.column] = nan if said is None else float(said)
        out[CLAIMS_UNDECIDED.column] = sum(open_) / n
    return out


def _judge(settings: Settings) -> Callable[..., tuple[ClaimVerdict, ...]]:
    """The claims kernel ``settings`` name: :func:`judge_claims` (lexical) or the semantic judge's."""
    if settings.claims_judge == "semantic":
        from rag_bench.metrics.semantic import semantic_judge

        return semantic_judge().judge_claims
    return judge_claims


def _mostly(settings: Settings) -> float:
    """The share of an answer's claims ``answer_supported`` needs (1: every claim; the semantic
    judge's fitted share)."""
    if settings.claims_judge == "semantic":
        from rag_bench.metrics.semantic import semantic_judge

        return semantic_judge().weights.mostly
    return 1.0


def verdicts(qr: QuestionRun, judge: Callable[..., tuple[ClaimVerdict, ...]] = judge_claims
             ) -> tuple[ClaimVerdict, ...] | None:
    """The judged claims of one question's answer; None when there is nothing to judge (a refusal,
    an unparseable output, a failed call)."""
    a = qr.answer
    if a is None or a.error is not None or a.parse_error is not None or a.refused or not a.text.strip():
        return None
    return judge(a.text, a.citations, [(p.number, p.text) for p in qr.context or ()])


class Claims:
    """The scorer of :data:`CLAIMS` and the ``claims`` column (cells whose system answered)."""

    name = "claims"
    requires: tuple[str, ...] = ("answers",)  # the evaluation runs it only on a run that has it

    def measures(self, run: SystemRun, settings: Settings) -> list[Measure]:
        """The claim measures (and ``claims_undecided`` with the semantic judge)."""
        return [*CLAIMS, CLAIMS_UNDECIDED] if settings.claims_judge == "semantic" else list(CLAIMS)

    def score(self, scoring: ScoringInput) -> list[Part]:
        """Per question: the judged claims and the claim measures."""
        run = scoring.run
        semantic = scoring.settings.claims_judge == "semantic"
        judge = _judge(scoring.settings)
        mostly = _mostly(scoring.settings)
        measures = [*CLAIMS, CLAIMS_UNDECIDED] if semantic else CLAIMS
        columns: dict[str, list[Any]] = {COLUMN: [], **{m.column: [] for m in measures}}
        for qr in run.questions:
            judged = verdicts(qr, judge)
            columns[COLUMN].append([claim_record(v, semantic) for v in judged or ()])
            for name, value in question_values(judged, semantic, mostly).items():
                columns[name].append(value)
        method = METHODS.get(scoring.settings.claims_judge, METHOD)
        return [Part(SECTION, columns, sections={"methods": {SECTION: method}},
                     warnings=undefined_warning(CLAIM_SUPPORT, columns[CLAIM_SUPPORT.column],
                                                " (no answer with a claim to judge)"))]


SCORER = Claims()
