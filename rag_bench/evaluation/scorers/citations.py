"""Citations (metrics.json ``citation``): do the passages an answer cites hold what it needs.

``citation_precision`` is the share of cited passages relevant to the question's evidence (the
passage-relevance overlap rule, ``eval.min_coverage``), NaN when nothing is cited;
``citation_recall`` the share of evidence spans the cited passages cover (answerable questions that
want a direct answer: a clarifying question back cites nothing, rightly);
``invalid_citations`` citation numbers outside the context.
"""

from __future__ import annotations

import numpy as np

from rag_bench.evaluation.run import SystemRun
from rag_bench.evaluation.scorer import Measure, Part, ScoringInput, Settings
from rag_bench.evaluation.scorers.generation import undefined_warning
from rag_bench.metrics.generation import citation_precision, citation_recall

CITATION = (
    Measure("citation_precision", "citation",
            description="cited passages that are relevant / cited passages", short="cite_p", params=("eval.min_coverage",)),
    Measure("citation_recall", "citation",
            description="evidence spans covered by cited passages / evidence spans", short="cite_r", params=("eval.min_coverage",)),
    Measure("invalid_citations", "citation",
            description="citation numbers outside the context", higher_is_better=False),
)
PRECISION, RECALL, INVALID = CITATION


class Citations:
    """The scorer of :data:`CITATION` (cells whose system answered)."""

    name = "citation"
    requires: tuple[str, ...] = ("answers",)  # the evaluation runs it only on a run that has it

    def measures(self, run: SystemRun, settings: Settings) -> list[Measure]:
        """The citation measures when the run answered."""
        return list(CITATION)

    def score(self, scoring: ScoringInput) -> list[Part]:
        """Per question: citation precision, recall and invalid citations (NaN for a failed call)."""
        run, cover = scoring.run, scoring.settings.min_coverage
        columns: dict[str, list[float]] = {m.column: [] for m in CITATION}
        for qr in run.questions:
            q, a, passages = qr.question, qr.answer, qr.context or ()
            assert a is not None
            ok = a.error is None
            columns[PRECISION.column].append(citation_precision(a, passages, q.evidence, min_coverage=cover)
                                             if ok else np.nan)
            columns[RECALL.column].append(citation_recall(a, passages, q.evidence, min_coverage=cover)
                                          if ok and q.wants_answer else np.nan)
            columns[INVALID.column].append(float(a.invalid_citations) if ok else np.nan)
        return [Part("citation", columns, warnings=undefined_warning(PRECISION, columns[PRECISION.column]))]


SCORER = Citations()
