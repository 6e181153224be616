"""Evidence (metrics.json ``evidence``): how much of a question's evidence the top k passages cover,
at each of ``eval.ks`` and at ``pipeline.k`` (the passages handed to the generator).

``evidence_recall@k`` is the share of the question's evidence spans covered by the union of the
top k passages (each span by at least ``eval.min_coverage`` of its characters); ``complete@k`` is 1
when every span is (multi-hop questions need them all). Both are defined for every question with
evidence, and depend on the passages' spans only: any chunking, any system, compared alike.
``context_complete`` is ``complete`` over the passages the generator was handed (cells that answered).
"""

from __future__ import annotations

from collections.abc import Sequence

from rag_bench.evaluation.run import SystemRun
from rag_bench.evaluation.scorer import Measure, Part, ScoringInput, Settings
from rag_bench.metrics.relevance import evidence_coverage

EVIDENCE = (
    Measure("evidence_recall", "evidence",
            description="evidence spans covered by the union of the top k chunks", cut="required", params=("eval.min_coverage",)),
    Measure("complete", "evidence",
            description="all evidence spans covered by the top k chunks (multi-hop)", cut="required", params=("eval.min_coverage",)),
)
RECALL, COMPLETE = EVIDENCE
# What the generator was handed, whatever cut it (pipeline.k, the token budget, parents expanded): the
# measure experiment.primary=auto ranks by when the generator is a stand-in for a model -- its answers
# would rank the stand-in's quirks, this only the configuration's.
CONTEXT_COMPLETE = Measure(
    "context_complete", "evidence",
    description="all evidence spans covered by the passages handed to the generator (the context: pipeline.k, "
    "the token budget, parents expanded)", params=("eval.min_coverage",), short="ctx_complete")


def cutoffs(ks: Sequence[int], k: int) -> list[int]:
    """The cutoffs the section reports: ``eval.ks`` and ``pipeline.k``, ascending, once each."""
    return sorted(set(ks) | {k})


class Evidence:
    """The scorer of :data:`EVIDENCE` at ``eval.ks`` and ``pipeline.k``."""

    name = "evidence"
    requires: tuple[str, ...] = ()  # what every run has: its rankings and questions

    def measures(self, run: SystemRun, settings: Settings) -> list[Measure]:
        """Evidence recall and completeness at each cutoff (family-major, metrics.json's order), and
        in the context when the run answered."""
        return [f.at(k) for f in EVIDENCE for k in cutoffs(settings.ks, settings.k)] + (
            [CONTEXT_COMPLETE] if run.answered else [])

    def score(self, scoring: ScoringInput) -> list[Part]:
        """Per question, both measures at each cutoff (cutoff-major: ``evidence_recall@1, complete@1, ...``);
        the cutoffs of ``eval.ks`` once per final rankings, ``pipeline.k`` per cell when it is not one of them."""
        run, s = scoring.run, scoring.settings
        ks = sorted(set(s.ks))
        columns = dict(scoring.shared(self.name, (ks,), lambda: _columns(run, ks, s.min_coverage)))
        if s.k not in ks:
            extra = _columns(run, [s.k], s.min_coverage)
            order = [f.at(k).column for k in cutoffs(ks, s.k) for f in EVIDENCE]
            columns = {name: (columns | extra)[name] for name in order}
        if run.answered:  # per cell: the context depends on k and the budget, not only the ranking
            columns = {**columns, CONTEXT_COMPLETE.column: [
                evidence_coverage(qr.question, qr.context or (), min_coverage=s.min_coverage)[1]
                for qr in run.questions]}
        return [Part("evidence", columns)]


def _columns(run: SystemRun, cuts: Sequence[int], min_coverage: float) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {f.at(k).column: [] for k in cuts for f in EVIDENCE}
    for qr in run.questions:
        top = [run.passages[j] for j in qr.ranked.indices]
        for k in cuts:
            recall, complete = evidence_coverage(qr.question, top[:k], min_coverage=min_coverage)
            out[RECALL.at(k).column].append(recall)
            out[COMPLETE.at(k).column].append(complete)
    return out


SCORER = Evidence()
