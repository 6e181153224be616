"""Security (metrics.json ``security``, sums over questions; the release policy requires the
unauthorized ones to be 0): passages in a question's final ranking the asker may not read, the
passages each stage returned that the asker may not read (dropped before anything downstream saw
them, counted by the run), and passages of archived documents."""

from __future__ import annotations

from typing import Any

import numpy as np

from rag_bench.evaluation.run import SystemRun
from rag_bench.evaluation.scorer import Measure, Part, ScoringInput, Settings

SECURITY = (
    Measure("unauthorized_retrievals", "security",
            description="retrieved chunks the asker may not read (must be 0)", higher_is_better=False, aggregate="sum"),
    Measure("unauthorized_from_retriever", "security",
            description="chunks the retriever returned that the asker may not read "
            "(dropped before the context; must be 0)", higher_is_better=False, aggregate="sum"),
    Measure("unauthorized_from_reranker", "security",
            description="chunks left by the reranking stage that the asker may not "
            "read (dropped before the context; must be 0)", higher_is_better=False, aggregate="sum"),
    Measure("stale_retrievals", "security",
            description="retrieved chunks of archived documents", higher_is_better=False, aggregate="sum"),
)
UNAUTHORIZED, FROM_RETRIEVER, FROM_RERANKER, STALE = SECURITY


class Security:
    """The scorer of :data:`SECURITY`, and the console's alarm when a stage returned what it should
    have filtered."""

    name = "security"
    requires: tuple[str, ...] = ()  # what every run has: its rankings and questions

    def measures(self, run: SystemRun, settings: Settings) -> list[Measure]:
        """Every security count, for every cell."""
        return list(SECURITY)

    def score(self, scoring: ScoringInput) -> list[Part]:
        """Per question: unreadable and archived passages in the final ranking (plus what each stage dropped)."""
        run = scoring.run
        final, stale = scoring.shared(self.name, (), lambda: _final(run))
        retriever = np.array([q.dropped_by_retriever for q in run.questions], np.int64)
        reranker = np.array([q.dropped_by_reranker for q in run.questions], np.int64)
        warnings = []
        for stage, dropped in (("retriever", retriever), ("reranker", reranker)):
            if not dropped.any():
                continue
            if run.index_name == "external":  # an application's passages: its own generator saw them
                warnings.append(f"SECURITY: the system returned {int(dropped.sum())} passage(s) the asker may not "
                                "read; their text was withheld from every file of the cell (the system's own "
                                "generator may have seen them) -- fix: the system must apply the asker's access "
                                f"rights ({UNAUTHORIZED.mlflow_key} fails the release policy)")
            else:
                warnings.append(f"SECURITY: the {stage} returned {int(dropped.sum())} chunk(s) the asker may not "
                                "read; they were dropped before the context, the generator and every file of the "
                                f"cell -- fix: the {stage} must apply the access filter it is given "
                                f"({UNAUTHORIZED.mlflow_key} fails the release policy)")
        return [Part("security", {UNAUTHORIZED.column: final + retriever + reranker, FROM_RETRIEVER.column: retriever,
                                  FROM_RERANKER.column: reranker, STALE.column: stale}, warnings=tuple(warnings))]


def _final(run: SystemRun) -> tuple[np.ndarray, np.ndarray]:
    """Per question: passages of the final ranking the asker may not read, and those of archived documents."""
    documents = run.corpus
    readable: dict[tuple[Any, str], bool] = {}  # (asker key, doc id) -> may read: one ACL check each
    unauthorized, stale = [], []
    for qr in run.questions:
        q = qr.question
        who = q.asker.key if q.asker else None
        top = [run.passages[j] for j in qr.ranked.indices]
        n = 0
        for c in top:
            may = readable.get((who, c.doc_id))
            if may is None:
                may = readable[(who, c.doc_id)] = documents[c.doc_id].readable_by(q.asker)
            n += not may
        unauthorized.append(n)
        stale.append(sum(documents[c.doc_id].archived for c in top))
    return np.array(unauthorized, np.int64), np.array(stale, np.int64)


SCORER = Security()
