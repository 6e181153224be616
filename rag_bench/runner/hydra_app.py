"""The Hydra application behind ``rag-bench run`` (config folder: the packaged ``rag_bench/conf/``;
a checkout links it as ``conf/``): the entry point of every cell's process, where the switches
are read and the cell's sweep context is found (:mod:`rag_bench.runner.sweep_context`)."""

from __future__ import annotations

from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig

from rag_bench import budget, switches
from rag_bench.errors import RagBenchError
from rag_bench.evaluation import prices
from rag_bench.memo import SharedWork
from rag_bench.runner.callbacks import context_of
from rag_bench.runner.config import CONF_DIR, register_configs
from rag_bench.runner.main import argv_overrides, cell_route
from rag_bench.runner.primary import check_primary_reachable
from rag_bench.runner.sweep_context import CONTEXT_KEY, SweepContext

register_configs()
# The work cells of this process share (Hydra calls main once per cell of a sweep): the one
# SharedWork of a `rag-bench run`, created here and passed to every cell.
WORK = SharedWork()


class PastHydra(BaseException):
    """A single run's own error (:class:`RagBenchError`: its message says what and the fix) carried
    past Hydra's ``run_job``, which catches every ``Exception`` and has ``JobReturn.return_value`` write
    "Error executing job with overrides: [...]" on stderr before re-raising it; ``rag-bench run``
    prints :attr:`error` as its clean ``error:`` line. A sweep's cells raise their errors as they
    are: the sweeper raises a batch's first one before Hydra reads the batch (rag_bench_sweeper)."""

    def __init__(self, error: RagBenchError) -> None:
        super().__init__(str(error))
        self.error = error


@hydra.main(version_base="1.3", config_path=str(CONF_DIR), config_name="config")
def main(cfg: DictConfig) -> Path | None:
    """Run one cell (Hydra calls this once per cell of a sweep) with its sweep's context (a single
    run's own: the command's experiment and overrides). rag_bench's sweeper checks a grid's primary
    measure; a single run is a grid of one. Returns the cell's folder (the job's return value), None
    for a cell the sweep's budget stopped (rag_bench.budget)."""
    switches.configure(switches.Switches.from_environment())
    single = HydraConfig.get().mode == RunMode.RUN
    try:
        return _cell(cfg, single)
    except RagBenchError as exc:
        if single:
            raise PastHydra(exc) from exc
        raise


def _cell(cfg: DictConfig, single: bool) -> Path | None:
    """The body of :func:`main`: the cell run with its sweep's context and budget."""
    if single:
        check_primary_reachable([cfg])
    sweep = context_of(cfg) or SweepContext.of_command(str(cfg.experiment.name), argv_overrides())
    spent = budget.current()
    if spent is not None:  # the cell's prices for budget.usd (and the invocation's record)
        table = prices.from_config(cfg)
        budget.set_rates({stage: prices.rate(table, stage)[0] for stage in budget.PRICED_STAGES})
    try:
        # the cell's folder (a halving sweep reads its results there); run_cell, or the search
        # strategy's route for its own jobs (halving's rounds)
        folder = cell_route(cfg)(cfg, WORK, sweep)
    except budget.BudgetReached:
        if spent is None:
            raise
        # budget.max_llm_calls / usd / seconds: the cell stops unfinished (no DONE); the sweeper says so
        spent.left.append(" ".join(o for o in HydraConfig.get().overrides.task if not o.startswith(f"{CONTEXT_KEY}=")))
        return None
    if spent is not None:
        spent.finished.append(str(folder))
    return folder
