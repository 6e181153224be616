"""The evaluation settings of a cell (``eval.*``, ``pipeline.k``), typed: what grading and the
scorers read, and what a measure's parameters name (:attr:`rag_bench.evaluation.scorer.Measure.params`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rag_bench.evaluation.prices import Prices


@dataclass(frozen=True)
class Settings:
    """The evaluation settings of a cell (``eval.*``, ``pipeline.k``), typed. The parameters a
    measure declares (:attr:`Measure.params`) are read from here by their config keys."""

    ks: tuple[int, ...]
    k: int
    min_coverage: float = 0.5
    relevance: str = "overlap"
    gain: str = "linear"
    relevance_level: int = 1
    unit: str = "chunk"
    answer_match: str = "auto"
    f1_threshold: float = 0.5
    n_resamples: int = 1000
    seed: int = 0
    # The price table and the stages' models (prices.*: rag_bench.evaluation.prices); None: no price
    # given. Read by the cost scorer only; no measure's number but the money depends on it.
    prices: Prices | None = None
    claims_judge: str = "lexical"  # the claims scorer's judge (eval.claims_judge): lexical | semantic

    def values(self, params: Sequence[str]) -> dict[str, Any]:
        """``{parameter: value}`` of ``params`` (config keys such as ``eval.gain``; ``name=value``
        entries are fixed by the family)."""
        out: dict[str, Any] = {}
        for p in params:
            name, fixed, value = p.partition("=")
            out[name] = value if fixed else getattr(self, name.removeprefix("eval."))
        return out
