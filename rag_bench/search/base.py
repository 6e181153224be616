"""The seam between the sweeper and the ways of searching a grid (docs/search.md).

A search strategy is a component: a class whose constructor's parameters are its settings, that
says what it computes at most (:meth:`Strategy.bound`, for ``--plan``) and runs the search
(:meth:`Strategy.run`) through a :class:`SearchContext` -- the grid, a launcher of batches of its
jobs and where the summary goes -- which the Hydra sweeper hands it (never the sweeper itself).
Each mode is an option of the ``search`` config group (``conf/search/<mode>.yaml``: its ``_target_``
and settings), built as a component is (:func:`strategy`): no switch on the mode's name anywhere, so
a new mode is its module and its yaml.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol

from omegaconf import DictConfig

from rag_bench.domain import Question
from rag_bench.errors import ConfigError
from rag_bench.runner.config import build

Launch = Callable[[list[list[str]]], list[Path]]  # a batch of the grid's jobs -> each job's cell folder
# How one job runs its cell: its config, the sweep's shared work and context -> the cell's folder
# (the runner's run_cell, or a strategy's own route for its jobs: a strategy's optional ``cell``)
Route = Callable[[DictConfig, Any, Any], Path]


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
    (``search.max_llm_calls``, ``budget_s``, ``budget_usd``) can stop it between cells. A strategy
    whose jobs run their cells their own way also has ``cell(plain: Route) -> Route`` (halving's
    rounds: :mod:`rag_bench.search.round_cells`), which the runner asks of the strategy its job's
    ``search`` node builds (:func:`rag_bench.runner.main.cell_route`)."""

    name: ClassVar[str]
    budgeted: ClassVar[bool]

    def check(self, ctx: SearchContext) -> None:
        """Refuse settings that cannot work on this grid before anything is launched."""

    def bound(self, grid: Sequence[Sequence[str]], questions: int, dataset: Sequence[Question]) -> list[str]:
        """What the search computes at most: lines for ``--plan`` against the ``grid``'s jobs on
        ``questions`` questions (``dataset``: the questions of the grid's dataset)."""

    def run(self, ctx: SearchContext) -> None:
        """Search the grid of ``ctx``, launching its jobs through ``ctx``; print and keep a summary."""


# Keys an earlier release spelled under search, accepted for one release: search.mode=X is the
# config group's option (search=X); the budgets are budget.* (what an invocation may spend is not
# how it searches).
ALIASES = {"search.mode": "search", "search.max_llm_calls": "budget.max_llm_calls",
           "search.budget_s": "budget.seconds", "search.budget_usd": "budget.usd"}


def spelled_now(args: Sequence[str]) -> tuple[list[str], list[str]]:
    """``args`` (a command's overrides) with the keys of :data:`ALIASES` spelled as they are now,
    and a note for each one rewritten.

    >>> args, notes = spelled_now(["search.mode=halving", "search.prune=rank", "+search.budget_usd=2"])
    >>> args
    ['search=halving', 'search.prune=rank', 'budget.usd=2']
    >>> notes[0]
    'search.mode=halving is spelled search=halving now (search.mode is accepted for one release)'
    """
    out, notes = [], []
    for arg in args:
        key, eq, value = arg.partition("=")
        now = ALIASES.get(key.lstrip("+"))
        if not eq or now is None:
            out.append(arg)
            continue
        out.append(f"{now}={value}")
        notes.append(f"{key.lstrip('+')}={value} is spelled {now}={value} now ({key.lstrip('+')} is accepted for one "
                     "release)")
    return out, notes


def strategy(search: Any) -> Strategy:
    """The strategy a ``search`` config node names (``_target_``, conf/search/), built from the
    node's other keys -- its constructor's parameters, each checked against the signature (a
    misspelt key is refused with the valid ones): :func:`rag_bench.runner.config.build`."""
    if not isinstance(search, DictConfig) or "_target_" not in search:
        raise ConfigError("config group 'search' is not set -- fix: add search=grid (see conf/search/)")
    return build(search, "search", protocol=Strategy)  # type: ignore[no-any-return]
