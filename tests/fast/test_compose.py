"""Compose once (rag_bench.fast.compose): every config of a grid is exactly what Hydra composes."""

from __future__ import annotations

import pickle
from typing import Any

import pytest
from hydra._internal.config_loader_impl import ConfigLoaderImpl
from hydra._internal.utils import create_config_search_path
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import ConfigCompositionException, HydraException
from hydra.types import RunMode
from omegaconf import DictConfig, ListConfig, OmegaConf, open_dict

from rag_bench.fast.compose import ComposeOnce
from rag_bench.runner.config import CONF_DIR, register_configs
from rag_bench.runner.sweeper import expand

register_configs()


def test_the_comparison_sees_a_difference():
    plain, _ = loaders()
    master = plain.load_configuration("config", [], RunMode.MULTIRUN)
    with pytest.raises(AssertionError):
        same(plain.load_sweep_config(master, ["pipeline.k=3"]), plain.load_sweep_config(master, ["pipeline.k=4"]))


def loaders() -> tuple[ConfigLoaderImpl, ComposeOnce]:
    return (ConfigLoaderImpl(create_config_search_path(str(CONF_DIR))),
            ComposeOnce(ConfigLoaderImpl(create_config_search_path(str(CONF_DIR)))))


def flags(node: Any, path: str = "") -> dict[str, tuple[Any, ...]]:
    """Every node's flags and type: what equal YAML would not show."""
    out = {path: (type(node).__name__, node._get_flag("struct"), node._get_flag("readonly"),
                  node._metadata.object_type, node._metadata.ref_type)}
    if isinstance(node, DictConfig) and not node._is_missing() and not node._is_none():
        for k, v in node.items_ex(resolve=False):
            child = node._get_node(k)
            if isinstance(child, (DictConfig, ListConfig)):
                out.update(flags(child, f"{path}.{k}"))
            else:
                out[f"{path}.{k}"] = (type(child).__name__, child._metadata.ref_type, child._metadata.optional)
    elif isinstance(node, ListConfig) and not node._is_missing() and not node._is_none():
        for i in range(len(node)):
            child = node._get_node(i)
            if isinstance(child, (DictConfig, ListConfig)):
                out.update(flags(child, f"{path}[{i}]"))
    return out


def same(a: DictConfig, b: DictConfig) -> None:
    assert OmegaConf.to_yaml(a) == OmegaConf.to_yaml(b)  # `--cfg all`, unresolved
    job_a, job_b = a.copy(), b.copy()
    for c in (job_a, job_b):
        with open_dict(c):
            del c["hydra"]
    assert OmegaConf.to_yaml(job_a, resolve=True) == OmegaConf.to_yaml(job_b, resolve=True)  # the cell's config.yaml
    assert a.hydra.runtime.choices == b.hydra.runtime.choices
    assert a.hydra.overrides == b.hydra.overrides and a.hydra.job.override_dirname == b.hydra.job.override_dirname
    assert flags(a) == flags(b)


def sweep(*args: str, hydra: tuple[str, ...] = ()) -> tuple[int, ComposeOnce]:
    """Compose the grid ``args`` with both loaders; return the number of cells and the wrapper."""
    plain, once = loaders()
    master = plain.load_configuration("config", [*hydra, *args], RunMode.MULTIRUN)
    grid = expand(OverridesParser.create().parse_overrides(list(args)))
    for job in grid:
        same(plain.load_sweep_config(master, job), once.load_sweep_config(master, job))
    return len(grid), once


def test_a_grid_composes_exactly_as_hydra_composes_it():
    n, once = sweep("chunker=fixed,section", "retriever=bm25,hybrid", "reranker=dense,mmr", "reranker.depth=10,50",
                    "pipeline.k=3,5", "eval.ks=[1,5]", "tracking=none", "+dataset.extra=x")
    assert n == 32
    # One composition per distinct group choice (2 x 2 x 2); the other 24 cells are copies.
    assert once.compositions == 8 and once.copies == 24


def test_presets_hydra_overrides_and_searchpath_compose_exactly(tmp_path):
    conf = tmp_path / "reranker"
    conf.mkdir()
    (conf / "dense_10.yaml").write_text("defaults: [dense]\nname: dense_10\ndepth: 10\n")
    n, once = sweep("+experiment=retriever_comparison,demo", "reranker=none,dense_10", "pipeline.k=3,5",
                    hydra=(f"hydra.searchpath=[file://{tmp_path}]", "hydra/launcher=joblib", "hydra.verbose=true"))
    assert n == 8 and once.compositions == 4


def test_an_interpolated_defaults_entry_composes_exactly(tmp_path):
    """Hydra's choices map, skipped for defaults lists without an interpolated entry, is made for
    one that has one (``- /show: ${pick}``)."""
    for group, text in (("experiment/interp.yaml", "# @package _global_\ndefaults:\n  - /pick: bm25\n"
                                                   "  - /show: ${pick}\n"),
                        ("pick/bm25.yaml", "# @package chunker.pick\npicked: bm25\n"),
                        ("show/bm25.yaml", "# @package chunker.show\nshown: bm25\n")):
        (tmp_path / group).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / group).write_text(text)
    hydra = (f"hydra.searchpath=[file://{tmp_path}]",)
    n, once = sweep("+experiment=interp", "pipeline.k=3,5", hydra=hydra)
    assert n == 2 and once.compositions == 1
    plain, _ = loaders()
    master = plain.load_configuration("config", [*hydra, "+experiment=interp"], RunMode.MULTIRUN)
    cfg = once.load_sweep_config(master, [*hydra, "+experiment=interp"])
    assert cfg.chunker.show.shown == "bm25" and cfg.hydra.runtime.choices.show == "bm25"


def test_a_config_served_twice_is_never_shared():
    plain, once = loaders()
    master = plain.load_configuration("config", ["pipeline.k=3,5"], RunMode.MULTIRUN)
    first = once.load_sweep_config(master, ["pipeline.k=3"])
    first.pipeline.k = 99
    first.hydra.overrides.task.append("x=1")
    second = once.load_sweep_config(master, ["pipeline.k=5"])
    same(second, plain.load_sweep_config(master, ["pipeline.k=5"]))
    assert once.compositions == 1


@pytest.mark.parametrize("job", [["pipeline.kk=3"], ["retriever=bm52"], ["pipeline.k=[1"], ["chunker.max_chars=100"]])
def test_bad_overrides_fail_as_hydra_fails(job):
    plain, once = loaders()
    master = plain.load_configuration("config", [], RunMode.MULTIRUN)
    once.load_sweep_config(master, ["chunker=fixed"])  # a template exists: errors still come from Hydra's code
    errors = []
    for loader in (plain, once):
        with pytest.raises(HydraException) as info:
            loader.load_sweep_config(master, ["chunker=fixed", *job])
        errors.append((type(info.value), str(info.value)))
    assert errors[0] == errors[1]


def test_a_sweep_override_is_refused_as_hydra_refuses_it():
    plain, once = loaders()
    with pytest.raises(ConfigCompositionException, match="multirun"):
        once.load_configuration("config", ["pipeline.k=3,5"], RunMode.RUN)


def test_a_command_line_with_sweep_overrides_is_composed_once(monkeypatch):
    plain, once = loaders()
    calls = []
    real = ConfigLoaderImpl.load_configuration
    monkeypatch.setattr(ConfigLoaderImpl, "load_configuration", lambda self, *a, **k: calls.append(a) or real(self, *a, **k))
    line = ["chunker=fixed,section", "pipeline.k=3,5"]
    # As Hydra.get_mode, then Hydra.multirun: the second gets a copy of the first composition.
    first = once.load_configuration("config", line, RunMode.MULTIRUN, validate_sweep_overrides=False)
    first.pipeline.k = 99
    second = once.load_configuration("config", line, RunMode.MULTIRUN)
    assert len(calls) == 1
    same(second, real(plain, "config", line, RunMode.MULTIRUN))
    # The check Hydra skips in get_mode still runs, also on a kept composition.
    bad = ["hydra.job.chdir=true,false"]
    once.load_configuration("config", bad, RunMode.MULTIRUN, validate_sweep_overrides=False)
    with pytest.raises(ConfigCompositionException, match="Sweeping over Hydra's configuration"):
        once.load_configuration("config", bad, RunMode.MULTIRUN)


def test_hydra_composes_through_it_only_inside_in_hydra():
    from hydra._internal.hydra import Hydra
    from hydra.core.global_hydra import GlobalHydra

    from rag_bench.fast.compose import in_hydra

    path = create_config_search_path(str(CONF_DIR))
    try:
        with in_hydra():
            assert isinstance(Hydra.create_main_hydra2("t", path).config_loader, ComposeOnce)
        GlobalHydra.instance().clear()
        assert type(Hydra.create_main_hydra2("t", path).config_loader) is ConfigLoaderImpl
    finally:
        GlobalHydra.instance().clear()


def test_pickled_for_a_worker_it_ships_without_its_caches():
    plain, once = loaders()
    master = plain.load_configuration("config", [], RunMode.MULTIRUN)
    once.load_sweep_config(master, ["chunker=fixed"])
    shipped = pickle.loads(pickle.dumps(once))
    assert shipped.compositions == 0 and not shipped._templates
    same(shipped.load_sweep_config(master, ["chunker=fixed"]), plain.load_sweep_config(master, ["chunker=fixed"]))


def test_the_sweeper_hands_the_launcher_the_compose_once_loader():
    from hydra.types import HydraContext

    from hydra_plugins.rag_bench_sweeper.rag_bench_sweeper import RagBenchSweeper

    plain, _ = loaders()
    config = plain.load_configuration("config", [], RunMode.MULTIRUN)
    sweeper = RagBenchSweeper()
    sweeper.setup(hydra_context=HydraContext(config_loader=plain, callbacks=None), task_function=lambda c: None,
                  config=config)  # type: ignore[arg-type]
    assert isinstance(sweeper.launcher.hydra_context.config_loader, ComposeOnce)
    assert isinstance(sweeper.hydra_context.config_loader, ComposeOnce)



def test_value_overrides_of_what_the_template_bakes_in_compose_exactly():
    """Steps Hydra runs after the value overrides (choices, runtime, job name) are done once per
    template; a value override of one of those fields makes every step run after it, as in Hydra."""
    for hydra in [("hydra.job.name=a", "hydra.job.chdir=true", "+hydra.job.extra=1"),
                  ("+hydra.runtime.choices.extra=x", "hydra.verbose=true"), ("hydra.job.chdir=true",)]:
        n, once = sweep("pipeline.k=3,5", "chunker=fixed,section", hydra=hydra)
        assert n == 4 and once.compositions == 2
