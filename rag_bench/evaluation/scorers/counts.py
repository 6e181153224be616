"""Counts (metrics.json ``counts``): the sizes of what was evaluated -- documents, chunks,
questions, the ranking measures' denominator -- and what the system's run counted (generator calls
and failures, an external system's passages that could not be located). Figures, not measures: no
per-question column, no CI, never a headline; each declares its direction so a gate rule on it
knows what "worse" is (a count of something that went wrong is lower-is-better; a size is
descriptive)."""

from __future__ import annotations

from typing import Any

from rag_bench.evaluation.run import SystemRun
from rag_bench.evaluation.scorer import Measure, Part, ScoringInput, Settings, figures

DATA = figures("counts", (
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
    ("depth", None, "retrieval depth D"),
    ("k", None, "passages handed to the generator"),
))
GENERATION = figures("counts", (
    ("endpoint_calls", False, "generator endpoint calls (a cost)"),
    ("endpoint_failures", False, "generator endpoint calls that failed"),
    ("unparseable", False, "generator outputs that broke the JSON answer contract"),
    ("retries", False, "generator endpoint calls retried"),
))
SYSTEM = figures("counts", (
    ("unlocated_passages", False, "an external system's passages that no document holds"),
    ("passages_located_by_text", None, "an external system's passages located by their text (no offsets given)"),
    ("passages_not_in_claimed_doc", False, "an external system's passages whose text is not in the document they "
     "name"),
    ("duplicate_passages", False, "an external system's passages given twice for one question"),
))
(DOCUMENTS, CHUNKS, SEARCHABLE, QUESTIONS, ANSWERABLE, UNANSWERABLE, EVALUATED, EXCLUDED_NO_CHUNK, EXCLUDED_NO_RELEVANT,
 DEPTH, K) = DATA
ENDPOINT_CALLS, ENDPOINT_FAILURES, UNPARSEABLE, RETRIES = GENERATION


class Counts:
    """The scorer of the ``counts`` figures (the judge's and the document unit's are theirs)."""

    name = "counts"
    requires: tuple[str, ...] = ()  # what every run has: its rankings and questions

    def measures(self, run: SystemRun, settings: Settings) -> list[Measure]:
        """The data's sizes; the generator's calls when it answered; the system's own counts."""
        own = {f"counts/{name}" for name in run.counts}
        return [*DATA, *(GENERATION if run.answered else ()), *(f for f in SYSTEM if f.key in own)]

    def score(self, scoring: ScoringInput) -> list[Part]:
        """Every count of the run."""
        run = scoring.run
        questions = [q.question for q in run.questions]
        answerable = sum(q.answerable for q in questions)
        evaluated = sum(q.question.answerable and g.n_relevant > 0
                        for q, g in zip(run.questions, scoring.grades.questions))
        values: dict[str, Any] = {
            DOCUMENTS.key: len(run.dataset.documents),
            CHUNKS.key: run.chunks if run.chunks is not None else len(run.passages),
            SEARCHABLE.key: len(run.passages), QUESTIONS.key: len(run.dataset.questions),
            ANSWERABLE.key: answerable, UNANSWERABLE.key: len(questions) - answerable, EVALUATED.key: evaluated,
            EXCLUDED_NO_CHUNK.key: answerable - evaluated,
            # Answerable questions with no relevant evidence at all (a BEIR query judged only with grade 0).
            EXCLUDED_NO_RELEVANT.key: sum(q.answerable and not q.evidence for q in run.dataset.questions),
            DEPTH.key: run.depth, K.key: scoring.settings.k,
        }
        if run.answered:
            gens = [q.generation for q in run.questions if q.generation is not None]
            calls = [g for g in gens if not g.cached and g.attempts > 0]  # real model/endpoint calls
            values.update({ENDPOINT_CALLS.key: len(calls), ENDPOINT_FAILURES.key: sum(g.error is not None for g in calls),
                           UNPARSEABLE.key: sum(q.answer is not None and q.answer.parse_error is not None
                                                for q in run.questions),
                           RETRIES.key: sum(max(0, g.attempts - 1) for g in calls)})
        values.update({f"counts/{name}": n for name, n in run.counts.items()})
        return [Part("counts", values=values)]


SCORER = Counts()
