"""The catalog: every scorer of the evaluation (:data:`SCORERS`, in the order they run) and every
measure they declare, looked up by name.

A measure is declared once, by the scorer file that computes it (:mod:`rag_bench.evaluation.scorers`);
this module only collects them, so every consumer -- records.parquet columns, metrics.json keys,
MLflow names, gate policies (a regression is a change in the measure's worse direction), the
leaderboard's and report's columns, the CLI's defaults, the console line -- takes names from the
same objects (cf. ir_measures' measure objects and sentence-transformers'
``primary_metric``/``greater_is_better``). A cell also describes its own measures (metrics.json
``measures``: direction, aggregate, parameters, definition), so a cell written by another version
stays readable without this catalog (:mod:`rag_bench.evaluation.described`).

>>> m = measure("retrieval/hit@5")
>>> (m.name, m.key, m.mlflow_key, m.higher_is_better)
('hit@5', 'retrieval/hit@5', 'retrieval.hit_at_5', True)
>>> measure("abstention/false_refusal_rate").higher_is_better
False
>>> measure("retrieval/hit") is None  # hit needs a cutoff
True
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Sequence

from rag_bench.errors import ConfigError
from rag_bench.evaluation.scorer import Measure, Scorer, mlflow_name
from rag_bench.evaluation.scorers import (
    abstention,
    ann,
    answer,
    attribution,
    by_tag,
    chunk_ranking,
    citations,
    claims,
    clarify,
    conditional,
    cost,
    counts,
    document_ranking,
    evidence,
    generation,
    injection,
    judge,
    latency,
    parsing,
    passage_precision,
    query,
    rerank_lift,
    security,
    threshold,
)
from rag_bench.judging.samples import JUDGE_PREFIX, JUDGE_SECTION
from rag_bench.registry import Registry

__all__ = ["SCORERS", "Measure", "measure", "direction", "higher_is_better", "mlflow_name"]

# Every scorer, in the order the evaluation runs them: each may read the columns of those before it
# (the failure labels read correct and citation precision; by_tag reads everyone's); latency last
# (it reports the scoring's own time). Their warnings come in this order too.
SCORERS: Registry[Scorer] = Registry("eval.scorers", {s.name: s for s in (
    security.SCORER, chunk_ranking.SCORER, document_ranking.SCORER, evidence.SCORER, generation.SCORER,
    citations.SCORER, claims.SCORER, abstention.SCORER, answer.SCORER, clarify.SCORER, conditional.SCORER, judge.SCORER,
    threshold.SCORER, attribution.SCORER,
    ann.SCORER, passage_precision.SCORER, rerank_lift.SCORER, query.SCORER,
    counts.SCORER, parsing.SCORER, injection.SCORER, cost.SCORER,
    by_tag.SCORER, latency.SCORER)})
ALL_SCORERS = "all"  # eval.scorers=all: every scorer of SCORERS

# --- every family a scorer declares, in report order ---------------------------------------------
RANKING = chunk_ranking.RANKING
DOCUMENT = document_ranking.DOCUMENT
EVIDENCE = (*evidence.EVIDENCE, evidence.CONTEXT_COMPLETE)
GENERATION = generation.GENERATION
CITATION = citations.CITATION
CLAIMS = claims.CLAIMS
ABSTENTION = abstention.ABSTENTION
ANSWER = answer.ANSWER
CLARIFY = clarify.CLARIFY
THRESHOLD = threshold.THRESHOLD
SECURITY = security.SECURITY
ANN = (*ann.ANN, *ann.TUNING)
OTHER = (passage_precision.PASSAGE_PRECISION, rerank_lift.HIT_LIFT)
INJECTION = injection.INJECTION
QUERY = query.QUERY
FAMILIES: tuple[Measure, ...] = (*RANKING, *DOCUMENT, *EVIDENCE, *GENERATION, *CITATION, *CLAIMS, *ABSTENTION, *ANSWER,
                                 *CLARIFY, *THRESHOLD, *SECURITY, *ANN, *OTHER, *INJECTION, *QUERY)
# Figures: the numbers of metrics.json that are not quality measures (counts, costs, failure
# tallies: no per-question column, no CI, never a headline), each with its direction.
COUNTS = (*counts.DATA, *document_ranking.COUNTS, *counts.GENERATION, *answer.REFUSALS, *clarify.COUNTS, *judge.COUNTS,
          *counts.SYSTEM)
COST = (*cost.EMBEDDING, *cost.GENERATION, *judge.COST, *cost.MONEY)
FAILURES = attribution.FAILURES
PARSE = parsing.PARSE
HIDDEN_TEXT = injection.HIDDEN
FIGURES = (*COUNTS, *COST, *FAILURES, *PARSE, *HIDDEN_TEXT)
# Sections whose every number is a duration (one per timed stage: open-ended names): lower is better.
DURATION_SECTIONS = (latency.SECTION,)
# Sections whose measures are means over questions with n and a bootstrap CI (in that order).
QUESTION_SECTIONS = ("retrieval", "evidence", "generation", "citation", "claims", "abstention", "answer", "clarify",
                     "injection", "query")

HIT, PRECISION, RECALL, MRR, NDCG, MAP = RANKING
DOC_HIT, DOC_PRECISION, DOC_RECALL, DOC_MRR, DOC_NDCG, DOC_MAP = DOCUMENT
EVIDENCE_RECALL, COMPLETE, CONTEXT_COMPLETE = EVIDENCE
(CORRECT, ANSWER_RECALL, EXACT_MATCH, TOKEN_F1, SQUAD_EXACT, SQUAD_F1, SQUAD_HASANS_EXACT, SQUAD_HASANS_F1,
 SQUAD_NOANS_EXACT, SQUAD_NOANS_F1, FACTS_PRESENT, ANSWER_WORDS, FAITHFULNESS, UNPARSEABLE) = GENERATION
CITATION_PRECISION, CITATION_RECALL, INVALID_CITATIONS = CITATION
CLAIM_SUPPORT, CITATION_PRECISION_CLAIMS, CITATION_COVERAGE, UNSUPPORTED_CLAIMS, ANSWER_SUPPORTED = CLAIMS
CORRECT_REFUSAL_RATE, UNSUPPORTED_ANSWER_RATE, FALSE_REFUSAL_RATE = ABSTENTION
CORRECT_ALL, CONTEXT_ALL = ANSWER
CLARIFY_RATE, CORRECT_CLARIFICATION, PREMATURE_ANSWER = CLARIFY
TOP1_AUROC, TOP1_BEST_F1_THRESHOLD, TOP1_BEST_F1 = THRESHOLD
UNAUTHORIZED_RETRIEVALS, UNAUTHORIZED_FROM_RETRIEVER, UNAUTHORIZED_FROM_RERANKER, STALE_RETRIEVALS = SECURITY
ANN_RECALL = ann.ANN_RECALL
GENERATOR_TOKENS = cost.GENERATOR_TOKENS  # the tie rule's cost (rag_bench.decision.decide)
judge_measure = judge.judge_measure

# Every family by "section/family" and every figure by key: one registry shape (rag_bench.registry).
FAMILY: Registry[Measure] = Registry("measure", {f"{m.section}/{m.family}": m for m in FAMILIES})
FIGURE: Registry[Measure] = Registry("figure", {m.key: m for m in FIGURES})
_NAME = re.compile(r"^(?P<family>[A-Za-z0-9_]+?)(?:@(?P<cutoff>[0-9]+))?$")


def families() -> tuple[Measure, ...]:
    """Every measure family the scorers declare (the judge's are made per judged metric)."""
    return FAMILIES


def family(section: str, name: str) -> Measure:
    """The family ``name`` of ``section`` (``family("retrieval", "hit")``); ConfigError naming
    the closest families when unknown."""
    return FAMILY.get(f"{section}/{name}")


def measure(key: str) -> Measure | None:
    """The measure named ``section/name`` (``retrieval/ndcg@10``), or None when no such measure exists."""
    section, _, name = str(key).partition("/")
    match = _NAME.match(name)
    if not match:
        return None
    fam, cutoff = match["family"], match["cutoff"]
    if section == JUDGE_SECTION and fam.startswith(JUDGE_PREFIX) and cutoff is None:
        return judge_measure(fam[len(JUDGE_PREFIX):])
    if f"{section}/{fam}" not in FAMILY:
        return None
    base = FAMILY.get(f"{section}/{fam}")
    if cutoff is None:
        return None if base.cut == "required" else base
    if base.cut == "none" or int(cutoff) < 1:
        return None
    return base.at(int(cutoff))


def figure(key: str) -> Measure | None:
    """The count, cost or failure tally named ``section/name`` (``counts/unlocated_passages``), or None."""
    return FIGURE.get(str(key)) if str(key) in FIGURE else None


def direction(key: str) -> bool | None:
    """Declared direction of any ``section/name`` of metrics.json: True (higher is better), False
    (lower is better) or None (descriptive: neither). A measure's or figure's own declaration;
    lower for durations. ValueError when nothing declares one: never a default.

    >>> direction("retrieval/ndcg@10"), direction("counts/unlocated_passages"), direction("counts/chunks")
    (True, False, None)
    >>> direction("latency/retrieve_p95_ms")
    False
    """
    m = measure(key) or figure(key)
    if m is not None:
        return m.higher_is_better
    section, _, name = str(key).partition("/")
    if section in DURATION_SECTIONS and name:
        return False
    raise ValueError(f"{key!r} declares no direction (whether higher or lower is better): it is not a measure, "
                     "count, cost, failure tally or duration of rag_bench")


def higher_is_better(key: str) -> bool:
    """Whether a higher value of ``key`` is better (:func:`direction`); ValueError for a
    descriptive figure (no better way) and for a key that declares no direction.

    >>> higher_is_better("retrieval/ndcg@10"), higher_is_better("citation/invalid_citations")
    (True, False)
    >>> higher_is_better("counts/unlocated_passages")
    False
    """
    up = direction(key)
    if up is None:
        raise ValueError(f"{key!r} is descriptive (a size or a cache's state): neither higher nor lower is better")
    return up


# The smallest change of a measure that is a finding, by family (issue 55: a 0.6 ms latency change
# headed "best vs baseline"). Below it a change is no finding, however significant: docs/statistics.md.
MIN_EFFECTS = (
    ("_ms", 1.0, "1 ms"),  # a latency in milliseconds
    ("_s", 0.001, "1 ms"),  # a duration in seconds
    ("tokens", 1.0, "1 token"),  # tokens per question
    ("usd", 0.0001, "$0.0001"),  # money per question
    ("", 0.01, "1 point (0.01)"),  # shares and means on [0, 1]: hit, nDCG, correct, refusal rates, F1
)


def min_effect(key: str) -> tuple[float, str]:
    """The smallest change of ``key`` (``section/name``, or a records column) that counts as a
    finding, and how it is said (:data:`MIN_EFFECTS`: by the name's unit, else a 0-1 measure's 1 point).

    >>> min_effect("latency/retrieve_ms"), min_effect("retrieval/ndcg@10")
    ((1.0, '1 ms'), (0.01, '1 point (0.01)'))
    >>> min_effect("cost/tokens")
    (1.0, '1 token')
    """
    name = str(key).rpartition("/")[2].lower()
    return next((size, said) for suffix, size, said in MIN_EFFECTS if suffix in name and (
        not suffix.startswith("_") or name.endswith(suffix)))


def known_names(section: str, cutoffs: Sequence[int] = (1, 3, 5, 10)) -> list[str]:
    """Canonical names of ``section``'s measures (at common cutoffs) or figures, for "did you mean"
    hints."""
    out = []
    for f in (*FAMILIES, *FIGURES):
        if f.section == section:
            out += [f.at(k).key for k in cutoffs] if f.cut != "none" else []
            out += [f.key] if f.cut != "required" else []
    return out


def registry_sections() -> set[str]:
    """The metrics.json sections whose every name is a declared measure."""
    return {f.section for f in FAMILIES} | {JUDGE_SECTION}


def at(families: Iterable[Measure], cutoffs: Iterable[int]) -> list[Measure]:
    """Each family at each cutoff, family-major (``hit@1, hit@3, precision@1, ...``)."""
    cuts = list(cutoffs)
    return [f.at(k) for f in families for k in cuts]




def column_measure(column: str) -> Measure | None:
    """The retrieval, document or evidence measure whose per-question column is ``column``."""
    for section, prefix in (("retrieval", ""), ("document", "doc_"), ("evidence", "")):
        if prefix and not column.startswith(prefix):
            continue
        m = measure(f"{section}/{column[len(prefix):]}")
        if m is not None:
            return m
    return None



# --- what consumers show by default -----------------------------------------------------------
PRIMARY = NDCG.at(10)  # ranks cells: leaderboard, report, CLI defaults

# experiment.primary: "auto" (answer/correct_all when a model answered, answer/context_all when the
# generator is a stand-in, else PRIMARY) or a measure with a direction; checked when the config is
# composed (rag_bench.decision.decide uses it).
AUTO_PRIMARY = "auto"
CORRECT_KEY = CORRECT.key
AUTO_HELP = (f"{CORRECT_ALL.key} when a model answered, {CONTEXT_ALL.key} when the generator is a stand-in, "
             f"else {PRIMARY.key}")


def check_primary(name: str) -> str:
    """``name`` when it is ``auto`` or a declared measure with a direction; else ConfigError
    naming the key with the closest declared names."""
    if name == AUTO_PRIMARY:
        return name
    m = measure(name)
    if m is not None and m.higher_is_better is not None:
        return m.key
    known = sorted({n for s in QUESTION_SECTIONS for n in known_names(s)})
    close = difflib.get_close_matches(str(name), known, n=3, cutoff=0.5)
    hint = f"did you mean {' or '.join(close)}? " if close else ""
    raise ConfigError(f"experiment.primary: {name!r} is not a measure with a better direction -- fix: {hint}"
                      f"experiment.primary=auto ({AUTO_HELP}) or a section/name such as {CORRECT_ALL.key}")


CONSOLE = (HIT.at(5), MRR)  # the cell's summary line
CONSOLE_DOCUMENT = (DOC_HIT.at(5), DOC_MRR, DOC_NDCG.at(10))
CONSOLE_GENERATION = (CORRECT, EXACT_MATCH, TOKEN_F1, SQUAD_EXACT, SQUAD_F1, CITATION_PRECISION, CITATION_RECALL,
                      CORRECT_REFUSAL_RATE, FALSE_REFUSAL_RATE)
# The console's one line per cell: each stage's main measure, in data-flow order.
# The answer's are correct and SQuAD v2's combined EM/F1 (answerable and unanswerable questions,
# a refusal the empty answer: refusals are in them).
CONSOLE_SHORT = (HIT.at(5), MRR, CORRECT, SQUAD_EXACT, SQUAD_F1)
# Per-tag means (metrics.json by_tag, leaderboard --tag).
TAG = by_tag.TAG
TAG_ANSWER = by_tag.TAG_ANSWER
# Columns of the leaderboard and the report's table, in order.
HEADLINE = (*TAG, EVIDENCE_RECALL.at(5), COMPLETE.at(5), ANN_RECALL.at(10), CORRECT, ANSWER_WORDS, CITATION_PRECISION,
            FALSE_REFUSAL_RATE, CORRECT_REFUSAL_RATE)
# The main measure(s) of each stage: the leaderboard's default columns, the report's CI columns.
# The answer over all questions and its two halves: right on the answerable ones, refusals of the
# unanswerable ones (abstention in view wherever cells are ranked).
MAIN = (PRIMARY, HIT.at(5), DOC_NDCG.at(10), COMPLETE.at(5), CONTEXT_COMPLETE, CORRECT_ALL, CONTEXT_ALL, CORRECT,
        CORRECT_REFUSAL_RATE, FALSE_REFUSAL_RATE, CITATION_PRECISION)
# The ANN latencies the leaderboard appends when a cell has them.
ANN_LATENCY = (ann.ANN_P50, ann.EXACT_P50)
