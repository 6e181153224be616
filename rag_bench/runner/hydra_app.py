"""The Hydra application behind ``rag-bench run`` (config folder: the packaged ``rag_bench/conf/``;
a checkout links it as ``conf/``)."""

from __future__ import annotations

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig

from rag_bench.memo import SharedWork
from rag_bench.reporting.decide import check_primary_reachable
from rag_bench.runner.config import CONF_DIR, register_configs
from rag_bench.runner.main import run_cell

register_configs()
# The work cells of this process share (Hydra calls main once per cell of a sweep): the one
# SharedWork of a `rag-bench run`, created here and passed to every cell.
WORK = SharedWork()


@hydra.main(version_base="1.3", config_path=str(CONF_DIR), config_name="config")
def main(cfg: DictConfig) -> None:
    """Run one cell (Hydra calls this once per cell of a sweep; rag_bench's sweeper checks the
    grid's primary measure, a single run is a grid of one)."""
    if HydraConfig.get().mode == RunMode.RUN:
        check_primary_reachable([cfg])
    run_cell(cfg, WORK)
