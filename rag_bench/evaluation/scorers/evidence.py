"""Evidence (metrics.json ``evidence``): how much of a question's evidence the top k chunks cover,
at each of ``eval.ks`` and at ``pipeline.k`` (the passages handed to the generator).

``evidence_recall@k`` is the share of the question's evidence spans covered by the union of the
top k chunks (each span by at least ``eval.min_coverage``); ``complete@k`` is 1 when every span is
covered (multi-hop questions need them all). Both are defined for every question with evidence.
"""

from __future__ import annotations

from collections.abc import Sequence

from rag_bench.metrics import measures
from rag_bench.metrics.measures import Measure
from rag_bench.metrics.relevance import evidence_coverage
from rag_bench.records import Chunk, Question

RECALL, COMPLETE = measures.EVIDENCE
SECTION = RECALL.section


def cutoffs(ks: Sequence[int], k: int) -> list[int]:
    """The cutoffs the section reports: ``eval.ks`` and ``pipeline.k``, ascending, once each."""
    return sorted(set(ks) | {k})


def evidence_measures(cuts: Sequence[int]) -> list[Measure]:
    """The section's measures at ``cuts``, cutoff-major (the records' column order:
    ``evidence_recall@1, complete@1, evidence_recall@3, ...``)."""
    return [m.at(kk) for kk in cuts for m in (RECALL, COMPLETE)]


def section_measures(cuts: Sequence[int]) -> list[Measure]:
    """The section's measures at ``cuts`` in metrics.json order (family-major)."""
    return measures.at(measures.EVIDENCE, cuts)


def columns(q: Question, top: Sequence[Chunk], cuts: Sequence[int], *, min_coverage: float) -> dict[str, float]:
    """One question's evidence measures at each cutoff of ``cuts``, by their columns (cutoff-major)."""
    out: dict[str, float] = {}
    for kk in cuts:
        out[RECALL.at(kk).column], out[COMPLETE.at(kk).column] = evidence_coverage(q, top[:kk],
                                                                                  min_coverage=min_coverage)
    return out
