"""Hydra callbacks: sweep identity before the first cell, leaderboard and run closing after the last."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from rag_bench.runner.main import AXES_ENV, SWEEP_ENV, argv_overrides, sweep_id_from_argv

log = logging.getLogger(__name__)


def _axes(config: DictConfig) -> list[str]:
    """The sweep's axes from its overrides: the command line's and a preset's ``hydra.sweeper.params``."""
    from rag_bench.naming import sweep_axes

    hydra_cfg = config.get("hydra") or {}
    overrides = list((hydra_cfg.get("overrides") or {}).get("task") or [])
    params = (hydra_cfg.get("sweeper") or {}).get("params") or {}
    return sweep_axes([*overrides, *(f"{k}={v}" for k, v in params.items())])


def _summarize(cells: Any, axes: list[str], key: str | None, problem: str) -> None:
    """The sweep's parent MLflow run: the leaderboard as a table, the primary measure ``key`` that
    ranked it, the best cell's measures and name (:mod:`rag_bench.reporting.decide`'s rule, ties
    said), the sweep's axes (when this process opened one). ``key`` None: no cell has the primary
    measure (``problem`` says so): the cells and that note, no best cell."""
    from rag_bench.reporting.leaderboard import ALL_COLUMNS, leaderboard_table, tie_line
    from rag_bench.tracking.mlflow_tracker import summarize_sweeps

    if key is None:
        summarize_sweeps(cells[["label", "cell"]], {}, {"sweep.axes": ",".join(axes) or "none",
                                                        "sweep.cells": len(cells)},
                         f"{len(cells)} cells; no best cell: {problem}")
        return
    table = leaderboard_table(cells, sort_by=key, columns=ALL_COLUMNS)
    best = table.iloc[0]
    # ANN figures describe an approximate index against flat: logged only when one was swept.
    approximate = "index" in table and any(_index_name(v) not in ("", "flat") for v in table["index"])
    metrics = {f"best/{c}": float(best[c]) for c in table.columns if "/" in c and best[c] == best[c]
               and (approximate or not c.startswith("ann/"))}
    if key in table and best[key] == best[key]:
        metrics["primary"] = float(best[key])
    tie = tie_line(cells, key)
    params = {"sweep.axes": ",".join(axes) or "none", "sweep.cells": len(table), "best.cell": best["cell"],
              "best.label": best["label"], "sweep.sort_by": key, "sweep.primary": key}
    note = (f"{len(table)} cells; primary measure {key}; best: {best['label']} ({best['cell']}) "
            f"{best.get(key, float('nan')):.3f}{'; ' + tie if tie else ''}")
    summarize_sweeps(table, metrics, params, note)


def _index_name(value: Any) -> str:
    """An index column's value (the stage's config, or its option name) as its option name."""
    return str(value.get("name", "")) if isinstance(value, dict) else str(value or "")


def prepare_tracking(config: DictConfig) -> None:
    """Open the MLflow store, experiment and parent run of the sweep SWEEP_ENV names, in the launching
    process (see MlflowTracker.prepare). rag_bench's sweeper calls it once the grid is validated, so a
    misspelt option is the first and only line a bad sweep prints (no store is created for it)."""
    tracking = config.get("tracking")
    if tracking is not None and tracking.get("name") == "mlflow" and "${" not in str(config.experiment.name):
        from rag_bench.runner.config import build

        tracker = build(tracking, "tracking")
        tracker.bind(output_root=Path(config.output.root), experiment=str(config.experiment.name),
                     sweep_id=os.environ[SWEEP_ENV])
        try:
            tracker.prepare()
        except Exception as exc:  # noqa: BLE001
            # Each cell checks tracking again and reports the problem with exit 2 (TrackingError,
            # OutputError); Hydra would only turn a raise here into a warning.
            log.debug("tracking not prepared before the sweep: %s", exc)


def _validates_first(config: DictConfig) -> bool:
    """rag_bench's sweeper prepares tracking itself, after validating the grid."""
    from rag_bench.runner.sweeper import RagBenchSweeperConf

    return str(config.hydra.sweeper.get("_target_", "")) == RagBenchSweeperConf._target_


class SweepCallbacks(Callback):
    """Sets the sweep id (shared with launcher worker processes through the environment), then
    closes the parent MLflow run and prints the experiment's leaderboard."""

    def __init__(self) -> None:
        # A job of this process failed: Hydra calls on_run_end before it raises a single run's
        # error, and that run's parent MLflow run must close FAILED (finish_all), not FINISHED.
        self._failed = False

    def _start(self, config: DictConfig) -> None:
        self._failed = False
        os.environ[SWEEP_ENV] = sweep_id_from_argv(str(config.experiment.name), argv_overrides())
        os.environ[AXES_ENV] = ",".join(_axes(config))

    def _end(self, config: DictConfig) -> None:
        from rag_bench.errors import RagBenchError
        from rag_bench.reporting.leaderboard import format_failures, format_leaderboard, load_cells, primary
        from rag_bench.tracking.mlflow_tracker import finish_all

        exp_dir = Path(config.output.root) / str(config.experiment.name)
        cells = load_cells(exp_dir)
        key, problem = None, ""
        try:
            key = primary(cells) if not cells.empty else None
        except RagBenchError as exc:  # no cell has experiment.primary: said, never ranked by another
            problem = str(exc)
        if not cells.empty and not self._failed:
            _summarize(cells, _axes(config), key, problem)
        finish_all(ok=not self._failed)
        if problem:
            print(f"\nLeaderboard: {exp_dir} ({len(cells)} cells) not ranked\nerror: {problem}", file=sys.stderr,
                  flush=True)
        elif not cells.empty:
            print(f"\nLeaderboard: {exp_dir} ({len(cells)} cells)\n", file=sys.stdout)
            print(format_leaderboard(cells, sort_by=key), file=sys.stdout, flush=True)
            failures = format_failures(cells, sort_by=key)
            if failures:
                shown = min(10, len(cells))
                print(f"\nWhere questions were lost (first failing stage; top {shown} cells):\n\n{failures}",
                      file=sys.stdout, flush=True)
            print(f"\nFailures, drill-down, charts: rag-bench report {exp_dir}\n"
                  f"Library output (model loading, MLflow, Hydra): {exp_dir / '.hydra' / 'rag_bench.log'}",
                  file=sys.stdout, flush=True)

    def on_job_end(self, config: DictConfig, job_return: Any = None, **kwargs: Any) -> None:
        """After each cell, in whichever process ran it: advance the sweep's progress bar."""
        from hydra.core.utils import JobStatus

        from rag_bench.runner.sweeper import record_progress

        ok = job_return is None or job_return.status == JobStatus.COMPLETED
        self._failed |= not ok
        record_progress("done" if ok else "failed")

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        """Single run: a sweep of one cell."""
        self._start(config)
        prepare_tracking(config)

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        """Before the first cell of a sweep (tracking: once the grid is validated, with our sweeper)."""
        self._start(config)
        if not _validates_first(config):
            prepare_tracking(config)

    def on_run_end(self, config: DictConfig, **kwargs: Any) -> None:
        """After a single run."""
        self._end(config)

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        """After the last cell of a sweep."""
        self._end(config)
