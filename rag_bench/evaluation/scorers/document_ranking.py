"""Document ranking (metrics.json ``document``, ``eval.unit=document|both``): the final ranking of
passages as a ranking of documents -- each document at the rank of its first (best) passage, with
that passage's score -- scored against document grades (a document's grade is the highest grade of
its evidence spans, the quotes the cell's parser lost included), comparable with published BEIR figures; ``run.document.trec`` and
``qrels.document.trec``, on which ``trec_eval`` gives the section's numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from rag_bench.domain import Chunk
from rag_bench.evaluation.run import SystemRun
from rag_bench.evaluation.scorer import Measure, Part, ScoringInput, Settings, figures
from rag_bench.evaluation.scorers.chunk_ranking import RANKING, answerable, ranking_columns, ranking_measures

# The chunk families over documents: graded by the evidence documents (neither eval.relevance nor
# eval.min_coverage plays a part), documents' columns prefixed.
DOCUMENT = tuple(replace(f, section="document", prefix="doc_", description=f"{f.description} (documents)",
                         params=tuple(p for p in f.params if p not in ("eval.relevance", "eval.min_coverage",
                                                                          "unit=chunk")) + ("unit=document",))
                 for f in RANKING)
DOC_HIT, DOC_PRECISION, DOC_RECALL, DOC_MRR, DOC_NDCG, DOC_MAP = DOCUMENT
COUNTS = figures("counts", (
    ("evaluated_documents", None, "answerable questions with a relevant document: the document measures' "
     "denominator"),
    ("excluded_no_relevant_document", None, "answerable questions with no relevant document in the dataset"),
))
EVALUATED, EXCLUDED = COUNTS


def document_ranking(ranked: Sequence[Chunk], scores: Sequence[float]) -> tuple[list[str], list[float]]:
    """The passage ranking as a document ranking: each document at the rank of its first (best)
    passage, with that passage's score (max score per document, first occurrence order).

    >>> c = [Chunk(f"{d}#{i}", d, 0, 1, "x") for i, d in enumerate("abab")]
    >>> document_ranking(c, [4.0, 3.0, 2.0, 1.0])
    (['a', 'b'], [4.0, 3.0])
    """
    seen: dict[str, float] = {}
    for c, sc in zip(ranked, scores):
        seen.setdefault(c.doc_id, float(sc))
    return list(seen), list(seen.values())


class DocumentRanking:
    """The scorer of :data:`DOCUMENT`: the document ranking of each question, its measures and files."""

    name = "document"
    requires: tuple[str, ...] = ("unit=document",)  # the evaluation runs it only on a run that has it

    def measures(self, run: SystemRun, settings: Settings) -> list[Measure]:
        """The document measures at ``eval.ks`` and their denominators (when documents are reported)."""
        return [*ranking_measures(sorted(set(settings.ks)), DOCUMENT), *COUNTS]

    def score(self, scoring: ScoringInput) -> list[Part]:
        """Each question's documents and scores, the measures' columns, the counts and the two files."""
        doc_ids, doc_scores, measures, values, lines, rel = scoring.shared(
            self.name, (sorted(set(scoring.settings.ks)), scoring.settings.gain), lambda: _documents(scoring))
        warnings: tuple[str, ...] = ()
        ndcg = DOC_NDCG.at(10)
        if ndcg.column in measures and np.isnan(measures[ndcg.column]).all():
            warnings = (f"{ndcg.key} is averaged over 0 questions: no answerable question has a relevant document "
                        "-- check the evidence and eval.min_coverage",)
        end = f" {scoring.cell_id}\n"
        return [Part("document", {"doc_ids": doc_ids, "doc_scores": doc_scores}),
                Part("document_measures", measures, warnings=warnings, values=values,
                     files={"run.document.trec": end.join(lines) + end if lines else "", "qrels.document.trec": rel})]


def _documents(scoring: ScoringInput) -> tuple[list[list[str]], list[list[float]], dict[str, np.ndarray],
                                          dict[str, int], list[str], str]:
    """Each question's document ranking and its measures, the counts, run.document.trec's lines
    (untagged) and qrels.document.trec: what cells sharing the final rankings share."""
    run, settings = scoring.run, scoring.settings
    doc_ids, doc_scores, levels, n_relevant, ideals, qrels = [], [], [], [], [], []
    for qr in run.questions:
        grade: dict[str, int] = {}
        # A quote the parse lost still makes its document relevant: the parsed document can be
        # retrieved (one that failed to parse cannot, and counts as missed).
        gold = [(s.doc_id, s.grade) for s in qr.question.evidence]
        gold += [(x.doc_id, x.grade) for x in qr.question.lost] if qr.question.answerable else []
        for doc_id, g in gold:
            grade[doc_id] = max(grade.get(doc_id, 0), g)
        ids, scores = document_ranking([run.passages[j] for j in qr.ranked.indices], qr.ranked.scores)
        doc_ids.append(ids)
        doc_scores.append(scores)
        levels.append([grade.get(d, 0) for d in ids])
        n_relevant.append(sum(g >= settings.relevance_level for g in grade.values()))
        ideals.append([g for g in grade.values() if g > 0])
        qrels.append(grade)
    ok = answerable(run)
    measures = ranking_columns(levels, n_relevant, ideals, ok, settings, DOCUMENT)
    first = DOC_HIT.at(sorted(set(settings.ks))[0]).column
    evaluated = int(np.sum(ok & ~np.isnan(measures[first])))
    lines = [f"{qr.qid} Q0 {d} {rank} {score!r}" for i, qr in enumerate(run.questions)
             for rank, (d, score) in enumerate(zip(doc_ids[i], doc_scores[i]), start=1)]
    rel = [f"{qr.qid} 0 {d} {g}" for i, qr in enumerate(run.questions) for d, g in sorted(qrels[i].items())]
    return (doc_ids, doc_scores, measures, {EVALUATED.key: evaluated, EXCLUDED.key: int(ok.sum()) - evaluated},
            lines, "\n".join(rel) + ("\n" if rel else ""))


SCORER = DocumentRanking()
