"""The measures the report's views can be drawn on: the primary measure, end-to-end correctness,
nDCG@10, query latency and generator tokens.

Each :class:`View` says which stage its number comes from (``acts_on``, a ``section/name`` that
:func:`rag_bench.reporting.effects.can_move` reads), so an axis is only shown against the
measures it can change: ``pipeline.k`` picks the passages handed to the generator after the
ranking, so it has a main effect on ``correct`` and on tokens, none on nDCG@10 or on the
retrieval latency.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rag_bench.cells import Cell
from rag_bench.evaluation import measures
from rag_bench.reporting import decide


@dataclass(frozen=True)
class View:
    """A number per cell a view can show: its key (in the page's URL), its title, the stage it
    measures (``acts_on``), its direction and how to read it from a cell."""

    key: str
    title: str
    acts_on: str
    higher_is_better: bool
    of: Callable[[Cell], float | None]


LATENCY = View("latency", "retrieval + rerank p50 (ms per question)", "retrieval/latency", False,
               lambda c: decide.latency_ms(c.metrics))
TOKENS = View("tokens", "generator tokens per question", "generation/tokens", False, decide.tokens)


def measure_view(key: str) -> View:
    """The view of a registered measure (``retrieval/ndcg@10``)."""
    return View(key, key, key, measures.higher_is_better(key), lambda c: c.metric(key))


def views(cells: Sequence[Cell], primary: str) -> list[View]:
    """The views with a value in at least one cell: the primary measure first, then correct,
    nDCG@10, latency and tokens (each once)."""
    out: list[View] = []
    for v in (measure_view(primary), measure_view(measures.CORRECT.key),
              measure_view(measures.PRIMARY.key), LATENCY, TOKENS):
        if v.key not in {x.key for x in out} and any(v.of(c) is not None for c in cells):
            out.append(v)
    return out
