"""``search=optuna`` (docs/search.md): Optuna's samplers over the grid's cells, by ask/tell.

The search space is the grid the command line declares: each swept key (a key with more than one
value, :func:`rag_bench.search.staged.axes`) a categorical distribution over its values. A trial asks
the sampler for one value per key, which names one of the grid's jobs; that job is launched through
the sweeper's batch launcher with exactly the grid's overrides, so every trial is an ordinary cell
(same id, folder, DONE, tracking; ``compare``, ``gate`` and the report read it like any).

One objective (``search.objectives=[primary]``, the default) is searched with TPE; two or more (the
primary measure with ``latency`` and/or ``cost``) with NSGA-II, each objective in its own direction
(:func:`rag_bench.decision.decide.higher_is_better`).

Deterministic and resumable without an Optuna storage: the sampler is seeded (``search.seed``) and
every value told is read from the cell's ``metrics.json`` -- the same bytes on a re-run. A re-run
asks the seeded sampler again from trial 1: the asked cells already DONE are read (the runner finds
them done), so the sampler is told the same values in the same order and asks the same next cell,
and the first trial not finished is where the computing starts again. A trial whose cell an earlier
trial of the run already holds (TPE repeats categorical points) is told that cell's values and
launches nothing.
"""

from __future__ import annotations

import json
import math
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from rag_bench.cells import atomic_write
from rag_bench.errors import ConfigError
from rag_bench.evaluation import measures
from rag_bench.search.staged import Axis, axes

if TYPE_CHECKING:
    from rag_bench.domain import Question
    from rag_bench.search.base import SearchContext

Launch = Callable[[list[list[str]]], list[Path]]  # a batch of jobs -> each job's cell folder
OBJECTIVES = ("primary", "latency", "cost")  # or a metrics key, section/name
E2E_LATENCY = "latency/e2e_p50_ms"  # retrieval + rerank + the generator's call, per question, p50
QUERY_LATENCY = "latency/retrieval+rerank_p50_ms"  # no end-to-end figure: retrieval p50 + rerank p50
COST = "cost/usd_per_question"


def parse_objectives(value: Any) -> tuple[str, ...]:
    """``search.objectives``: a list (or a comma-separated string) of ``primary``, ``latency``,
    ``cost`` or metrics keys (``section/name``), each once, ``primary`` first when given.

    >>> parse_objectives(["primary", "latency"]), parse_objectives("primary,cost")
    (('primary', 'latency'), ('primary', 'cost'))
    """
    items = str(value).split(",") if isinstance(value, str) else list(value) if value is not None else []
    names = tuple(str(i).strip() for i in items if str(i).strip())
    bad = [n for n in names if n not in OBJECTIVES and "/" not in n]
    if not names or bad or len(set(names)) != len(names):
        raise ConfigError(f"search.objectives={list(names)!r}: each of {'|'.join(OBJECTIVES)} or a metrics key "
                          "(section/name), each once -- fix: search.objectives=[primary] (TPE) or "
                          "search.objectives=[primary,latency,cost] (NSGA-II)")
    for name in names:
        if name not in OBJECTIVES:
            _check_measure(name)
    return names


def _check_measure(key: str) -> None:
    """A metrics key an objective names must be a measure or figure with a direction (a typo such
    as ``retrieval/ndcg@1O`` would run every trial blind, told no value): ConfigError naming it,
    the closest measures and the fix, before any cell runs."""
    import difflib

    plain = f"retrieval/{key.rpartition('/')[2]}" if key.startswith("tag:") else key  # as decide ranks a tag key
    try:
        if measures.direction(plain) is not None:
            return
        why = "is descriptive (neither higher nor lower is better)"
    except ValueError:
        why = "is not a measure of rag_bench"
    section = plain.partition("/")[0]
    known = measures.known_names(section) or sorted({n for s in measures.QUESTION_SECTIONS
                                                     for n in measures.known_names(s)})
    close = difflib.get_close_matches(plain, [k for k in known if k != plain], n=3, cutoff=0.5)
    raise ConfigError(f"search.objectives: {key!r} {why} -- fix: "
                      + (f"did you mean {' or '.join(close)}? " if close else "")
                      + f"name a measure with a direction (e.g. {', '.join(known[:4])}), or primary, latency, cost")


def trial_count(value: Any, grid: int) -> int:
    """``search.n_trials`` (at least 1), capped at the grid's size.

    >>> trial_count(20, 8), trial_count("5", 36)
    (8, 5)
    """
    try:
        n = int(value)
    except (TypeError, ValueError):
        n = 0
    if n < 1:
        raise ConfigError(f"search.n_trials={value!r}: must be an integer >= 1 -- fix: search.n_trials=20")
    return min(n, grid)


def sampler(objectives: int, trials: int, seed: int) -> Any:
    """TPE for one objective, NSGA-II for more, seeded. A quarter of the trials (2 to 10) start TPE
    at random; NSGA-II's population is a third of the trials (4 to 50), so that a search of a few
    dozen trials runs several generations instead of one random population of Optuna's default 50.

    >>> type(sampler(1, 12, 0)).__name__, sampler(1, 12, 0)._n_startup_trials
    ('TPESampler', 3)
    >>> type(sampler(3, 12, 0)).__name__, sampler(3, 12, 0)._population_size
    ('NSGAIISampler', 4)
    """
    import optuna

    if objectives == 1:
        return optuna.samplers.TPESampler(seed=seed, n_startup_trials=min(10, max(2, trials // 4)))
    return optuna.samplers.NSGAIISampler(seed=seed, population_size=min(50, max(4, trials // 3)))


@dataclass(frozen=True)
class Objective:
    """An objective: its name in ``search.objectives``, the metrics key read, its direction."""

    name: str
    key: str
    higher: bool


def _number(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


def resolve(names: Sequence[str], first: Any) -> tuple[Objective, ...]:
    """The objectives' keys, fixed from the run's first trial's cell ``first`` (a
    :class:`~rag_bench.decision.decide` Cell): ``primary`` as the verdict chooses it (configured, or
    ``auto``), ``latency`` the end-to-end p50 when that cell has it, else retrieval + rerank p50."""
    from rag_bench.decision import decide

    out = []
    for name in names:
        if name == "primary":
            key = decide.primary_measure([first])
        elif name == "latency":
            has_e2e = _number((first.metrics.get("latency") or {}).get(E2E_LATENCY.split("/")[1])) is not None
            key = E2E_LATENCY if has_e2e else QUERY_LATENCY
        elif name == "cost":
            key = COST
        else:
            key = name
        higher = False if name in ("latency", "cost") else decide.higher_is_better(key)
        out.append(Objective(name, key, higher))
    return tuple(out)


def value(cell: Any, objective: Objective) -> float | None:
    """``cell``'s figure for ``objective`` (None when it has none)."""
    from rag_bench.decision import decide

    if objective.key == QUERY_LATENCY:
        return decide.latency_ms(cell.metrics)
    return _number(decide.value_of(cell, objective.key))


@dataclass(frozen=True)
class Trial:
    """One trial: its number (from 1), the value asked per axis, the cell, its values (None: the
    cell has no figure for an objective: the trial is told failed), whether this run computed the
    cell, and the earlier trial holding the same cell (0: none)."""

    number: int
    params: dict[str, str]
    cell: str
    values: tuple[float | None, ...]
    computed: bool
    repeat_of: int = 0

    @property
    def complete(self) -> bool:
        return all(v is not None for v in self.values)


def dominates(a: Sequence[float], b: Sequence[float], higher: Sequence[bool]) -> bool:
    """Whether ``a`` is at least as good as ``b`` on every objective and better on one.

    >>> dominates([0.9, 10.0], [0.8, 10.0], [True, False]), dominates([0.9, 20.0], [0.8, 10.0], [True, False])
    (True, False)
    """
    signed = [(x if h else -x, y if h else -y) for x, y, h in zip(a, b, higher)]
    return all(x >= y for x, y in signed) and any(x > y for x, y in signed)


def pareto_front(trials: Sequence[Trial], objectives: Sequence[Objective]) -> list[Trial]:
    """The first trial of each distinct cell no other cell dominates (cells without every figure
    left out), in trial order."""
    firsts = [t for t in trials if not t.repeat_of and t.complete]
    higher = [o.higher for o in objectives]
    return [t for t in firsts
            if not any(dominates(o.values, t.values, higher) for o in firsts if o is not t)]  # type: ignore[arg-type]


def best(trials: Sequence[Trial], cells: Mapping[str, Any], objective: Objective) -> Trial | None:
    """The trial whose cell ranks first on ``objective`` by the leaderboard's rule
    (:func:`rag_bench.decision.decide.rank`: ties broken by generator tokens, then name)."""
    from rag_bench.decision import decide

    firsts = {t.cell: t for t in trials if not t.repeat_of and t.complete}
    if not firsts:
        return None
    ranked = decide.rank([cells[c] for c in firsts], objective.key) if objective.key != QUERY_LATENCY else \
        sorted((cells[c] for c in firsts), key=lambda c: (value(c, objective), c.cell_id))
    return firsts[ranked[0].cell_id]


def _shown(v: float | None) -> str:
    return "-" if v is None else f"{v:.4g}"


def _params(t: Trial) -> str:
    return " ".join(f"{k}={v}" for k, v in t.params.items())


def summary(trials: Sequence[Trial], objectives: Sequence[Objective], chosen: Sequence[Trial], kind: str,
            seed: int, grid: int) -> list[str]:
    """The end-of-sweep lines: each trial (cell, values), the best or the Pareto front, the
    distinct cells computed against the grid's."""
    heads = ", ".join(f"{o.key} ({'higher' if o.higher else 'lower'} is better)" for o in objectives)
    lines = [f"Optuna search (search=optuna, {kind}, seed {seed}), {len(trials)} trials, objectives: {heads}"]
    for t in trials:
        how = f"same cell as trial {t.repeat_of}" if t.repeat_of else "computed" if t.computed else "found done"
        lines.append(f"  trial {t.number}: {_params(t)} -> {t.cell} "
                     f"[{', '.join(_shown(v) for v in t.values)}] ({how})")
    if len(objectives) == 1:
        lines.append(f"  best: {_params(chosen[0])} -> {chosen[0].cell} ({_shown(chosen[0].values[0])})"
                     if chosen else "  best: none (no trial has the objective's figure)")
    else:
        lines.append(f"  Pareto front ({len(chosen)} cell{'' if len(chosen) == 1 else 's'} no other trial beats on "
                     "every objective):")
        lines += [f"    {_params(t)} -> {t.cell} [{', '.join(_shown(v) for v in t.values)}]" for t in chosen]
    distinct = len({t.cell for t in trials})
    computed = sum(1 for t in trials if t.computed)
    lines.append(f"  cells: {len(trials)} trials, {distinct} distinct cells ({computed} computed now) of the full "
                 f"grid's {grid} ({distinct / grid:.0%})")
    return lines


def _job_of(jobs: Sequence[Sequence[str]], grid_axes: Sequence[Axis]) -> dict[tuple[str, ...], int]:
    """Each combination of the axes' values -> the index of its job in the grid."""
    out: dict[tuple[str, ...], int] = {}
    for i, job in enumerate(jobs):
        settings = dict(o.partition("=")[::2] for o in job)
        out.setdefault(tuple(settings.get(a.key, "") for a in grid_axes), i)
    return out


def run_trials(jobs: Sequence[Sequence[str]], launch: Launch, *, objectives: Sequence[str] = ("primary",),
               n_trials: int = 20, seed: int = 0, summary_path: Path | None = None, out: Any = None,
               read: Callable[[Path], Any] | None = None, marker_time: Callable[[Path], int] | None = None) -> list[Trial]:
    """The search over the grid ``jobs`` (each a cell's overrides): ``n_trials`` trials asked of the
    seeded sampler, each a grid job launched (or, when an earlier trial holds its cell, not), told
    its values read from the cell. Returns the trials (also printed to ``out`` and written to
    ``summary_path``)."""
    import optuna
    from optuna.trial import TrialState

    from rag_bench.search import halving

    read = read or halving.stored_cell
    marker_time = marker_time or halving.marker_time
    names = parse_objectives(objectives)
    trials_n = trial_count(n_trials, len(jobs))
    grid_axes = axes(jobs)
    job_of = _job_of(jobs, grid_axes)
    kind = "TPE" if len(names) == 1 else "NSGA-II"
    verbosity = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.WARNING)  # our own lines say what each trial was
    try:
        return _search(jobs, launch, names, trials_n, seed, grid_axes, job_of, kind, read, marker_time,
                       summary_path, out, optuna, TrialState)
    finally:
        optuna.logging.set_verbosity(verbosity)


def _search(jobs: Sequence[Sequence[str]], launch: Launch, names: tuple[str, ...], trials_n: int, seed: int,
            grid_axes: Sequence[Axis], job_of: Mapping[tuple[str, ...], int], kind: str, read: Callable[[Path], Any],
            marker_time: Callable[[Path], int], summary_path: Path | None, out: Any, optuna: Any,
            state: Any) -> list[Trial]:
    objectives: tuple[Objective, ...] = ()
    # Every objective maximized: a lower-is-better figure is told negated, so the study needs no
    # direction before the first cell fixes the objectives' keys (the primary measure under auto).
    study = optuna.create_study(sampler=sampler(len(names), trials_n, seed), directions=["maximize"] * len(names))
    cells: dict[str, Any] = {}  # cell id -> its stored cell
    by_job: dict[int, tuple[str, int]] = {}  # job index -> (cell id, first trial number)
    trials: list[Trial] = []
    dists = {a.key: optuna.distributions.CategoricalDistribution(a.values) for a in grid_axes}
    for number in range(1, trials_n + 1):
        asked = study.ask(dists)
        params = {a.key: str(asked.params[a.key]) for a in grid_axes}
        index = job_of[tuple(params[a.key] for a in grid_axes)]
        repeat_of, computed = 0, False
        if index in by_job:
            cid, repeat_of = by_job[index]
        else:
            started = time.time_ns()
            folder = Path(launch([list(jobs[index])])[0])
            computed = marker_time(folder) >= started
            cid = folder.name
            cells[cid] = read(folder)
            by_job[index] = (cid, number)
        if not objectives:
            objectives = resolve(names, cells[cid])
        values = tuple(value(cells[cid], o) for o in objectives)
        if "cost" in names and values[names.index("cost")] is None:
            # a cost search over a grid priced in part would rank the priced cells only: stop
            unpriced = (cells[cid].metrics.get("cost") or {}).get("unpriced")  # text (scorers/cost.py)
            raise ConfigError(f"search.objectives has cost but trial {number}'s cell {cid} has no {COST} "
                              f"({unpriced or 'no price table'}) -- fix: price every model the grid uses "
                              "(prices.models.<model>.*, prices.usd_per_hour) and run under a new experiment.name "
                              "(a finished cell keeps the money it was priced at), or drop cost")
        if all(v is not None for v in values):
            study.tell(asked, [v if o.higher else -v for v, o in zip(values, objectives)])  # type: ignore[operator]
        else:
            study.tell(asked, state=state.FAIL)  # a cell with no figure: the sampler learns nothing from it
        trials.append(Trial(number, params, cid, values, computed, repeat_of))
    if len(objectives) == 1:
        top = best(trials, cells, objectives[0])
        chosen = [top] if top else []
    else:
        chosen = pareto_front(trials, objectives)
    lines = summary(trials, objectives, chosen, kind, seed, len(jobs))
    print("\n" + "\n".join(lines), file=out or sys.stdout, flush=True)
    if summary_path is not None:
        summary_path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(summary_path, json.dumps({
            "mode": "optuna", "sampler": kind, "seed": seed, "objectives": [asdict(o) for o in objectives],
            "trials": [asdict(t) for t in trials], "best" if len(objectives) == 1 else "pareto":
            [t.cell for t in chosen], "distinct": len({t.cell for t in trials}),
            "computed": sum(1 for t in trials if t.computed), "grid_cells": len(jobs),
            "axes": {a.key: list(a.values) for a in grid_axes}}, indent=2, sort_keys=True) + "\n")
    return trials


def bound_lines(cells: int, questions: int, trials: int) -> list[str]:
    """What an Optuna search computes at most, against the grid's cell-questions.

    >>> bound_lines(36, 10, 12)[0][:65]
    "search=optuna: at most 12 of the grid's 36 cells (search.n_trials"
    """
    n = min(trials, cells)
    return [f"search=optuna: at most {n} of the grid's {cells} cells (search.n_trials={trials}; "
            f"{n * questions:,} cell-questions, the grid: {cells * questions:,}); a bound: which cells depends on the "
            "sampler", "  prompts: at most the grid's (the trials are some of its cells)"]


class Optuna:
    """The Optuna search (:func:`run_trials`) as a search strategy (``search=optuna``, conf/search/optuna.yaml):
    its settings are ``search.n_trials``, ``objectives`` and ``seed``."""

    name: ClassVar[str] = "optuna"
    budgeted: ClassVar[bool] = False

    def __init__(self, n_trials: int = 20, objectives: list[str] | str = "primary", seed: int = 0) -> None:
        self.n_trials, self.objectives, self.seed = n_trials, objectives, seed

    def check(self, ctx: SearchContext) -> None:
        """The objectives and the trials checked, and a cost objective refused without a price."""
        from rag_bench.evaluation import prices

        names = parse_objectives(self.objectives)
        trial_count(self.n_trials, len(ctx.grid))
        if "cost" in names and prices.from_config(ctx.config) is None:
            raise ConfigError("search.objectives has cost but the config sets no price (prices.*) -- fix: a price "
                              "table, e.g. +prices=<table> or prices.usd_per_hour=<dollars>, or drop cost from "
                              "search.objectives")

    def bound(self, grid: Sequence[Sequence[str]], questions: int, dataset: Sequence[Question]) -> list[str]:
        """The trials at most (:func:`bound_lines`)."""
        return bound_lines(len(grid), questions, int(self.n_trials))

    def run(self, ctx: SearchContext) -> None:
        """Each trial's cell one batch through ``ctx.launch``."""
        names = parse_objectives(self.objectives)
        run_trials(ctx.grid, ctx.launch, objectives=names, n_trials=trial_count(self.n_trials, len(ctx.grid)),
            seed=int(self.seed), summary_path=ctx.summary_path)
