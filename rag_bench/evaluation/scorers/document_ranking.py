"""Document ranking (eval.unit=document|both): each document at the rank of its best chunk, scored
against document grades (metrics.json ``document``, columns ``doc_*``), comparable with published
BEIR figures; run.document.trec and qrels.document.trec reproduce it with trec_eval."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from rag_bench.evaluation.results import Judgment, Qrels
from rag_bench.metrics import measures
from rag_bench.metrics.measures import Measure
from rag_bench.records import Chunk, Question


def document_ranking(ranked: Sequence[Chunk], scores: Sequence[float]) -> tuple[list[str], list[float]]:
    """The chunk ranking as a document ranking: each document at the rank of its first (best)
    chunk, with that chunk's score (max score per document, first occurrence order).

    >>> c = [Chunk(f"{d}#{i}", d, 0, 1, "x") for i, d in enumerate("abab")]
    >>> document_ranking(c, [4.0, 3.0, 2.0, 1.0])
    (['a', 'b'], [4.0, 3.0])
    """
    seen: dict[str, float] = {}
    for c, sc in zip(ranked, scores):
        seen.setdefault(c.doc_id, float(sc))
    return list(seen), list(seen.values())


@dataclass(frozen=True)
class DocumentRanking:
    """The document unit: a document's grade is the highest grade of its evidence spans."""

    name: str = "document"
    section: str = "document"
    prefix: str = "doc_"
    families: tuple[Measure, ...] = measures.DOCUMENT
    qrels_field: str = "documents"

    def judge(self, q: Question, top: Sequence[Chunk], scores: Sequence[float], chunk: Judgment,
              relevance_level: int) -> Judgment:
        """The document ranking of ``top`` judged by the question's evidence documents."""
        doc_grade: dict[str, int] = {}
        for span in q.evidence:
            doc_grade[span.doc_id] = max(doc_grade.get(span.doc_id, 0), span.grade)
        doc_ids, doc_scores = document_ranking(top, scores)
        return Judgment([doc_grade.get(d, 0) for d in doc_ids],
                        sum(g >= relevance_level for g in doc_grade.values()),
                        [g for g in doc_grade.values() if g > 0], {"doc_ids": doc_ids, "doc_scores": doc_scores},
                        doc_grade)

    def counts(self, frame: pd.DataFrame, answerable: np.ndarray, ks: Sequence[int]) -> dict[str, int]:
        """Answerable questions with a relevant document (the document measures' denominator) and without."""
        doc_eval = int(np.sum(answerable & frame[self.families[0].at(ks[0]).column].notna().to_numpy()))
        return {"evaluated_documents": doc_eval, "excluded_no_relevant_document": int(answerable.sum()) - doc_eval}

    def trec_files(self, frame: pd.DataFrame, questions: Sequence[Question], qrels: Qrels, tag: str) -> dict[str, str]:
        """``run.document.trec`` (each question's document ranking: a document at its best chunk's
        rank and score) and ``qrels.document.trec`` (document grades): trec_eval on these two files
        gives the cell's ``document`` section."""
        run = [f"{qid} Q0 {d} {rank} {score!r} {tag}" for qid, ids, scores in
               zip(frame["qid"], frame["doc_ids"], frame["doc_scores"]) for rank, (d, score) in
               enumerate(zip(ids, scores), start=1)]
        rel = [f"{questions[i].qid} 0 {d} {g}" for i, docs in qrels.documents.items() for d, g in sorted(docs.items())]
        return {"run.document.trec": "\n".join(run) + ("\n" if run else ""),
                "qrels.document.trec": "\n".join(rel) + ("\n" if rel else "")}


DOCUMENT = DocumentRanking()
