"""The Hydra callbacks of a sweep's lifecycle: the sweep's tracking opened before its first cell,
each finished cell counted, the sweep's MLflow parent runs closed after its last. What is shown at
the end (the leaderboard, the parent run's summary) is the reporting side's: its
:class:`rag_bench.reporting.sweep.SweepReport` extends this class and is the callback
``hydra.callbacks`` names."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from rag_bench import heap
from rag_bench.naming import sweep_axes
from rag_bench.runner.sweep_context import CONTEXT_KEY, SweepContext

log = logging.getLogger(__name__)


def axes_of(config: DictConfig) -> tuple[str, ...]:
    """The sweep's axes from its overrides: the command line's and a preset's ``hydra.sweeper.params``."""
    hydra_cfg = config.get("hydra") or {}
    overrides = list((hydra_cfg.get("overrides") or {}).get("task") or [])
    params = (hydra_cfg.get("sweeper") or {}).get("params") or {}
    return tuple(sweep_axes([*overrides, *(f"{k}={v}" for k, v in params.items())]))


def prepare_tracking(config: DictConfig, sweep: SweepContext) -> str | None:
    """Open the MLflow store, experiment and parent run of ``sweep`` in the launching process (see
    MlflowTracker.prepare); the parent run's id, or None (no MLflow, or not prepared). rag_bench's
    sweeper calls it once the grid is validated, so a misspelt option is the first and only line a
    bad sweep prints (no store is created for it)."""
    tracking = config.get("tracking")
    if tracking is not None and tracking.get("name") == "mlflow" and "${" not in str(config.experiment.name):
        from rag_bench.runner.config import build

        tracker = build(tracking, "tracking")
        tracker.bind(output_root=Path(config.output.root), experiment=str(config.experiment.name),
                     sweep_id=sweep.sweep_id)
        try:
            with heap.tuned():  # importing MLflow and opening the store ran five full collections (0.6 s)
                parent: str | None = tracker.prepare()
            return parent
        except Exception as exc:  # noqa: BLE001
            # Each cell checks tracking again and reports the problem with exit 2 (TrackingError,
            # OutputError); Hydra would only turn a raise here into a warning.
            log.debug("tracking not prepared before the sweep: %s", exc)
    return None


def context_of(config: DictConfig) -> SweepContext | None:
    """The context of the sweep a job's config names (``sweep``: its id), None when it names none."""
    sweep_id = config.get(CONTEXT_KEY)
    if not sweep_id:
        return None
    return SweepContext.read(SweepContext.path(Path(config.output.root) / str(config.experiment.name), str(sweep_id)))


def _validates_first(config: DictConfig) -> bool:
    """rag_bench's sweeper prepares tracking itself, after validating the grid."""
    from rag_bench.runner.sweeper import RagBenchSweeperConf

    return str(config.hydra.sweeper.get("_target_", "")) == RagBenchSweeperConf._target_


class SweepCallbacks(Callback):
    """Opens a sweep's tracking (a single run's; another sweeper's sweep), counts finished cells on
    the sweep's progress file, and closes the sweep's parent MLflow runs at its end."""

    def __init__(self) -> None:
        # A job of this process failed: Hydra calls on_run_end before it raises a single run's
        # error, and that run's parent MLflow run must close FAILED (finish_all), not FINISHED.
        self._failed = False

    def on_job_end(self, config: DictConfig, job_return: Any = None, **kwargs: Any) -> None:
        """After each cell, in whichever process ran it: advance the sweep's progress bar."""
        from hydra.core.utils import JobStatus

        from rag_bench.runner.sweeper import record_progress

        ok = job_return is None or job_return.status == JobStatus.COMPLETED
        self._failed |= not ok
        try:
            sweep = context_of(config)
        except Exception:  # noqa: BLE001 -- a missing context file only costs the bar a step
            sweep = None
        if sweep is not None:
            record_progress(sweep, "done" if ok else "failed")

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        """Single run: a sweep of one cell (the task function makes the same context)."""
        from rag_bench.runner.main import argv_overrides

        self._failed = False
        prepare_tracking(config, SweepContext.of_command(str(config.experiment.name), argv_overrides()))

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        """Before the first cell of a sweep (with rag_bench's sweeper: once it validated the grid)."""
        from rag_bench.runner.main import argv_overrides

        self._failed = False
        if not _validates_first(config):
            prepare_tracking(config, SweepContext.of_command(str(config.experiment.name), argv_overrides(),
                                                             axes_of(config)))

    def on_run_end(self, config: DictConfig, **kwargs: Any) -> None:
        """After a single run: its parent run closed."""
        self._end(config)

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        """After the last cell of a sweep: its parent runs closed (and, in a sweep that reports, its
        closing report), with the collector tuned as in a batch of cells (:mod:`rag_bench.heap`: two
        full collections of ~1 s each walked the loaded models in the closing report's MLflow publish)."""
        with heap.tuned():
            self._end(config)

    def _end(self, config: DictConfig | None = None) -> None:
        """The sweep's parent runs closed: FINISHED, or FAILED when a cell failed."""
        from rag_bench.tracking.mlflow_tracker import finish_all

        finish_all(ok=not self._failed)
