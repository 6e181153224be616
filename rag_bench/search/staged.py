"""``search=staged`` (docs/search.md): one axis of the grid at a time, in pipeline order.

The sweep's axes (the keys with more than one value, in the sweeper's stage order: chunker, then
retriever, then reranker, then k, then generator, others after) are searched one after the other.
Stage ``s`` runs every value of axis ``s`` with the axes before it frozen at their chosen value and
the axes after it at their default -- the first value given (on the command line or in the preset).
The best of a stage by the primary measure (the verdict's ranking rule,
:func:`rag_bench.decision.decide.rank`) is frozen before the next. Every trial is one of the grid's
jobs, launched with the grid's own overrides: an ordinary cell (same id, folder, DONE, tracking),
and a re-run finds the finished ones DONE and does not recompute them.

Staged search cannot see interactions (a chunker best with k=5 may not be best with k=10): the end
prints that, and the command of the full grid of the finalists (the top values of each axis).
"""

from __future__ import annotations

import json
import shlex
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from rag_bench.cells import atomic_write
from rag_bench.search.plan import staged_bound

if TYPE_CHECKING:
    from rag_bench.domain import Question
    from rag_bench.search.base import SearchContext

Launch = Callable[[list[list[str]]], list[Path]]  # a batch of jobs -> each job's cell folder
NOT_SEARCHED = ("search.", "search=", "sweep=")  # overrides the finalists' command leaves out


@dataclass(frozen=True)
class Axis:
    """A swept key and its values, in the order given (the first is the default)."""

    key: str
    values: tuple[str, ...]


def _split(override: str) -> tuple[str, str]:
    key, _, value = override.partition("=")
    return key, value


def axes(jobs: Sequence[Sequence[str]]) -> tuple[Axis, ...]:
    """The keys of ``jobs`` (a grid, each job ``key=value`` overrides) that take more than one
    value, in the jobs' order (the sweeper's stage order), each with its values in order of first
    appearance (the order given: the grid varies the last axis fastest).

    >>> axes([["chunker=a", "pipeline.k=3"], ["chunker=a", "pipeline.k=5"], ["chunker=b", "pipeline.k=3"]])
    (Axis(key='chunker', values=('a', 'b')), Axis(key='pipeline.k', values=('3', '5')))
    """
    values: dict[str, list[str]] = {}
    for job in jobs:
        for override in job:
            key, value = _split(override)
            seen = values.setdefault(key, [])
            if value not in seen:
                seen.append(value)
    return tuple(Axis(k, tuple(v)) for k, v in values.items() if len(v) > 1)


def stage_trials(jobs: Sequence[Sequence[str]], grid_axes: Sequence[Axis], stage: int,
                 chosen: Mapping[str, str]) -> list[int]:
    """The indices of the jobs of ``stage``: every value of axis ``stage``, the axes before it at
    ``chosen``, the axes after it at their default (first value), in the order of the axis' values.

    >>> jobs = [[f"c={c}", f"k={k}"] for c in "ab" for k in "35"]
    >>> stage_trials(jobs, axes(jobs), 0, {}), stage_trials(jobs, axes(jobs), 1, {"c": "b"})
    ([0, 2], [2, 3])
    """
    frozen = {a.key: chosen[a.key] for a in grid_axes[:stage]}
    frozen.update({a.key: a.values[0] for a in grid_axes[stage + 1:]})
    axis = grid_axes[stage]
    found: dict[str, int] = {}
    for i, job in enumerate(jobs):
        settings = dict(_split(o) for o in job)
        if all(settings.get(k) == v for k, v in frozen.items()) and settings.get(axis.key) in axis.values:
            found.setdefault(settings[axis.key], i)
    return [found[v] for v in axis.values if v in found]


def finalists_command(job: Sequence[str], grid_axes: Sequence[Axis], finalists: Mapping[str, Sequence[str]]) -> str:
    """``rag-bench run -m ...``: the grid of ``finalists`` (axis key -> values), with ``job``'s
    other overrides (its ``search.*`` and sweep id left out).

    >>> finalists_command(["+experiment=demo", "chunker=a", "k=3", "search=staged"],
    ...                   axes([["chunker=a", "k=3"], ["chunker=b", "k=5"]]), {"chunker": ["b", "a"], "k": ["3"]})
    'rag-bench run -m +experiment=demo chunker=b,a k=3'
    """
    keys = {a.key for a in grid_axes}
    parts = [o for o in job if _split(o)[0] not in keys and not o.startswith(NOT_SEARCHED)]
    parts += [f"{a.key}={','.join(finalists[a.key])}" for a in grid_axes]
    return " ".join(["rag-bench", "run", "-m", *(shlex.quote(p) for p in parts)])


@dataclass(frozen=True)
class Stage:
    """One stage: its axis, each value's primary figure (in the axis' order), the values best first,
    the chosen one, and the trials computed now and found finished."""

    axis: str
    values: tuple[str, ...]
    figures: tuple[float | None, ...]
    ranked: tuple[str, ...]
    chosen: str
    computed: int
    reused: int

    def line(self, number: int) -> str:
        shown = ", ".join(f"{v} {'-' if f is None else f'{f:.4f}'}" for v, f in zip(self.values, self.figures))
        found = f", {self.reused} found done or run in an earlier stage" if self.reused else ""
        return (f"stage {number}: {self.axis} ({shown}) -> {self.chosen}; "
                f"{self.computed} cell{'' if self.computed == 1 else 's'} computed{found}")


def summary(stages: Sequence[Stage], measure: str, trials: int, computed: int, grid: int, command: str,
            top: int) -> list[str]:
    """The end-of-sweep lines: the stages, the choice per axis, the cells against the grid's, the
    limit of the method and the finalists' full grid."""
    chosen = ", ".join(f"{s.axis}={s.chosen}" for s in stages) or "(no axis: one cell)"
    return [f"Staged search (search=staged), one axis at a time, ranked by {measure}:",
            *(f"  {s.line(i + 1)}" for i, s in enumerate(stages)),
            f"  chosen: {chosen}",
            f"  cells: {trials} trials ({computed} computed now) of the full grid's {grid} ({trials / grid:.0%})",
            "  Staged search cannot see interactions between axes: each axis was chosen with the earlier ones "
            "frozen and the later ones at their defaults.",
            f"  The full grid of the finalists (top {top} per axis): {command}"]


def run_stages(jobs: Sequence[Sequence[str]], launch: Launch, *, top: int = 2, summary_path: Path | None = None,
               out: Any = None) -> list[Stage]:
    """The staged search over the grid ``jobs`` (each a cell's overrides, stage-ordered): each
    stage launches its trials not launched before, ranks them, freezes the best. Returns the
    stages (also printed to ``out`` and written to ``summary_path``)."""
    from rag_bench.decision import decide
    from rag_bench.search.halving import marker_time, stored_cell

    grid_axes = axes(jobs)
    chosen: dict[str, str] = {}
    dirs: dict[int, Path] = {}
    stages: list[Stage] = []
    finalists: dict[str, list[str]] = {}
    measure = ""
    computed_total = 0
    plan = range(len(grid_axes)) if grid_axes else [None]
    for s in plan:
        idx = list(range(len(jobs))) if s is None else stage_trials(jobs, grid_axes, s, chosen)
        todo = [i for i in idx if i not in dirs]
        started = time.time_ns()
        for i, path in zip(todo, launch([list(jobs[i]) for i in todo])):
            dirs[i] = Path(path)
        computed = sum(1 for i in todo if marker_time(dirs[i]) >= started)
        computed_total += computed
        if s is None:
            break
        cells = [stored_cell(dirs[i]) for i in idx]
        measure = measure or decide.primary_measure(cells)
        axis = grid_axes[s]
        value_of = {c.cell_id: dict(_split(o) for o in jobs[i])[axis.key] for c, i in zip(cells, idx)}
        ranked = tuple(value_of[c.cell_id] for c in decide.rank(cells, measure))
        figure = {value_of[c.cell_id]: decide.value_of(c, measure) for c in cells}
        chosen[axis.key] = ranked[0]
        finalists[axis.key] = list(ranked[:top])
        stages.append(Stage(axis.key, tuple(figure), tuple(figure.values()), ranked, ranked[0], computed,
                            len(idx) - computed))
    command = finalists_command(jobs[0], grid_axes, finalists) if grid_axes else ""
    lines = summary(stages, measure or "-", len(dirs), computed_total, len(jobs), command, top)
    print("\n" + "\n".join(lines), file=out or sys.stdout, flush=True)
    if summary_path is not None:
        summary_path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(summary_path, json.dumps({
            "mode": "staged", "measure": measure, "stages": [asdict(st) for st in stages], "chosen": chosen,
            "trials": sorted(dirs[i].name for i in dirs), "computed": computed_total, "grid_cells": len(jobs),
            "finalists": finalists, "finalists_command": command}, indent=2, sort_keys=True) + "\n")
    return stages


def bound_lines(cells: int, questions: int, axis_sizes: Sequence[int]) -> list[str]:
    """What a staged search computes at most, against the grid's cell-questions.

    >>> bound_lines(12, 10, [3, 2, 2])[0][:66]
    "search=staged: at most 5 of the grid's 12 cells (50 cell-questions"
    """
    trials = min(staged_bound(axis_sizes), cells)
    return [f"search=staged: at most {trials} of the grid's {cells} cells ({trials * questions:,} "
            f"cell-questions, the grid: {cells * questions:,}); a bound: which cells depends on each stage's choice",
            "  prompts: at most the grid's (the trials are some of its cells)"]


class Staged:
    """The staged search (:func:`run_stages`) as a search strategy (``search=staged``, conf/search/staged.yaml):
    its setting is ``search.finalists``
    (the top values per axis in the printed grid of the finalists)."""

    name: ClassVar[str] = "staged"
    budgeted: ClassVar[bool] = False

    def __init__(self, finalists: int = 2) -> None:
        self.finalists = finalists

    def check(self, ctx: SearchContext) -> None:
        """Nothing to refuse before the grid is validated."""

    def bound(self, grid: Sequence[Sequence[str]], questions: int, dataset: Sequence[Question]) -> list[str]:
        """The trials of the stages at most (:func:`bound_lines`)."""
        return bound_lines(len(grid), questions, [len(a.values) for a in axes(grid)])

    def run(self, ctx: SearchContext) -> None:
        """Each stage's new trials one batch through ``ctx.launch``."""
        run_stages(ctx.grid, ctx.launch, top=int(self.finalists), summary_path=ctx.summary_path)
