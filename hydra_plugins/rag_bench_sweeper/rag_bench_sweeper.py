"""rag_bench's Hydra sweeper: :class:`BasicSweeper` + stage ordering, covering validation, a
progress bar (see :mod:`rag_bench.runner.sweeper`) and one composition per sweep
(:mod:`rag_bench.fast.compose`)."""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Override
from hydra.core.utils import JobStatus
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig

from rag_bench import budget
from rag_bench.errors import ConfigError, RagBenchError
from rag_bench.fast import stock
from rag_bench.fast.compose import ComposeOnce
from rag_bench.runner.callbacks import axes_of, prepare_tracking
from rag_bench.runner.config import validate
from rag_bench.runner.main import argv_overrides
from rag_bench.runner.primary import check_primary_reachable
from rag_bench.runner.sweep_context import CONTEXT_KEY, SweepContext, context_override
from rag_bench.runner.sweeper import Progress, covering_subset, log, stage_order
from rag_bench.search.base import SearchContext, Strategy, strategy


class RagBenchSweeper(BasicSweeper):
    """Hydra's basic sweeper with stage ordering, covering validation and a progress bar."""

    def __init__(self, max_batch_size: int | None = None, params: dict[str, str] | None = None) -> None:
        super().__init__(max_batch_size=max_batch_size, params=params)
        self._tracking_prepared = False
        self._context: SweepContext | None = None
        self._grid: list[list[str]] = []  # every job of the sweep, over all its batches
        self._job_idx = 0  # the next job's index (search=halving launches a batch per round)

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        """Hydra's setup, with the launcher (and the validation) composing through
        :class:`~rag_bench.fast.compose.ComposeOnce` (Hydra's own loader when stock: rag_bench.fast)."""
        loader = hydra_context.config_loader
        if not stock() and not isinstance(loader, ComposeOnce):
            loader = ComposeOnce(loader)
        context = HydraContext(config_loader=loader, callbacks=hydra_context.callbacks)
        super().setup(hydra_context=context, task_function=task_function, config=config)

    @staticmethod
    def split_arguments(overrides: list[Override], max_batch_size: int | None) -> list[list[list[str]]]:
        """The ordered grid, cut into batches of ``max_batch_size`` (one batch by default)."""
        return BasicSweeper.split_arguments(stage_order(overrides), max_batch_size)

    def validate_batch_is_legal(self, batch: Any) -> None:
        """Compose a covering subset of the batch (see the module doc); every job when stock."""
        subset = [list(job) for job in batch] if stock() else covering_subset([list(job) for job in batch])
        log.debug("validating %d of %d jobs (every override covered)", len(subset), len(batch))
        assert self.config is not None and self.hydra_context is not None
        loader = self.hydra_context.config_loader
        configs = []
        for overrides in subset:
            # As BasicSweeper does, plus rag_bench's range checks: a bad value anywhere in the grid
            # (k=0, experiment.name=../x) fails before the first cell runs.
            configs.append(loader.load_sweep_config(self.config, list(overrides)))
            validate(configs[-1])
        if not self._tracking_prepared:  # the grid is valid: now open the MLflow store and parent run
            # Some cell of the whole grid (every batch: configs holding each of its values) must be
            # able to report the measure that ranks them.
            seen = [[o for o in job if not o.startswith(f"{CONTEXT_KEY}=")] for job in subset]
            configs += [loader.load_sweep_config(self.config, job) for job in covering_subset(self._grid)
                        if job not in seen]
            check_primary_reachable(configs)
            self._tracking_prepared = True
            assert self._context is not None
            self._context = dataclasses.replace(self._context,
                                                parent_run=prepare_tracking(self.config, self._context))
            self._context.write(self._experiment_dir())

    def get_job_batch(self) -> Any:
        """The next batch, each job told which sweep it belongs to (``sweep=<id>``: its context's file)."""
        batch = super().get_job_batch()
        if self._context is None:
            return batch
        return [[*job, context_override(self._context.sweep_id)] for job in batch]

    def _experiment_dir(self) -> Path:
        assert self.config is not None
        return Path(str(self.config.output.root)) / str(self.config.experiment.name)

    def sweep(self, arguments: list[str]) -> Any:
        """Search the grid with the ``search`` group's strategy (:mod:`rag_bench.search.base`), handed a
        :class:`~rag_bench.search.base.SearchContext`: the grid, a launcher of its batches with a
        progress bar, Hydra's own sweep of the whole grid, and where the summary goes."""
        assert self.config is not None and self.hydra_context is not None
        parser = OverridesParser.create(config_loader=self.hydra_context.config_loader)
        self._grid = [list(job) for batch in self.split_arguments(
            parser.parse_overrides([*self._parse_config(), *arguments]), self.max_batch_size) for job in batch]
        total = len(self._grid)
        chosen = self._strategy()  # a bad search or budget is refused before anything is written
        spent = self._budget(chosen)
        sweep_dir = Path(str(self.config.hydra.sweep.dir))
        sweep_dir.mkdir(parents=True, exist_ok=True)
        progress = sweep_dir / f"progress-{os.getpid()}.log"
        progress.write_bytes(b"")
        # The sweep's context, handed to every cell (its parent run is added once tracking is prepared).
        self._context = SweepContext.of_command(str(self.config.experiment.name), argv_overrides(),
                                                axes_of(self.config))
        self._context = dataclasses.replace(self._context, progress=str(progress.resolve()))
        self._context.write(self._experiment_dir())
        returns: list[Any] = []
        loader = self.hydra_context.config_loader

        def sweep_grid() -> None:
            with Progress(progress, total), _own_errors_first(self):
                returns.extend(super(RagBenchSweeper, self).sweep(arguments))

        config = self.config
        search = SearchContext(grid=self._grid, launch=self._launcher(progress, returns), sweep_grid=sweep_grid,
                               compose=lambda job: loader.load_sweep_config(config, list(job)),
                               experiment_dir=self._experiment_dir(), sweep_id=self._context.sweep_id,
                               config=config)
        try:
            chosen.check(search)
            chosen.run(search)
            return returns
        finally:
            progress.unlink(missing_ok=True)
            budget.stop()
            if spent.limited:  # what it finished and what is left (exit 0: re-run to resume)
                print(spent.report(), flush=True)
            if spent.limited or spent.llm_calls:  # the invocation's record: its calls and $ spent
                spent.write(self._experiment_dir() / ".hydra" / f"budget-{self._context.sweep_id}.jsonl")

    def _budget(self, chosen: Strategy) -> budget.Budget:
        """Start ``budget.max_llm_calls`` / ``budget.usd`` / ``budget.seconds`` (docs/search.md,
        "Budgets"); without any, a budget that only counts (the invocation's record)."""
        assert self.config is not None
        limits = self.config.get("budget") or {}
        calls, seconds, usd = limits.get("max_llm_calls"), limits.get("seconds"), limits.get("usd")
        if calls is None and seconds is None and usd is None:
            return budget.start(None, None)
        # nan compares false with everything: "< 0" would let it through as no cap at all
        if any(v is not None and not (math.isfinite(float(v)) and float(v) >= 0) for v in (calls, seconds, usd)):
            raise ConfigError(f"budget.max_llm_calls={calls}, budget.seconds={seconds}, budget.usd={usd}: each must be "
                              "a number >= 0 (nan and inf are no cap: leave the budget out instead) -- fix: "
                              "budget.max_llm_calls=<calls> budget.seconds=<seconds> budget.usd=<dollars>")
        if not chosen.budgeted:
            raise ConfigError(f"budget.max_llm_calls / budget.seconds / budget.usd apply to search=grid only, not "
                              f"search={chosen.name} -- fix: search=grid, or drop the budget")
        if str(self.config.hydra.launcher.get("_target_", "")).split(".")[-1] not in ("RagBenchLauncher", "BasicLauncher"):
            raise ConfigError("budget.max_llm_calls / budget.seconds / budget.usd count in the sweep's process: "
                              "they need the default launcher -- fix: hydra/launcher=rag_bench, or drop the budget")
        if usd is not None:
            self._check_priced()
        return budget.start(None if calls is None else int(calls), None if seconds is None else float(seconds),
                            None if usd is None else float(usd))

    def _check_priced(self) -> None:
        """Under ``budget.usd`` every model a cell's config names (generator, judge, embedder,
        reranker: what the budget charges) must have a price (an unpriced one would make the budget
        meaningless): a ConfigError naming the model and the price key, before any cell runs. The
        cells composed are a covering subset of the grid (each value of each axis in one)."""
        from rag_bench.evaluation import prices

        assert self.config is not None and self.hydra_context is not None
        loader = self.hydra_context.config_loader
        for job in covering_subset(self._grid):
            cfg = loader.load_sweep_config(self.config, job)
            for stage in budget.PRICED_STAGES:
                name = _model_name(cfg, stage)
                if name is None:  # a stage naming no model: our own code (the extractive stand-in, bm25, mmr)
                    continue
                table = prices.from_config(cfg)
                if table is None:
                    raise ConfigError(f"budget.usd: {stage} model {name!r} has no price: the config has no "
                                      f"price table -- fix: +prices=example (conf/prices/example.yaml), or set "
                                      f"prices.models.{name}")
                _, missing = prices.rate(table, stage)
                if missing:
                    raise ConfigError(f"budget.usd: {missing}")

    def _strategy(self) -> Strategy:
        """The search strategy the ``search`` group's option names (conf/search/: its ``_target_``)."""
        assert self.config is not None
        return strategy(self.config.get("search"))

    def _launcher(self, progress: Path, returns: list[Any]) -> Callable[[list[list[str]]], list[Path]]:
        """``launch(batch)`` for a search strategy: runs a batch of the grid's jobs through the sweep's
        launcher with a progress bar and gives each cell's folder (a failed job raises its error, as
        in a grid), each batch's results collected in ``returns`` for Hydra. The first call
        validates the whole grid as a grid sweep's (and prepares tracking)."""
        assert self._context is not None
        context = context_override(self._context.sweep_id)
        validated = False

        def launch(batch: list[list[str]]) -> list[Path]:
            nonlocal validated
            assert self.launcher is not None
            if not validated:
                self.validate_batch_is_legal([[*job, context] for job in self._grid])
                validated = True
            if not batch:
                return []
            progress.write_bytes(b"")
            with Progress(progress, len(batch)):
                results = self.launcher.launch([[*job, context] for job in batch], initial_job_idx=self._job_idx)
            self._job_idx += len(batch)
            returns.append(results)
            raise_own_error(results)
            return [Path(r.return_value) for r in results]

        return launch


def raise_own_error(results: Any) -> None:
    """The first job of a batch that failed on rag_bench's own error (bad config or data: its message says
    what and the fix) raises it here, before Hydra's ``JobReturn.return_value`` writes "Error executing job
    with overrides: [...]" on stderr ahead of the clean ``error:`` line. Other failures are left to Hydra."""
    for r in results:
        if r.status == JobStatus.FAILED and isinstance(r._return_value, RagBenchError):
            raise r._return_value


@contextlib.contextmanager
def _own_errors_first(sweeper: RagBenchSweeper) -> Iterator[None]:
    """For the duration, every batch the launcher returns passes :func:`raise_own_error` first."""
    launcher = sweeper.launcher
    assert launcher is not None
    launch = launcher.launch

    def checked(job_overrides: Any, initial_job_idx: int) -> Any:
        results = launch(job_overrides, initial_job_idx=initial_job_idx)
        raise_own_error(results)
        return results

    launcher.launch = checked  # type: ignore[method-assign]
    try:
        yield
    finally:
        del launcher.launch  # the class's method again


def _model_name(cfg: Any, stage: str) -> str | None:
    """The ``model`` ``stage``'s config names (None: none, or the config has no such stage)."""
    node = cfg.get(stage)
    try:
        model = node.get("model") if node is not None and hasattr(node, "get") else None
    except Exception:  # a ??? model: the cell fails to build, with its own message
        return None
    return model if isinstance(model, str) and model else None
