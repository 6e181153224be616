"""Failure attribution (docs/contract.md §4; metrics.json ``failures``): one label per question,
the first stage that lost it (the labels and their order: :mod:`rag_bench.failure_labels`).

Answerable questions go ``parsing`` → ``chunking`` → ``unauthorized`` → ``stale_version`` → (``query``) →
``retrieval_miss`` →
``ranking`` → ``partial_evidence`` → ``context`` → (``error``) → ``false_refusal`` → ``generation`` →
``citation`` → ``correct``; unanswerable ones are ``correct_refusal`` or ``hallucinated_answer``.
``error`` means the generator call itself failed (counted, reported, kept out of quality
denominators). A retrieval-only cell stops after the labels that apply before generation: an
answerable question whose evidence reached the top k, all of it, is ``in_context``.

``parsing`` (datasets with .pdf, .html or .docx documents: :attr:`Question.lost`) is decided like
``chunking`` -- evidence no chunk holds is evidence no passage can retrieve, and so is a gold quote
the cell's parser lost: every quote lost, the question is ``parsing``. Partly lost, the question is
labelled on the evidence that was located, as any other; it is ``parsing`` only when that located
evidence went as far as it could (its label is ``in_context``: all of it in the top k, and in the
context of a cell that generates), so the lost quote is what left its evidence incomplete -- where a
split span is ``chunking`` and an unretrieved one ``partial_evidence``, whatever the answer. A
question whose located evidence a later stage lost keeps that stage's label: the stage lost it
whatever the parser did.

The labels after the first relevant passage's rank (:func:`retrieval_label`) are decided by
:func:`lost_before_generation` from what the run holds per question:

- ``unauthorized``: no relevant passage in the final ranking at all while the retriever or
  reranker returned passages for the question that the asker may not read (dropped, counted in
  ``security/unauthorized_from_*``): they took the depth the evidence needed. An unreadable passage
  is never itself relevant (the loader refuses evidence the asker may not read), so this is the one
  way a dropped passage loses a question; a question that lost nothing to it keeps its label and
  the drop is still counted by ``security``.
- ``stale_version``: a document holding the question's evidence has no passage in the context (the
  top k in a retrieval-only cell) and an older version of it has one -- the same title and tenant,
  archived or effective earlier (:func:`older_versions`; ``security/stale_retrievals`` counts the
  archived passages of every ranking, this says which question it cost).
- ``query`` (a cell with a query transform): no relevant passage in the top k of the transform's
  first-stage ranking while the question searched as it is, or its people-written standalone
  form, has one there (:func:`rag_bench.evaluation.scorers.query.query_lost`).
- ``partial_evidence``: a relevant passage reached the top k but only some of the evidence spans
  are covered by the top k (``evidence/evidence_recall@k`` strictly between 0 and 1, the kernel of
  ``evidence/complete@k``).
- ``context``: the evidence reached the top k, but the passages handed to the generator lost some
  of it -- the token budget cut a relevant passage (deduplication and parent expansion keep its
  text, a parent whose cost exceeds the budget does not): fewer spans covered by the context than
  by the top k, or no relevant passage of the top k inside a passage of the context.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from rag_bench.domain import Answer, Chunk, Document, Passage, Question
from rag_bench.evaluation.grade import Graded
from rag_bench.evaluation.run import QuestionRun, SystemRun
from rag_bench.evaluation.scorer import Measure, Part, ScoringInput, Settings, figures
from rag_bench.evaluation.scorers.citations import PRECISION
from rag_bench.evaluation.scorers.clarify import clarified_run
from rag_bench.evaluation.scorers.generation import CORRECT
from rag_bench.evaluation.scorers.query import query_lost, transformed
from rag_bench.failure_labels import GENERATION_CELL_LABELS, LOST_BEFORE_GENERATION, OPTIONAL_LABELS, RETRIEVAL_LABELS
from rag_bench.metrics.relevance import evidence_coverage as _evidence_coverage

COLUMN = "failure"  # records.parquet: each question's label
# One tally per label, in attribution order: a question lost at a stage is a count of something that
# went wrong; correct and correct_refusal are the outcomes wanted.
_MEANINGS: dict[str, tuple[bool | None, str]] = {
    "unjudged": (None, "questions with no relevant evidence: nothing to attribute"),
    "parsing": (False, "questions with a gold quote the parser lost (not located in the parse, or in a document "
                "that failed to parse) and no later stage to blame"),
    "chunking": (False, "questions whose evidence no chunk holds"),
    "retrieval_miss": (False, "questions with no relevant chunk in the top D"),
    "query": (False, "questions whose evidence the question as it is (or its people-written standalone form) finds in "
              "the top k and the query transform's texts do not"),
    "unauthorized": (False, "questions with no relevant chunk in the final ranking while the retriever or reranker "
                     "returned chunks for it the asker may not read (dropped: they took the depth)"),
    "stale_version": (False, "questions whose evidence document had no passage in the context (the top k without "
                      "one) while an older or archived version of it had one"),
    "ranking": (False, "questions whose relevant chunk was retrieved but cut before k"),
    "partial_evidence": (False, "questions with a relevant chunk in the top k but only some of their evidence spans "
                         "covered by it (multi-hop)"),
    "context": (False, "questions whose evidence reached the top k but not the generator: cut from the context by "
                "the token budget"),
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
FAILURES = figures("failures", tuple((label, *_MEANINGS[label]) for label in GENERATION_CELL_LABELS))
SECTION = FAILURES[0].section


def retrieval_label(question: Question, found: np.ndarray, first_relevant: int | None, k: int) -> str | None:
    """Label after retrieval: ``found[i]`` says whether any passage of the corpus is relevant to
    evidence span ``i``; ``first_relevant`` is the 1-based rank of the first relevant passage.
    None for unanswerable questions (their label comes from the answer)."""
    if not question.answerable:
        return None
    if not question.evidence:
        return "unjudged"
    if not found.all():
        return "chunking"
    if first_relevant is None:
        return "retrieval_miss"
    if first_relevant > k:
        return "ranking"
    return "in_context"


def final_label(answerable: bool, retrieval: str | None, answer: Answer, correct: float,
                cite_precision: float, *, clarify: bool = False) -> str:
    """Label after generation, from the retrieval label, the parsed answer, its correctness (1.0,
    0.0, or NaN for a question with neither facts nor references) and its citation precision.

    A question whose correctness is undefined keeps its last retrieval label (``in_context``):
    nothing says the answer is wrong, so it is never blamed on ``generation``.

    ``clarify``: the question expects a clarifying question (``expects: clarify``) and ``correct``
    says whether the answer asked for every missing fact. Its right outcome cites nothing, so it
    is ``correct`` without the citation check; a refusal is ``false_refusal``; a direct answer
    (premature) or a question back that misses a fact is ``generation``.
    """
    if not answerable:
        if answer.error:
            return "error"
        return "correct_refusal" if answer.refused else "hallucinated_answer"
    if retrieval in LOST_BEFORE_GENERATION:
        return retrieval
    if answer.error:
        return "error"
    if answer.refused:
        return "false_refusal"
    if clarify:
        return "correct" if correct == 1.0 else "generation"
    if correct != correct:  # NaN: no reference to judge the answer by
        return retrieval or "in_context"
    if not correct:
        return "generation"
    if not answer.citations or not cite_precision > 0:
        return "citation"  # right answer, but no cited passage holds the evidence
    return "correct"


def retrieval_labels(questions: Sequence[Question], grades: Sequence[Graded], k: int, *,
                     attribute_chunking: bool = True) -> list[str | None]:
    """Each question's label after retrieval (:func:`retrieval_label`); ``unjudged`` for an
    answerable question with evidence but none at the relevance level. ``attribute_chunking=False``
    (the passages are not a chunking of the whole corpus) never says ``chunking``."""
    return ["unjudged" if q.answerable and (q.evidence or q.lost) and not g.judged else
            "parsing" if q.answerable and q.lost and not q.evidence else
            retrieval_label(q, g.found if attribute_chunking else np.ones_like(g.found), g.first_relevant, k)
            for q, g in zip(questions, grades)]


def evidence_coverage(q: Question, top: Sequence[Chunk | Passage], *, min_coverage: float) -> tuple[float, float]:
    """The located evidence's coverage (:func:`rag_bench.metrics.relevance.evidence_coverage`
    without the quotes the parse lost: ``parsing`` is decided on its own)."""
    return _evidence_coverage(replace(q, lost=()) if q.lost else q, top, min_coverage=min_coverage)


def parsing_label(label: str | None, q: Question) -> str | None:
    """``parsing`` for a question that lost a quote to the parse and whose located evidence went as
    far as it could (``in_context``: module docstring); every other label unchanged."""
    return "parsing" if label == "in_context" and q.answerable and q.lost else label


def older_versions(documents: Mapping[str, Document]) -> dict[str, frozenset[str]]:
    """Per document id, the ids of its older versions: documents of the same tenant and title (case
    and spacing aside) that are archived, or effective earlier (``effective_at``, ISO dates compare
    as text), while it is not archived. Documents with no title, or a title no other shares, have
    none (left out of the mapping).

    >>> docs = {"p": Document("p", "", title="Returns", effective_at="2024-03-01"),
    ...         "p23": Document("p23", "", title="returns ", status="archived"),
    ...         "q": Document("q", "", title="Other")}
    >>> older_versions(docs)
    {'p': frozenset({'p23'})}
    """
    families: dict[tuple[str | None, str], list[Document]] = {}
    for d in documents.values():
        title = " ".join(d.title.split()).casefold()
        if title:
            families.setdefault((d.tenant, title), []).append(d)
    out: dict[str, frozenset[str]] = {}
    for family in families.values():
        if len(family) < 2:
            continue
        for d in family:
            if d.archived:
                continue
            older = frozenset(o.doc_id for o in family if o.doc_id != d.doc_id and (
                o.archived or (o.effective_at is not None and d.effective_at is not None
                               and o.effective_at < d.effective_at)))
            if older:
                out[d.doc_id] = older
    return out


def _inside(chunk: Chunk, passages: Sequence[Passage]) -> bool:
    """Whether ``chunk``'s text is in one of ``passages`` (itself, or a parent or longer span of its document)."""
    return any(p.doc_id == chunk.doc_id and p.start <= chunk.start and chunk.end <= p.end for p in passages)


@dataclass(frozen=True)
class CellView:
    """What :func:`lost_before_generation` reads of a cell: the passages the rankings index, the
    corpus' :func:`older_versions`, ``pipeline.k``, the relevance level (``eval.relevance_level``)
    and the evidence kernel's ``eval.min_coverage``."""

    passages: Sequence[Chunk]
    versions: Mapping[str, frozenset[str]]
    k: int
    level: int = 1
    min_coverage: float = 0.5


def lost_before_generation(label: str | None, qr: QuestionRun, graded: Graded, cell: CellView) -> str | None:
    """The retrieval ``label`` (:func:`retrieval_label`) refined by what else lost the question
    before the generator (module docstring): ``unauthorized``, ``stale_version``,
    ``partial_evidence``, ``context``; every other label (and None: unanswerable) unchanged."""
    if label not in ("retrieval_miss", "ranking", "in_context"):
        return label
    q, passages, k, min_coverage = qr.question, cell.passages, cell.k, cell.min_coverage
    versions = cell.versions
    if label == "retrieval_miss" and qr.dropped_by_retriever + qr.dropped_by_reranker > 0:
        return "unauthorized"
    top = [passages[j] for j in qr.ranked.indices[:k]]
    seen: Sequence[Chunk | Passage] = qr.context if qr.context is not None else top
    if versions:
        present = {p.doc_id for p in seen}
        for doc_id in dict.fromkeys(ev.doc_id for ev in q.evidence):
            if doc_id not in present and versions.get(doc_id, frozenset()) & present:
                return "stale_version"
    if label != "in_context" and query_lost(qr, graded, k, cell.level):
        return "query"
    if label != "in_context":
        return label
    recall, _ = evidence_coverage(q, top, min_coverage=min_coverage)
    if 0 < recall < 1:
        return "partial_evidence"
    if qr.context is not None:
        relevant = [passages[j] for j in qr.ranked.indices[:k] if graded.qrels.get(j, 0) >= cell.level]
        in_context, _ = evidence_coverage(q, qr.context, min_coverage=min_coverage)
        if in_context < recall or (relevant and not any(_inside(c, qr.context) for c in relevant)):
            return "context"
    return label


def tally(labels: Sequence[str | None], *, answered: bool, transformed: bool = False) -> dict[str, int]:
    """metrics.json ``failures``: questions per label, every label of the cell's kind (a
    retrieval-only cell's retrieval labels, else every label; ``query`` only in a cell with a
    query transform) in attribution order, zeros included."""
    return {label: sum(x == label for x in labels) for label in _names(answered, transformed)}


def _names(answered: bool, transformed: bool) -> tuple[str, ...]:
    names = GENERATION_CELL_LABELS if answered else RETRIEVAL_LABELS
    return names if transformed else tuple(n for n in names if n not in OPTIONAL_LABELS)


class Attribution:
    """The scorer of each question's failure label and the ``failures`` tallies."""

    name = "attribution"
    requires: tuple[str, ...] = ()  # what every run has: its rankings and questions

    def measures(self, run: SystemRun, settings: Settings) -> list[Measure]:
        """One tally per label of the cell's kind."""
        names = _names(run.answered, transformed(run))
        return [f for f in FAILURES if f.family in names]

    def score(self, scoring: ScoringInput) -> list[Part]:
        """Per question, the first stage that lost it; the tallies."""
        run = scoring.run
        questions = [q.question for q in run.questions]
        graded = scoring.grades.questions
        labels = retrieval_labels(questions, graded, scoring.settings.k, attribute_chunking=run.attribute_chunking)
        s = scoring.settings
        cell = CellView(run.passages, scoring.shared(f"{self.name}:versions", (), lambda: older_versions(run.corpus)), s.k,
                    s.relevance_level, s.min_coverage)
        labels = [parsing_label(lost_before_generation(label, qr, g, cell), qr.question)
                  for label, qr, g in zip(labels, run.questions, graded)]
        if run.answered:
            correct, precision = scoring.column(CORRECT.column), scoring.column(PRECISION.column)
            labels = [final_label(q.question.answerable, label, q.answer, _correct(q, correct[i]),  # type: ignore[arg-type]
                                  precision[i], clarify=q.question.outcome == "clarify")
                      for i, (q, label) in enumerate(zip(run.questions, labels))]
        counts = tally(labels, answered=run.answered, transformed=transformed(run))
        return [Part("label", {COLUMN: labels}, values={f"{SECTION}/{label}": n for label, n in counts.items()})]


def _correct(qr: QuestionRun, correct: float) -> float:
    """What :func:`final_label` reads as right: for a question expecting a clarifying question,
    whether the answer asked for every missing fact (``generation/correct`` leaves it out); else
    ``generation/correct``."""
    q, a = qr.question, qr.answer
    if q.outcome != "clarify" or a is None:
        return correct
    return float(clarified_run(qr))


SCORER = Attribution()
