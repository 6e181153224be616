"""``search.mode=halving`` in the sweeper's process (docs/search.md): the rounds launched through
the sweep's own launcher, the cells' per-question values read from their folders, the pruned
cells marked, the summary printed and kept. The decisions are :mod:`rag_bench.runner.rounds`'s.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from rag_bench.cells import Cell, atomic_write, is_done, metrics_json
from rag_bench.errors import ConfigError
from rag_bench.evaluation import measures
from rag_bench.reporting import decide
from rag_bench.reporting.verdict import question_values
from rag_bench.runner import rounds as search
from rag_bench.runner.main import round_covered

Launch = Callable[[list[list[str]]], list[Path]]  # a batch of jobs -> each job's cell folder


def stored_cell(path: Path) -> Cell:
    """A cell folder's config and metrics as a :class:`Cell` (finished or a round's; records read
    on first use)."""
    config = yaml.safe_load((path / "config.yaml").read_text(encoding="utf-8")) or {}
    metrics = json.loads((path / "metrics.json").read_text(encoding="utf-8"))
    return Cell(path.name, path, config, metrics, {})


def _marker_time(path: Path) -> int:
    for name in ("DONE", search.PARTIAL):
        try:
            return os.stat(path / name).st_mtime_ns
        except OSError:
            continue
    return 0


def primary_column(cells: Sequence[Cell]) -> tuple[str, str, bool]:
    """The primary measure of ``cells``, its per-question column and its direction; ConfigError
    when it has no per-question values (nothing to test)."""
    key = decide.primary_measure(cells)
    m = measures.measure(key)
    if m is None or m.aggregate != "mean" or not m.column:
        raise ConfigError(f"search.mode=halving: the primary measure {key} has no per-question values to test -- fix: "
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


def run(jobs: Sequence[Sequence[str]], questions: Sequence[Any], launch: Launch, *, rounds: Any, alpha: float,
        seed: int, summary_path: Path | None = None, out: Any = None) -> list[search.RoundSummary]:
    """Successive halving over the grid ``jobs`` (each a cell's overrides) on ``questions`` (the
    dataset's): each round launches the cells still in that lack the round's results (a job of a
    round before the last gets ``search.round=<r>``), then prunes. Returns the rounds' summaries
    (also printed to ``out`` and written to ``summary_path``)."""
    fractions = search.parse_rounds(rounds)
    spent = search.round_alpha(alpha, len(fractions))
    alive = list(range(len(jobs)))
    dirs: dict[int, Path] = {}
    summaries: list[search.RoundSummary] = []
    pruned: dict[str, dict[str, Any]] = {}
    measure: tuple[str, str, bool] | None = None
    for r, fraction in enumerate(fractions):
        last = r == len(fractions) - 1
        qids = search.round_questions(questions, fraction, seed)
        todo = [i for i in alive if i not in dirs or not round_covered(dirs[i], fraction, seed)]
        extra = [] if last else [f"search.round={r}"]
        started = time.time_ns()
        for i, path in zip(todo, launch([[*jobs[i], *extra] for i in todo])):
            dirs[i] = Path(path)
        computed = sum(1 for i in todo if _marker_time(dirs[i]) >= started)
        if last:
            summaries.append(search.RoundSummary(r, fraction, len(qids), len(alive), len(alive), computed,
                                                 len(alive) - computed))
            break
        cells = [stored_cell(dirs[i]) for i in alive]
        measure = measure or primary_column(cells)
        key, column, higher = measure
        values = round_values(cells, column, qids)
        leader, decisions = search.prune(values, higher_is_better=higher, alpha=spent, seed=seed)
        for cell, found in zip(cells, decisions):
            if not found.kept:
                block = {"mode": "halving", "pruned_after_round": r + 1, "fraction": fraction, "questions": len(qids),
                         "measure": key, "leader": cells[leader].cell_id, "behind": found.behind, "p": found.p,
                         "alpha": spent}
                pruned[cell.cell_id] = block
                mark_pruned(cell, block)
        summaries.append(search.RoundSummary(r, fraction, len(qids), len(alive), sum(d.kept for d in decisions),
                                             computed, len(alive) - computed))
        alive = [i for i, d in zip(alive, decisions) if d.kept]
    lines = search.summary(summaries, len(jobs), len(questions))
    print("\n" + "\n".join(line for line in lines if line), file=out or sys.stdout, flush=True)
    if summary_path is not None:
        summary_path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(summary_path, json.dumps({
            "mode": "halving", "rounds": [asdict(s) for s in summaries], "alpha": alpha, "alpha_per_round": spent,
            "seed": seed, "measure": measure[0] if measure else None, "grid_cells": len(jobs),
            "questions": len(questions), "cell_questions": sum(s.computed * s.questions for s in summaries),
            "survivors": sorted(dirs[i].name for i in alive), "pruned": pruned}, indent=2, sort_keys=True) + "\n")
    return summaries
