"""The measure registry: every measure a cell reports, declared once.

A :class:`Measure` names a family (``hit``), the metrics.json section it lives in (``retrieval``),
an optional cutoff, whether higher is better, how it aggregates and how it is displayed. Every
consumer takes names from here (cf. ir_measures' measure objects and sentence-transformers'
``primary_metric``/``greater_is_better``): the per-question columns of records.parquet, the keys
of metrics.json, MLflow metric names, gate policies (a regression is a change in the measure's
worse direction), the leaderboard's and report's columns, the CLI's defaults and the console
line. The three spellings of one measure are views of one object:

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
from dataclasses import dataclass, replace
from functools import cached_property, lru_cache
from typing import Literal

from rag_bench.errors import ConfigError
from rag_bench.failure_labels import GENERATION_CELL_LABELS

Aggregate = Literal["mean", "sum", "value"]
Cut = Literal["required", "optional", "none"]


@dataclass(frozen=True)
class Measure:
    """One measure of a cell.

    Attributes
    ----------
    family:
        Base name (``hit``, ``correct``); with ``cutoff`` it gives :attr:`name` (``hit@5``).
    section:
        metrics.json section (``retrieval``, ``evidence``, ``generation``, ...).
    higher_is_better:
        Direction: True, False, or None for descriptive figures (a threshold, a count).
    aggregate:
        ``mean`` over the questions where the measure is defined, with n and a bootstrap CI;
        ``sum`` over questions; ``value`` computed once for the cell (no per-question column).
    cut:
        Whether the family takes a cutoff (``required``, ``optional`` or ``none``).
    cutoff:
        The cutoff of this instance (None for uncut measures and families).
    description:
        One line for help texts and reports.
    """

    family: str
    section: str
    higher_is_better: bool | None = True
    aggregate: Aggregate = "mean"
    cut: Cut = "none"
    cutoff: int | None = None
    description: str = ""
    short: str = ""  # shorter display name for the console line; the name when empty
    prefix: str = ""  # of the records.parquet column, when two sections share family names

    # The spellings below are computed once per instance (cached_property writes the instance's
    # __dict__, which a frozen dataclass allows; fields alone decide equality, hash and replace()):
    # scoring a cell reads them some 2,000 times.

    @cached_property
    def column(self) -> str:
        """Per-question column in records.parquet: the name, prefixed for document-level measures
        (``doc_ndcg@10``)."""
        return self.prefix + self.name

    @cached_property
    def name(self) -> str:
        """Name inside its section and as a records.parquet column: ``hit@5``, ``map``."""
        return f"{self.family}@{self.cutoff}" if self.cutoff is not None else self.family

    @cached_property
    def display(self) -> str:
        """Name on the console line: ``cite_p`` for citation_precision, else :attr:`name`."""
        return self.short or self.name

    @cached_property
    def key(self) -> str:
        """Canonical name, as in metrics.json, gate policies and ``--metric``: ``retrieval/hit@5``."""
        return f"{self.section}/{self.name}"

    @cached_property
    def mlflow_key(self) -> str:
        """MLflow's spelling (no ``@`` allowed): ``retrieval.hit_at_5``."""
        return mlflow_name(self.key)

    def at(self, cutoff: int) -> Measure:
        """This family at ``cutoff`` (``HIT.at(5)`` is ``hit@5``)."""
        if self.cut == "none":
            raise ValueError(f"{self.family} takes no cutoff")
        return _at(self, int(cutoff))

    def format(self, value: float | None) -> str:
        """Display form: three decimals, ``n/a`` when undefined."""
        return "n/a" if value is None else f"{value:.3f}"


def _m(family: str, section: str, description: str, *, up: bool | None = True, agg: Aggregate = "mean",
       cut: Cut = "none", short: str = "") -> Measure:
    return Measure(family, section, up, agg, cut, None, description, short)


# --- the families, in report order ------------------------------------------------------------
_RANKING: tuple[tuple[str, str, Cut], ...] = (
    ("hit", "a relevant chunk in the top k (trec success_k)", "required"),
    ("precision", "relevant chunks in the top k / k", "required"),
    ("recall", "relevant chunks in the top k / all relevant chunks", "required"),
    ("mrr", "1 / rank of the first relevant chunk (within k when cut)", "optional"),
    ("ndcg", "normalised discounted cumulative gain (within k when cut)", "optional"),
    ("map", "mean average precision over the whole ranking", "none"),
)
RANKING = tuple(_m(f, "retrieval", d, cut=c) for f, d, c in _RANKING)
# The same measures over the document ranking (eval.unit=document|both): each document ranked by
# its best chunk, scored against document qrels, comparable with published BEIR figures.
DOCUMENT = tuple(replace(f, section="document", prefix="doc_", description=f"{f.description} (documents)")
                 for f in RANKING)
EVIDENCE = (
    _m("evidence_recall", "evidence", "evidence spans covered by the union of the top k chunks", cut="required"),
    _m("complete", "evidence", "all evidence spans covered by the top k chunks (multi-hop)", cut="required"),
)
GENERATION = (
    _m("correct", "generation", "the answer is right by eval.answer_match (auto: facts present, else answer recall)"),
    _m("answer_recall", "generation", "a normalised reference occurs in the answer (long-form accuracy, STR-EM)"),
    _m("exact_match", "generation", "the answer equals a reference after SQuAD 2.0's normalisation (SQuAD EM, "
       "answerable questions: HasAns_exact)", short="em"),
    _m("token_f1", "generation", "best token-overlap F1 against the references, as SQuAD 2.0's script (SQuAD F1, "
       "answerable questions: HasAns_f1)", short="f1"),
    # SQuAD v2's combined figures, answerable and unanswerable questions together (an unanswerable
    # question's gold is the empty answer; a refusal is the empty answer), and its two splits under
    # the official script's names: what a published SQuAD 2.0 or NQ figure is compared with.
    _m("squad_exact", "generation", "SQuAD v2 exact match over all questions (the script's 'exact'; a refusal "
       "is the empty answer, the gold of an unanswerable question)", short="squad_em"),
    _m("squad_f1", "generation", "SQuAD v2 F1 over all questions (the script's 'f1')"),
    _m("squad_hasans_exact", "generation", "SQuAD v2 HasAns_exact: exact match on the answerable questions"),
    _m("squad_hasans_f1", "generation", "SQuAD v2 HasAns_f1: F1 on the answerable questions"),
    _m("squad_noans_exact", "generation", "SQuAD v2 NoAns_exact: unanswerable questions given the empty answer "
       "(a refusal)"),
    _m("squad_noans_f1", "generation", "SQuAD v2 NoAns_f1: as NoAns_exact (F1 against an empty gold is 0 or 1)"),
    _m("facts_present", "generation", "every fact of the question occurs in the answer"),
    _m("answer_words", "generation", "answer length in words (containment rewards long answers)", up=None,
       short="words"),
    _m("faithfulness", "generation", "answer sentences supported by the passages they cite"),
    _m("unparseable", "generation", "outputs that broke the JSON answer contract", up=False),
)
CITATION = (
    _m("citation_precision", "citation", "cited passages that are relevant / cited passages", short="cite_p"),
    _m("citation_recall", "citation", "evidence spans covered by cited passages / evidence spans", short="cite_r"),
    _m("invalid_citations", "citation", "citation numbers outside the context", up=False),
)
ABSTENTION = (
    _m("correct_refusal_rate", "abstention", "unanswerable questions answered with the refusal",
       short="correct_refusal"),
    _m("unsupported_answer_rate", "abstention", "unanswerable questions answered anyway", up=False),
    _m("false_refusal_rate", "abstention", "answerable questions refused", up=False, short="false_refusal"),
)
THRESHOLD = (
    _m("top1_auroc", "abstention", "AUROC of the top-1 retrieval score for answerable vs unanswerable",
       agg="value"),
    _m("top1_best_f1_threshold", "abstention", "top-1 score threshold with the best F1", up=None, agg="value"),
    _m("top1_best_f1", "abstention", "F1 of answerable-vs-unanswerable at that threshold", agg="value"),
)
SECURITY = (
    _m("unauthorized_retrievals", "security", "retrieved chunks the asker may not read (must be 0)", up=False,
       agg="sum"),
    _m("unauthorized_from_retriever", "security", "chunks the retriever returned that the asker may not read "
       "(dropped before the context; must be 0)", up=False, agg="sum"),
    _m("unauthorized_from_reranker", "security", "chunks left by the reranking stage that the asker may not read "
       "(dropped before the context; must be 0)", up=False, agg="sum"),
    _m("stale_retrievals", "security", "retrieved chunks of archived documents", up=False, agg="sum"),
)
ANN = (
    _m("ann_recall", "ann", "|ANN top-k ∩ exact top-k| / k", agg="value", cut="required"),
    *(_m(f, "ann", d, up=False, agg="value") for f, d in (
        ("ann_p50_ms", "median ANN query latency"), ("ann_p95_ms", "95th percentile ANN query latency"),
        ("exact_p50_ms", "median exact query latency"), ("exact_p95_ms", "95th percentile exact query latency"),
        ("build_s", "ANN index build time"), ("exact_build_s", "exact index build time"),
        ("index_bytes", "ANN index size"), ("exact_index_bytes", "exact index size"),
        ("underfill_fallbacks", "questions whose top k the index as configured left short (missing hits are "
         "misses in ann_recall; retrieval fills them by a wider or exact search)"))),
)
# Each family by name, for the consumers that need one: a measure's name is typed once, above
# (tests/evaluation/test_measure_names.py fails on a measure name typed anywhere else in rag_bench
# but its scorer).
HIT, PRECISION, RECALL, MRR, NDCG, MAP = RANKING
DOC_HIT, DOC_PRECISION, DOC_RECALL, DOC_MRR, DOC_NDCG, DOC_MAP = DOCUMENT
EVIDENCE_RECALL, COMPLETE = EVIDENCE
(CORRECT, ANSWER_RECALL, EXACT_MATCH, TOKEN_F1, SQUAD_EXACT, SQUAD_F1, SQUAD_HASANS_EXACT, SQUAD_HASANS_F1,
 SQUAD_NOANS_EXACT, SQUAD_NOANS_F1, FACTS_PRESENT, ANSWER_WORDS, FAITHFULNESS, UNPARSEABLE) = GENERATION
CITATION_PRECISION, CITATION_RECALL, INVALID_CITATIONS = CITATION
CORRECT_REFUSAL_RATE, UNSUPPORTED_ANSWER_RATE, FALSE_REFUSAL_RATE = ABSTENTION
TOP1_AUROC, TOP1_BEST_F1_THRESHOLD, TOP1_BEST_F1 = THRESHOLD
UNAUTHORIZED_RETRIEVALS, UNAUTHORIZED_FROM_RETRIEVER, UNAUTHORIZED_FROM_RERANKER, STALE_RETRIEVALS = SECURITY
(ANN_RECALL, ANN_P50_MS, ANN_P95_MS, EXACT_P50_MS, EXACT_P95_MS, BUILD_S, EXACT_BUILD_S, INDEX_BYTES,
 EXACT_INDEX_BYTES, UNDERFILL_FALLBACKS) = ANN
JUDGE_SECTION = "judge"
JUDGE_PREFIX = "judge_"

FAMILIES: tuple[Measure, ...] = (*RANKING, *DOCUMENT, *EVIDENCE, *GENERATION, *CITATION, *ABSTENTION, *THRESHOLD, *SECURITY,
                                 *ANN)
_BY_FAMILY = {(m.section, m.family): m for m in FAMILIES}
_NAME = re.compile(r"^(?P<family>[A-Za-z0-9_]+?)(?:@(?P<cutoff>[0-9]+))?$")

# Sections whose measures are means over questions with n and a bootstrap CI (in that order).
QUESTION_SECTIONS = ("retrieval", "evidence", "generation", "citation", "abstention")


def _figures(section: str, rows: tuple[tuple[str, bool | None, str], ...]) -> tuple[Measure, ...]:
    return tuple(_m(f, section, d, up=up, agg="value") for f, up, d in rows)


# --- figures: the numbers of metrics.json that are not quality measures ------------------------
# Counts, costs and failure tallies are not measures (no per-question column, no CI, never a
# headline), but a gate rule or a sort on them needs their direction all the same: each declares
# it here. A count of something that went wrong is lower-is-better; a size of the data or of the
# configuration, or a number that depends on what earlier runs left in a cache, is descriptive
# (None): no direction is better, so no regression rule applies to it.
COUNTS = _figures("counts", (
    ("documents", None, "documents in the dataset"),
    ("chunks", None, "chunks the chunker made (parents excluded)"),
    ("searchable_chunks", None, "chunks in the index (current versions unless archived ones are included)"),
    ("questions", None, "questions in the golden set"),
    ("answerable", None, "answerable questions"),
    ("unanswerable", None, "unanswerable questions"),
    ("evaluated", None, "answerable questions with a relevant chunk: the ranking measures' denominator"),
    ("excluded_no_relevant_chunk", False, "answerable questions no chunk of the corpus is relevant to (the "
     "chunker split or lost the evidence)"),
    ("excluded_no_relevant", None, "answerable questions with no relevant evidence in the dataset (a BEIR query "
     "judged only with grade 0)"),
    ("evaluated_documents", None, "answerable questions with a relevant document: the document measures' "
     "denominator"),
    ("excluded_no_relevant_document", None, "answerable questions with no relevant document in the dataset"),
    ("depth", None, "retrieval depth D"),
    ("k", None, "passages handed to the generator"),
    ("endpoint_calls", False, "generator endpoint calls (a cost)"),
    ("endpoint_failures", False, "generator endpoint calls that failed"),
    ("unparseable", False, "generator outputs that broke the JSON answer contract"),
    ("retries", False, "generator endpoint calls retried"),
    ("judge_attempted", None, "items the judge was asked to score"),
    ("judge_failures", False, "judge calls that failed"),
    ("judge_calls", False, "judge calls (a cost)"),
    ("unlocated_passages", False, "an external system's passages that no document holds"),
    ("passages_located_by_text", None, "an external system's passages located by their text (no offsets given)"),
    ("passages_not_in_claimed_doc", False, "an external system's passages whose text is not in the document they "
     "name"),
    ("duplicate_passages", False, "an external system's passages given twice for one question"),
))
COST = _figures("cost", (
    ("embedding_requests", False, "texts sent to the embedder, cache hits included"),
    ("embeddings_computed", False, "texts the embedder encoded in this run"),
    ("embed_s", False, "seconds spent encoding"),
    ("embedding_cache_hits", None, "texts served by the embedding cache (depends on earlier runs)"),
    ("generations_cached", None, "answers served by the generation cache (depends on earlier runs)"),
    ("generator_tokens", False, "generator tokens (prompt + completion) per question, mean; cached answers count "
     "their original tokens (the leaderboard's tie rule reads it)"),
    ("judge_calls", False, "judge calls made (judgements served by the judge cache make none)"),
    ("judge_tokens_in", False, "prompt tokens of the judge calls (the endpoint's usage)"),
    ("judge_tokens_out", False, "completion tokens of the judge calls (the endpoint's usage)"),
    ("judge_s", False, "seconds spent in judge calls (summed over calls in flight together)"),
))
# One tally per failure label (rag_bench.failure_labels), in attribution order: a question lost at
# a stage is a count of something that went wrong; correct and correct_refusal are the outcomes wanted.
_FAILURE_MEANINGS: dict[str, tuple[bool | None, str]] = {
    "unjudged": (None, "questions with no relevant evidence: nothing to attribute"),
    "chunking": (False, "questions whose evidence no chunk holds"),
    "retrieval_miss": (False, "questions with no relevant chunk in the top D"),
    "ranking": (False, "questions whose relevant chunk was retrieved but cut before k"),
    "error": (False, "questions whose generator call failed"),
    "false_refusal": (False, "answerable questions refused"),
    "in_context": (None, "evidence in the context and no reference to judge the answer (retrieval-only cells: "
                   "every question whose evidence reached the top k)"),
    "generation": (False, "evidence in the context, answer wrong"),
    "citation": (False, "answer right, citations do not support it"),
    "correct": (True, "answer right and supported"),
    "correct_refusal": (True, "unanswerable questions refused"),
    "hallucinated_answer": (False, "unanswerable questions answered"),
}
FAILURES = _figures("failures", tuple((label, *_FAILURE_MEANINGS[label]) for label in GENERATION_CELL_LABELS))
FIGURES = (*COUNTS, *COST, *FAILURES)
_FIGURES = {m.key: m for m in FIGURES}
GENERATOR_TOKENS = _FIGURES["cost/generator_tokens"]  # the tie rule's second cost (rag_bench.reporting.decide)
# Sections whose every number is a duration (one per timed stage: open-ended names): lower is better.
DURATION_SECTIONS = ("latency",)


# Families a scorer of rag_bench.evaluation.scorers declares in its own file (register()): found
# by importing that package's modules by name the first time a name is not among the above, so a
# new measure is one new scorer file (the package sits above this module: no static import of it).
_REGISTERED: list[Measure] = []
_SCORERS = "rag_bench.evaluation.scorers"
_discovered = False


def register(*families: Measure) -> tuple[Measure, ...]:
    """Add a scorer's measure families to the registry (once per section and family); returns them.
    A family of an existing section and name is an error: one name, one measure."""
    for f in families:
        known = _BY_FAMILY.get((f.section, f.family))
        if known is not None and known != f:
            raise ValueError(f"measure {f.section}/{f.family} is declared twice")
        if known is None:
            _BY_FAMILY[(f.section, f.family)] = f
            _REGISTERED.append(f)
    return families


def _discover() -> None:
    global _discovered
    if not _discovered:
        _discovered = True
        import importlib

        importlib.import_module(_SCORERS).discovered()


def families() -> tuple[Measure, ...]:
    """Every measure family: the built-in ones, then those the scorers declare."""
    _discover()
    return (*FAMILIES, *_REGISTERED)


def family(section: str, name: str) -> Measure:
    """The family ``name`` of ``section`` (``family("retrieval", "hit")``); KeyError when unknown."""
    if (section, name) not in _BY_FAMILY:
        _discover()
    return _BY_FAMILY[(section, name)]


def judge_measure(metric: str) -> Measure:
    """The measure of one LLM-judge metric (``faithfulness`` → ``judge/judge_faithfulness``)."""
    return Measure(JUDGE_PREFIX + metric, JUDGE_SECTION, True, "mean", "none", None, f"LLM judge: {metric}", "")


def measure(key: str) -> Measure | None:
    """The measure named ``section/name`` (``retrieval/ndcg@10``), or None when no such measure exists."""
    section, _, name = str(key).partition("/")
    match = _NAME.match(name)
    if not match:
        return None
    fam, cutoff = match["family"], match["cutoff"]
    if section == JUDGE_SECTION and fam.startswith(JUDGE_PREFIX) and cutoff is None:
        return judge_measure(fam[len(JUDGE_PREFIX):])
    base = _BY_FAMILY.get((section, fam))
    if base is None:
        _discover()
        base = _BY_FAMILY.get((section, fam))
    if base is None:
        return None
    if cutoff is None:
        return None if base.cut == "required" else base
    if base.cut == "none" or int(cutoff) < 1:
        return None
    return base.at(int(cutoff))


def figure(key: str) -> Measure | None:
    """The count, cost or failure tally named ``section/name`` (``counts/unlocated_passages``), or None."""
    return _FIGURES.get(str(key))


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


def known_names(section: str, cutoffs: Sequence[int] = (1, 3, 5, 10)) -> list[str]:
    """Canonical names of ``section``'s measures (at common cutoffs) or figures, for "did you mean"
    hints."""
    out = []
    for f in (*families(), *FIGURES):
        if f.section == section:
            out += [f.at(k).key for k in cutoffs] if f.cut != "none" else []
            out += [f.key] if f.cut != "required" else []
    return out


def registry_sections() -> set[str]:
    """The metrics.json sections whose every name is a registered measure."""
    return {f.section for f in families()} | {JUDGE_SECTION}


def mlflow_name(key: str) -> str:
    """MLflow forbids ``@`` in metric names: ``retrieval/hit@5`` → ``retrieval.hit_at_5``.

    Applies to any flattened key (``ci/retrieval/hit@5/lo`` → ``ci.retrieval.hit_at_5.lo``).
    """
    return key.replace("@", "_at_").replace("/", ".")


def at(families: Iterable[Measure], cutoffs: Iterable[int]) -> list[Measure]:
    """Each family at each cutoff, family-major (``hit@1, hit@3, precision@1, ...``)."""
    cuts = list(cutoffs)
    return [f.at(k) for f in families for k in cuts]


def retrieval_measures(ks: Sequence[int], families: Sequence[Measure] = RANKING) -> list[Measure]:
    """The ranking measures of a cell with cutoffs ``ks``: every cut family at every k, then the
    uncut (``families=DOCUMENT`` for the document ranking)."""
    cut = [f for f in families if f.cut != "none"]
    return at(cut, ks) + [f for f in families if f.cut != "required"]


def evidence_measures(cutoffs: Sequence[int]) -> list[Measure]:
    """Evidence recall and completeness at each cutoff (``eval.ks`` plus ``pipeline.k``)."""
    return at(EVIDENCE, cutoffs)


def column_measure(column: str) -> Measure | None:
    """The retrieval, document or evidence measure whose per-question column is ``column``."""
    for section, prefix in (("retrieval", ""), ("document", "doc_"), ("evidence", "")):
        if prefix and not column.startswith(prefix):
            continue
        m = measure(f"{section}/{column[len(prefix):]}")
        if m is not None:
            return m
    return None


def is_question_ranking_column(column: str) -> bool:
    """Whether a records.parquet column holds a per-question retrieval, document or evidence
    measure (the values ``compare`` and the gate's paired tests resample)."""
    return column_measure(column) is not None


@lru_cache(maxsize=4096)
def _at(m: Measure, cutoff: int) -> Measure:
    # Measures are frozen values: one object per (family, cutoff), built once (scoring asks for
    # them per question and cell; dataclasses.replace cost ~30 ms per cell of a sweep).
    return replace(m, cutoff=cutoff)


# --- what consumers show by default -----------------------------------------------------------
PRIMARY = family("retrieval", "ndcg").at(10)  # ranks cells: leaderboard, report, CLI defaults

# experiment.primary: "auto" (generation/correct when answers were generated, else PRIMARY) or a
# measure with a direction; checked when the config is composed (rag_bench.reporting.decide uses it).
AUTO_PRIMARY = "auto"
CORRECT_KEY = CORRECT.key


def check_primary(name: str) -> str:
    """``name`` when it is ``auto`` or a registered measure with a direction; else ConfigError
    naming the key with the closest registered names."""
    if name == AUTO_PRIMARY:
        return name
    m = measure(name)
    if m is not None and m.higher_is_better is not None:
        return m.key
    known = sorted({n for s in QUESTION_SECTIONS for n in known_names(s)})
    close = difflib.get_close_matches(str(name), known, n=3, cutoff=0.5)
    hint = f"did you mean {' or '.join(close)}? " if close else ""
    raise ConfigError(f"experiment.primary: {name!r} is not a measure with a better direction -- fix: {hint}"
                      f"experiment.primary=auto ({CORRECT_KEY} when answers were generated, else "
                      f"{PRIMARY.key}) or a section/name such as {CORRECT_KEY}")

CONSOLE = (family("retrieval", "hit").at(5), family("retrieval", "mrr"))  # the cell's summary line
CONSOLE_DOCUMENT = (family("document", "hit").at(5), family("document", "mrr"), family("document", "ndcg").at(10))
CONSOLE_GENERATION = (family("generation", "correct"), family("generation", "exact_match"),
                      family("generation", "token_f1"), family("generation", "squad_exact"),
                      family("generation", "squad_f1"), family("citation", "citation_precision"),
                      family("citation", "citation_recall"), family("abstention", "correct_refusal_rate"),
                      family("abstention", "false_refusal_rate"))
# The console's one line per cell: each stage's main measure, in data-flow order.
# The answer's are correct and SQuAD v2's combined EM/F1 (answerable and unanswerable questions,
# a refusal the empty answer: refusals are in them).
CONSOLE_SHORT = (family("retrieval", "hit").at(5), family("retrieval", "mrr"), family("generation", "correct"),
                 family("generation", "squad_exact"), family("generation", "squad_f1"))
# Per-tag means (metrics.json by_tag, leaderboard --tag).
TAG = (family("retrieval", "hit").at(1), family("retrieval", "hit").at(5), family("retrieval", "mrr").at(10),
       family("retrieval", "ndcg").at(10), family("retrieval", "recall").at(10))
# Per-tag answer measures beside them: the tags of unanswerable questions (off_topic, near_miss,
# internal_only) have no ranking measure, and their refusal rates are what a tag table is for.
TAG_ANSWER = (family("generation", "correct"), family("abstention", "correct_refusal_rate"),
              family("abstention", "false_refusal_rate"))
# Columns of the leaderboard and the report's table, in order.
HEADLINE = (*TAG, family("evidence", "evidence_recall").at(5),
            family("evidence", "complete").at(5), family("ann", "ann_recall").at(10),
            family("generation", "correct"), family("generation", "answer_words"), family("citation", "citation_precision"),
            family("abstention", "false_refusal_rate"), family("abstention", "correct_refusal_rate"))
# The main measure(s) of each stage: the leaderboard's default columns, the report's CI columns.
MAIN = (PRIMARY, family("retrieval", "hit").at(5), family("document", "ndcg").at(10),
        family("evidence", "complete").at(5), family("generation", "correct"),
        family("citation", "citation_precision"), family("abstention", "false_refusal_rate"))
# The ANN latencies the leaderboard appends when a cell has them.
ANN_LATENCY = (family("ann", "ann_p50_ms"), family("ann", "exact_p50_ms"))
