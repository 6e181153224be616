"""A sweep's grid outside the sweep: the cells of ``rag-bench run -m ARGS`` expanded and composed as
the sweeper does, for the commands that look at a grid before running it (``--plan``,
``rag-bench embed``, the SLURM launcher's grouping).
"""

from __future__ import annotations

from collections.abc import Sequence

from omegaconf import DictConfig, OmegaConf


def grid_overrides(args: Sequence[str]) -> tuple[list[str], list[list[str]]]:
    """``(the overrides of the whole command, one override list per cell)`` of ``rag-bench run -m ARGS``:
    the experiment's ``hydra.sweeper.params`` first, the command's overrides after (they win), expanded
    stage by stage as the sweeper does."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from rag_bench.runner.config import CONF_DIR, register_configs
    from rag_bench.runner.sweeper import expand

    register_configs()
    parser = OverridesParser.create()
    given = [a for a in args if a not in ("-m", "--multirun")]
    parsed = parser.parse_overrides(given)
    fixed = [str(o.input_line) for o in parsed if not o.is_sweep_override()]
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
            master = compose("config", overrides=fixed, return_hydra_config=True)
    finally:
        GlobalHydra.instance().clear()
    params = OmegaConf.select(master, "hydra.sweeper.params") or {}
    from_config = [f"{k}={v}" for k, v in params.items()]
    keyed: dict[str, str] = {}
    for line in [*from_config, *given]:
        keyed.pop(line.split("=", 1)[0], None)  # the command line wins, as in Hydra's sweeper
        keyed[line.split("=", 1)[0]] = line
    overrides = list(keyed.values())
    cells = expand(parser.parse_overrides(overrides))
    return overrides, cells


def compose_cells(cells: list[list[str]]) -> list[DictConfig]:
    """The config of every cell (hydra keys aside)."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from rag_bench.runner.config import CONF_DIR

    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
            return [compose("config", overrides=c) for c in cells]
    finally:
        GlobalHydra.instance().clear()


def uses_embedder(cfg: DictConfig) -> bool:
    """Whether a cell of ``cfg`` embeds: its retriever, chunker or (a real) reranker takes an embedder."""
    from rag_bench.components import is_null
    from rag_bench.runner.config import wants

    uses = wants(cfg.retriever, "retriever", "embedder") or wants(cfg.chunker, "chunker", "embedder")
    reranker = cfg.get("reranker")
    if reranker is not None and reranker.get("_target_") and not is_null(reranker):
        uses = uses or wants(reranker, "reranker", "embedder")
    return bool(uses)
