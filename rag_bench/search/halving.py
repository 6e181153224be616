"""``search=halving`` in the sweeper's process (docs/search.md): the rounds launched through
the sweep's own launcher, the cells' per-question values read from their folders, the pruned
cells marked, the summary printed and kept. The decisions are :mod:`rag_bench.runner.rounds`'s.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import pandas as pd

from rag_bench.cells import Cell, atomic_write, is_done, metrics_json, read_cell
from rag_bench.decision import decide
from rag_bench.decision.verdict import question_values
from rag_bench.errors import ConfigError
from rag_bench.evaluation import measures
from rag_bench.runner import rounds
from rag_bench.search.plan import halving_bound, halving_floor
from rag_bench.search.round_cells import round_covered, run_round_cell

if TYPE_CHECKING:
    from rag_bench.domain import Question
    from rag_bench.search.base import Route, SearchContext

log = logging.getLogger("rag_bench")
Launch = Callable[[list[list[str]]], list[Path]]  # a batch of jobs -> each job's cell folder


def stored_cell(path: Path) -> Cell:
    """A cell folder's config and metrics as a :class:`Cell` (finished or a round's; records read
    on first use): :func:`rag_bench.cells.read_cell`."""
    return read_cell(path, records=False)


def marker_time(path: Path) -> int:
    """When the cell folder ``path`` was last marked (DONE, or a round's PARTIAL), in ns; 0: never."""
    for name in ("DONE", rounds.PARTIAL):
        try:
            return os.stat(path / name).st_mtime_ns
        except OSError:
            continue
    return 0


def questions_run(path: Path, round_questions: int, started: int) -> int:
    """The questions the runner computed for the cell at ``path`` in this round, from what its
    folder says: 0 when its marker (DONE or PARTIAL) predates ``started`` (found done); else the
    marker's count of new questions (``computed``: a PARTIAL's; DONE's ``search.questions_computed``
    for a last round merged with the one before), or all the round's questions (computed whole)."""
    if marker_time(path) < started:
        return 0
    for name, read in ((rounds.PARTIAL, lambda m: m.get("computed")),
                       ("DONE", lambda m: (m.get("search") or {}).get("questions_computed"))):
        try:
            marker = json.loads((path / name).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        found = read(marker) if isinstance(marker, dict) else None
        return int(found) if found is not None else round_questions
    return round_questions


def primary_column(cells: Sequence[Cell]) -> tuple[str, str, bool]:
    """The primary measure of ``cells``, its per-question column and its direction; ConfigError
    when it has no per-question values (nothing to test)."""
    key = decide.primary_measure(cells)
    m = measures.measure(key)
    if m is None or m.aggregate != "mean" or not m.column:
        raise ConfigError(f"search=halving: the primary measure {key} has no per-question values to test -- fix: "
                          "experiment.primary=<a per-question measure, e.g. retrieval/ndcg@10>")
    return key, m.column, decide.higher_is_better(key)


def round_values(cells: Sequence[Cell], column: str, qids: Sequence[str]) -> np.ndarray:
    """The per-question values of ``column`` (questions ``qids`` x cells; NaN where a cell has none)."""
    columns = []
    for cell in cells:
        series = question_values(cell, column)
        columns.append(pd.Series(np.nan, index=list(qids)) if series is None else series.reindex(list(qids)))
    return np.column_stack([c.to_numpy(np.float64) for c in columns]) if columns else np.empty((len(qids), 0))


def mark_pruned(cell: Cell, block: dict[str, Any]) -> None:
    """Write the ``search`` block into a pruned cell's metrics.json (a finished cell, found DONE, is
    left as it is: it holds every question)."""
    if is_done(cell.path):
        return
    atomic_write(cell.path / "metrics.json", metrics_json({**cell.metrics, "search": block}))


def run_rounds(jobs: Sequence[Sequence[str]], questions: Sequence[Any], launch: Launch, *, round_fractions: Any, alpha: float,
               seed: int, prune: str = "significance", keep: float = 1 / 3, summary_path: Path | None = None,
               out: Any = None) -> list[rounds.RoundSummary]:
    """Successive halving over the grid ``jobs`` (each a cell's overrides) on ``questions`` (the
    dataset's): each round launches the cells still in that lack the round's results (each job
    gets ``search.round=<r>``; the last round's cells merge what their rounds before ran), then
    prunes: ``prune=significance``, the cells outside the round's model confidence set at ``alpha / (rounds - 1)``; ``prune=rank``, all
    but the top ``keep`` fraction (:func:`~rag_bench.runner.rounds.prune_rank`), each dropped cell's
    paired test against the leader recorded, and after the last round the pruned cells checked
    against the final best on the questions they saw (:func:`~rag_bench.runner.rounds.guard`).
    ``round_fractions`` (``search.rounds``) None: :data:`~rag_bench.runner.rounds.ROUNDS` of ``prune``. Returns the rounds'
    summaries (also printed to ``out`` and written to ``summary_path``)."""
    prune = rounds.check_prune(prune)
    keep = rounds.check_keep(keep) if prune == "rank" else keep
    fractions = rounds.rounds_of({"rounds": round_fractions, "prune": prune})
    pruning = _Pruning(prune, keep, alpha, rounds.round_alpha(alpha, len(fractions)), seed)
    alive = list(range(len(jobs)))
    dirs: dict[int, Path] = {}
    summaries: list[rounds.RoundSummary] = []
    pruned: dict[str, dict[str, Any]] = {}
    pruned_at: dict[int, int] = {}  # job index -> its last round
    measure: tuple[str, str, bool] | None = None
    for r, fraction in enumerate(fractions):
        qids = rounds.round_questions(questions, fraction, seed)
        computed, asked = _launch_round(jobs, launch, alive, dirs, r, fraction, seed, len(qids))
        if r == len(fractions) - 1:
            summaries.append(rounds.RoundSummary(r, fraction, len(qids), len(alive), len(alive), computed,
                                                 len(alive) - computed, asked))
            break
        cells = [stored_cell(dirs[i]) for i in alive]
        measure = measure or primary_column(cells)
        leader, decisions = pruning.decide(round_values(cells, measure[1], qids), higher=measure[2])
        not_worse = 0
        for i, cell, found in zip(alive, cells, decisions):
            if not found.kept:
                block = pruning.block(r, fraction, len(qids), measure[0], cells[leader].cell_id, found)
                not_worse += block.get("significantly_worse") is False  # rank pruning's drops only
                pruned[cell.cell_id] = block
                pruned_at[i] = r
                mark_pruned(cell, block)
        summaries.append(rounds.RoundSummary(r, fraction, len(qids), len(alive), sum(d.kept for d in decisions),
                                             computed, len(alive) - computed, asked, not_worse))
        alive = [i for i, d in zip(alive, decisions) if d.kept]
    regrets = _guard(dirs, alive, pruned_at, questions, measure, alpha, seed) if pruned_at else []
    lines = _summary_lines(summaries, len(jobs), len(questions), pruning, regrets if pruned_at else None)
    _warn_regrets(regrets, prune)
    print("\n" + "\n".join(line for line in lines if line), file=out or sys.stdout, flush=True)
    if summary_path is not None:
        _write_summary(summary_path, pruning, summaries, {
            "measure": measure[0] if measure else None, "grid_cells": len(jobs),
            "questions": len(questions), "survivors": sorted(dirs[i].name for i in alive), "pruned": pruned,
            "guard": regrets})
    return summaries


@dataclass(frozen=True)
class _Pruning:
    """How a halving sweep prunes after each round but the last: ``prune`` (significance or rank),
    ``keep`` (rank's fraction), the sweep's ``alpha`` and its share per round (``spent``), the seed."""

    prune: str
    keep: float
    alpha: float
    spent: float
    seed: int

    def decide(self, values: np.ndarray, *, higher: bool) -> tuple[int, list[rounds.Decision]]:
        """The round's leader and each cell's decision from its per-question ``values``."""
        if self.prune == "rank":
            return rounds.prune_rank(values, higher_is_better=higher, keep=self.keep, seed=self.seed)
        return rounds.prune(values, higher_is_better=higher, alpha=self.spent, seed=self.seed)

    def block(self, r: int, fraction: float, questions: int, key: str, leader: str,
              found: rounds.Decision) -> dict[str, Any]:
        """The ``search`` block of a cell pruned after round ``r`` (written into its metrics.json)."""
        block: dict[str, Any] = {
            "mode": "halving", "prune": self.prune, "pruned_after_round": r + 1, "fraction": fraction,
            "questions": questions, "measure": key, "leader": leader, "behind": found.behind, "p": found.p,
            "alpha": self.spent if self.prune == "significance" else self.alpha}
        if self.prune == "rank":
            block.update(keep=self.keep, test="paired randomisation (two-sided) against the leader",
                         significantly_worse=bool(found.p <= self.alpha and found.behind < 0))
        return block


def _launch_round(jobs: Sequence[Sequence[str]], launch: Launch, alive: Sequence[int], dirs: dict[int, Path],
                  r: int, fraction: float, seed: int, round_questions: int) -> tuple[int, int]:
    """Launch round ``r`` for the cells still in that lack its results (their folders put in
    ``dirs``); the cells the runner computed and the questions it asked."""
    todo = [i for i in alive if i not in dirs or not round_covered(dirs[i], fraction, seed)]
    extra = [f"search.round={r}"]  # the last round's too: its cells merge the questions rounds before ran
    started = time.time_ns()
    for i, path in zip(todo, launch([[*jobs[i], *extra] for i in todo])):
        dirs[i] = Path(path)
    ran = [questions_run(dirs[i], round_questions, started) for i in todo]
    return sum(1 for n in ran if n), sum(ran)


def _summary_lines(summaries: Sequence[rounds.RoundSummary], grid_cells: int, all_questions: int,
                   pruning: _Pruning, regrets: list[dict[str, Any]] | None) -> list[str]:
    """The end-of-sweep lines: the rounds, rank pruning's drops not significantly worse, and the guard's
    finding (``regrets`` None: no cell was pruned, so no guard)."""
    lines = rounds.summary(summaries, grid_cells, all_questions)
    if pruning.prune == "rank":
        dropped = sum(s.cells - s.kept for s in summaries)
        lines.append(f"  prune=rank keeps the top {pruning.keep:.3g} of each round by its mean: of the {dropped} cells "
                     f"dropped, {sum(s.not_worse for s in summaries)} were NOT significantly worse than the round's "
                     f"leader (paired test, alpha {pruning.alpha:g}) -- a rank cut, not a statistical decision")
    if regrets is not None:
        lines.append(f"  guard: {len(regrets)} pruned cells significantly better than the final best on the questions "
                     "they saw" + ("" if not regrets else ": " + ", ".join(
                         f"{g['cell']} (+{g['ahead']:.3f} on {g['questions']} questions, p={g['p']:.3g})"
                         for g in regrets)))
    return lines


def _warn_regrets(regrets: Sequence[dict[str, Any]], prune: str) -> None:
    """A warning per pruned cell the guard found significantly better than the final best."""
    for g in regrets:
        log.warning("WARNING: search.prune=%s dropped cell %s, significantly better than the final best %s on the %d "
                    "questions it saw (+%.3f, p=%.3g): the pruning lost a better cell -- rerun with a larger "
                    "search.keep or search=grid", prune, g["cell"], g["best"], g["questions"], g["ahead"], g["p"])


def _write_summary(path: Path, pruning: _Pruning, summaries: Sequence[rounds.RoundSummary],
                   found: dict[str, Any]) -> None:
    """The sweep's summary file: its settings, rounds and ``found`` (measure, survivors, pruned, guard)."""
    rank = pruning.prune == "rank"
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, json.dumps({
        "mode": "halving", "prune": pruning.prune, "keep": pruning.keep if rank else None,
        "rounds": [asdict(s) for s in summaries], "alpha": pruning.alpha,
        "alpha_per_round": pruning.spent if pruning.prune == "significance" else None,
        "seed": pruning.seed, "cell_questions": sum(s.questions_computed for s in summaries),
        "dropped_not_significantly_worse": sum(s.not_worse for s in summaries) if rank else None,
        **found}, indent=2, sort_keys=True) + "\n")


def _guard(dirs: dict[int, Path], alive: Sequence[int], pruned_at: dict[int, int], questions: Sequence[Any],
           measure: tuple[str, str, bool] | None, alpha: float, seed: int) -> list[dict[str, Any]]:
    """The pruned cells significantly better than the final best (the best finished cell by its
    mean on every question) on the questions each saw (:func:`~rag_bench.runner.rounds.guard`)."""
    if measure is None or not alive:
        return []
    _, column, higher = measure
    finished = [stored_cell(dirs[i]) for i in alive]
    qids = [q.qid for q in questions]
    means = np.nanmean(round_values(finished, column, qids), axis=0) * (1.0 if higher else -1.0)
    best = finished[int(np.nanargmax(means))]
    order = list(pruned_at)
    cells = [best, *(stored_cell(dirs[i]) for i in order)]
    values = round_values(cells, column, qids)
    found = rounds.guard(values, 0, list(range(1, len(cells))), higher_is_better=higher, alpha=alpha, seed=seed)
    return [{"cell": cells[g.cell].cell_id, "best": best.cell_id, "questions": g.questions, "ahead": g.ahead,
             "p": g.p, "pruned_after_round": pruned_at[order[g.cell - 1]] + 1} for g in found]


def bound_lines(cells: int, questions: int, round_sizes: Sequence[int]) -> list[str]:
    """What halving computes at least and at most (the pruning decides), against the grid's cell-questions.

    >>> bound_lines(10, 12, [3, 6, 12])[0][:75]
    'search=halving: 39 to 120 cell-questions in 3 rounds of 3, 6, 12 questions '
    """
    grid = cells * questions
    sizes = ", ".join(str(n) for n in round_sizes)
    return [f"search=halving: {halving_floor(cells, round_sizes):,} to {halving_bound(cells, round_sizes):,} "
            f"cell-questions in {len(round_sizes)} rounds of {sizes} questions (the grid: {grid:,}); bounds: how "
            "many cells each round prunes is decided by the results",
            "  prompts: at most the grid's (a round's questions are the grid's, and answers are cached between "
            "rounds)"]


FEW_QUESTIONS = 10  # a pruning round on fewer questions is warned about (a judgment call: docs/search.md)


def round_problems(sizes: Sequence[int], questions: int) -> tuple[str | None, str | None]:
    """What the rounds' question counts ``sizes`` (of ``questions``) make of a halving sweep: an error
    when a round would see no question (its cells have no figure to compare: the sweep would fail
    after launching them), a warning when a round that prunes sees fewer than :data:`FEW_QUESTIONS`.

    >>> round_problems([0, 1, 6], 6)[0] is not None
    True
    >>> round_problems([21, 42, 85], 85)
    (None, None)
    """
    listed = ", ".join(str(n) for n in sizes)
    fix = (f"fix: larger fractions in search.rounds (the last 1), more questions, or search=grid "
           f"(rounds of {listed} of the {questions} questions)")
    if any(n == 0 for n in sizes):
        return (f"search=halving: round {sizes.index(0) + 1} would see no question of the {questions} -- {fix}",
                None)
    few = [r + 1 for r, n in enumerate(sizes[:-1]) if n < FEW_QUESTIONS]
    if not few:
        return None, None
    n = sizes[few[0] - 1]
    return None, (f"search=halving: round {few[0]} prunes on {n} question{'s' if n != 1 else ''} (fewer than "
                  f"{FEW_QUESTIONS}): prune=significance rarely drops a cell on so few (the sweep may cost what "
                  f"search=grid costs) and prune=rank drops cells on noise -- {fix}")


class Halving:
    """Successive halving (:func:`run_rounds`) as a search strategy (``search=halving``, conf/search/halving.yaml):
    its settings are ``search.rounds``, ``alpha``, ``prune``, ``keep`` and ``seed``."""

    name: ClassVar[str] = "halving"
    budgeted: ClassVar[bool] = False

    def __init__(self, rounds: list[float] | str | None = None, alpha: float = 0.05, prune: str = "significance",
                 keep: float = 1 / 3, seed: int = 0, round: int | None = None) -> None:
        self.rounds, self.alpha, self.prune, self.keep, self.seed = rounds, alpha, prune, keep, seed
        self.round = round  # the round of one job (set by the sweeper, read by the runner): not the search's

    def cell(self, plain: Route) -> Route:
        """How a job of this sweep runs its cell: a round's job (``search.round``, set by the
        sweeper on every job, the last round's too) through :mod:`rag_bench.search.round_cells`;
        ``plain`` (the runner's ``run_cell``) otherwise."""
        return plain if self.round is None else run_round_cell

    def check(self, ctx: SearchContext) -> None:
        """Refuse a grid over more than one dataset or split (rounds compare cells on the same
        questions) and rounds that would see no question; warn about rounds too small to prune on
        (:func:`round_problems`), before any cell runs."""
        from rag_bench.runner.config import dataset_path
        from rag_bench.runner.sweeper import covering_subset

        configs = [ctx.compose(job) for job in covering_subset(ctx.grid)]
        sets = {(str(dataset_path(c).resolve()), str(c.dataset.split)) for c in configs}
        if len(sets) != 1:
            raise ConfigError(f"search=halving compares cells on the same questions; this grid spans {len(sets)} "
                              "datasets or splits (dataset.path x dataset.split) -- fix: one halving sweep per dataset "
                              "and split (or search=grid)")
        from rag_bench.runner.main import load_dataset_of

        questions = load_dataset_of(configs[0]).questions
        sizes = [len(rounds.round_questions(questions, f, int(self.seed)))
                 for f in rounds.rounds_of({"rounds": self.rounds, "prune": self.prune})]
        error, warning = round_problems(sizes, len(questions))
        if error:
            raise ConfigError(error)
        if warning:
            log.warning("WARNING: %s", warning)

    def bound(self, grid: Sequence[Sequence[str]], questions: int, dataset: Sequence[Question]) -> list[str]:
        """The cell-questions of the rounds on ``dataset``'s questions (:func:`bound_lines`), and what
        the run would say of them before its first cell (:func:`round_problems`: refused, or warned)."""
        sizes = [len(rounds.round_questions(dataset, f, int(self.seed)))
                 for f in rounds.rounds_of({"rounds": self.rounds, "prune": self.prune})]
        error, warning = round_problems(sizes, len(dataset))
        said = [f"  the run would stop before its first cell: {error}"] if error else \
            [f"  the run would warn: {warning}"] if warning else []
        return [*bound_lines(len(grid), questions, sizes), *said]

    def run(self, ctx: SearchContext) -> None:
        """The rounds over the grid's dataset, each round's batch through ``ctx.launch``."""
        from rag_bench.runner.main import load_dataset_of
        from rag_bench.runner.sweeper import covering_subset

        questions = load_dataset_of(ctx.compose(covering_subset(ctx.grid)[0])).questions
        run_rounds(ctx.grid, questions, ctx.launch, round_fractions=self.rounds, alpha=float(self.alpha), seed=int(self.seed),
            prune=str(self.prune), keep=float(self.keep), summary_path=ctx.summary_path)
