"""The seam between the sweeper and the ways of searching a grid (docs/search.md).

A search strategy is a component: a class whose constructor's parameters are its settings, that
says what it computes at most (:meth:`Strategy.bound`, for ``--plan``) and runs the search
(:meth:`Strategy.run`) through a :class:`SearchContext` -- the grid, a launcher of batches of its
jobs and where the summary goes -- which the Hydra sweeper hands it (never the sweeper itself).
:data:`STRATEGIES` names them; one lookup replaces every switch on the mode's name, so a new mode
is its module and its entry here.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol

from omegaconf import DictConfig

from rag_bench.domain import Question
from rag_bench.errors import ConfigError
from rag_bench.registry import Registry
from rag_bench.search.grid import Grid
from rag_bench.search.halving import Halving
from rag_bench.search.optuna_search import Optuna
from rag_bench.search.staged import Staged

Launch = Callable[[list[list[str]]], list[Path]]  # a batch of the grid's jobs -> each job's cell folder


@dataclass(frozen=True)
class SearchContext:
    """What a strategy is handed by the sweeper: the ``grid`` (every job's overrides, in the
    sweeper's stage order), ``launch`` (a batch of jobs run through the sweep's launcher with a
    progress bar, each cell's folder; the grid is validated and tracking prepared on the first
    call), ``sweep_grid`` (the whole grid through Hydra's basic sweep, batch by batch: the plain
    grid), ``compose`` (a job's config), the experiment's folder, the sweep's id and its config."""

    grid: list[list[str]]
    launch: Launch
    sweep_grid: Callable[[], Any]
    compose: Callable[[Sequence[str]], DictConfig]
    experiment_dir: Path
    sweep_id: str
    config: DictConfig

    @property
    def summary_path(self) -> Path:
        """Where the search's summary is kept (``<experiment>/.hydra/search-<sweep id>.json``)."""
        return self.experiment_dir / ".hydra" / f"search-{self.sweep_id}.json"


class Strategy(Protocol):
    """A way of searching a grid. ``budgeted``: whether the invocation's budgets
    (``search.max_llm_calls``, ``budget_s``, ``budget_usd``) can stop it between cells."""

    name: ClassVar[str]
    budgeted: ClassVar[bool]

    def check(self, ctx: SearchContext) -> None:
        """Refuse settings that cannot work on this grid before anything is launched."""

    def bound(self, grid: Sequence[Sequence[str]], questions: int, dataset: Sequence[Question]) -> list[str]:
        """What the search computes at most: lines for ``--plan`` against the ``grid``'s jobs on
        ``questions`` questions (``dataset``: the questions of the grid's dataset)."""

    def run(self, ctx: SearchContext) -> None:
        """Search the grid of ``ctx``, launching its jobs through ``ctx``; print and keep a summary."""


STRATEGIES: Registry[type[Any]] = Registry("search.mode", {s.name: s for s in (Grid, Halving, Staged, Optuna)})


def strategy(search: Any) -> Strategy:
    """The strategy a ``search`` config node names (``mode``), built from the node's keys its
    constructor takes; ConfigError for an unknown mode."""
    node = search if search is not None else {}
    mode = node.get("mode", "grid")
    if str(mode) not in STRATEGIES:  # the message users know: the modes, joined
        raise ConfigError(f"search.mode={str(mode)!r}: unknown -- fix: search.mode={'|'.join(STRATEGIES.names())}")
    cls = STRATEGIES.get(str(mode))
    settings = {p: node.get(p) for p in inspect.signature(cls).parameters if p in node}
    return cls(**settings)  # type: ignore[no-any-return]
