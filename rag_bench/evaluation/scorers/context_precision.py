"""context_precision@k: the share of the k passages handed to the generator that are relevant.

The k passages are the top k of the cell's final ranking (``pipeline.k``; fewer when the ranking
is shorter), relevant by the chunk judgments at the relevance level (records.parquet
``relevant``). Defined for the questions the ranking measures are defined for (answerable, with a
relevant chunk); metrics.json section ``context``. A cell that retrieves only reports it too: the
passages its ranking would hand over.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rag_bench.metrics import measures
from rag_bench.metrics.measures import Measure

(CONTEXT_PRECISION,) = measures.register(Measure(
    "context_precision", "context", True, "mean", "required", None,
    "relevant passages among the k handed to the generator / those passages", "ctx_p"))


class ContextPrecision:
    """The scorer of :data:`CONTEXT_PRECISION` at the cell's ``k``."""

    def measures(self, *, ks: Sequence[int], k: int) -> list[Measure]:
        """context_precision at ``k``."""
        return [CONTEXT_PRECISION.at(k)]

    def columns(self, frame: Any, *, ks: Sequence[int], k: int) -> dict[str, list[float]]:
        """Per question: relevant passages among the top ``k`` / passages in the top ``k``."""
        values = []
        for relevant, answerable, n in zip(frame["relevant"], frame["answerable"], frame["n_relevant"]):
            top = list(relevant)[:k]
            values.append(sum(bool(r) for r in top) / len(top) if answerable and n > 0 and top else float("nan"))
        return {CONTEXT_PRECISION.at(k).column: values}


SCORER = ContextPrecision()
