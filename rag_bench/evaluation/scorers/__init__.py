"""Scorers: each module owns its measures and computes their per-question columns from a run,
the dataset and the judgments. Ranking scorers own a ranking unit (:mod:`.chunk_ranking`,
:mod:`.document_ranking`); any other module here that defines ``SCORER`` (a :class:`Scorer`) is
found by :func:`discovered` and run by every evaluation: a new measure is one new file."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Sequence
from functools import lru_cache
from typing import Any, Protocol

from rag_bench.metrics.measures import Measure


class Scorer(Protocol):
    """A scorer run on every cell: its measures and, per question, their values (NaN where a
    measure is undefined for the question)."""

    def measures(self, *, ks: Sequence[int], k: int) -> list[Measure]:
        """The measures this scorer reports for a cell with cutoffs ``ks`` and ``k`` passages."""
        ...

    def columns(self, frame: Any, *, ks: Sequence[int], k: int) -> dict[str, list[float]]:
        """Per-question columns (one per measure, named by the measure's column) from the cell's
        records so far (one row per question: the ranking's relevance, the context, the answer)."""
        ...


@lru_cache(maxsize=1)  # one entry: the package's modules do not change during a process
def discovered() -> tuple[Scorer, ...]:
    """Every ``SCORER`` defined by a module of this package, in module-name order."""
    found = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        if hasattr(module, "SCORER"):
            found.append(module.SCORER)
    return tuple(found)
