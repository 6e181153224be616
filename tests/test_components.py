"""One stage list and one protocol per stage: every shipped option implements its stage."""

from __future__ import annotations

import importlib
from pathlib import Path

import numpy as np
import pytest
import yaml

from rag_bench import components
from rag_bench.errors import ConfigError
from rag_bench.runner.config import CONF_DIR, PROTOCOLS, check_component


def _options():
    for group in components.COMPONENT_GROUPS:
        for f in sorted((Path(CONF_DIR) / group).glob("*.yaml")):
            target = (yaml.safe_load(f.read_text()) or {}).get("_target_")
            if target:
                yield group, f.stem, target


@pytest.mark.parametrize(("group", "option", "target"), list(_options()))
def test_every_option_implements_its_stage_protocol(group, option, target):
    module, _, name = target.rpartition(".")
    cls = getattr(importlib.import_module(module), name)
    assert components.missing_methods(cls, PROTOCOLS.get(group)) == [], f"conf/{group}/{option}.yaml"
    check_component(cls, group, target)
    assert components.is_null(object.__new__(cls)) == (option == "none")


def test_every_config_group_is_a_stage_or_tracking():
    groups = {p.name for p in Path(CONF_DIR).iterdir() if p.is_dir() and p.name not in ("experiment", "gate", "hydra", "prices",
                                                                                          "dataset", "cluster", "search", "drafter")}
    assert groups == set(components.COMPONENT_GROUPS) == set(PROTOCOLS)


def test_every_search_mode_is_a_strategy_built_from_its_own_settings():
    """conf/search/ is a component group above the runner: each option's _target_ implements
    rag_bench.search.base.Strategy and its keys are the constructor's (built as any component)."""
    from omegaconf import OmegaConf

    from rag_bench.search.base import Strategy, strategy

    modes = sorted((Path(CONF_DIR) / "search").glob("*.yaml"))
    assert [f.stem for f in modes] == ["grid", "halving", "optuna", "staged"]
    for f in modes:
        built = strategy(OmegaConf.create(yaml.safe_load(f.read_text())))
        assert components.missing_methods(type(built), Strategy) == [] and built.name == f.stem


def test_a_class_missing_a_protocol_method_is_named():
    class HalfRetriever:
        def fit(self, chunks):
            return None

    assert components.missing_methods(HalfRetriever, PROTOCOLS.get("retriever")) == ["search"]
    with pytest.raises(ConfigError, match="missing search"):
        check_component(HalfRetriever, "retriever", "x.HalfRetriever")


def test_optional_capabilities_fall_back_to_the_declared_default():
    class Plain:
        depth = 3

        def scores(self, questions, shortlists):
            return [np.zeros(len(s)) for s in shortlists]

    assert components.capability(Plain(), PROTOCOLS.get("reranker"), "prefetch")([], []) is None
    assert components.capability(object(), PROTOCOLS.get("retriever"), "ann_probe")([], None) is None

    class Probed:
        def ann_probe(self, questions, access):
            return "probe"

    assert components.capability(Probed(), PROTOCOLS.get("retriever"), "ann_probe")([], None) == "probe"
    with pytest.raises(AttributeError, match="not an optional capability"):
        components.capability(Plain(), PROTOCOLS.get("reranker"), "scores")


def test_optional_methods_are_not_required():
    assert "prefetch" not in components.required_methods(PROTOCOLS.get("reranker"))
    assert "ann_probe" not in components.required_methods(PROTOCOLS.get("retriever"))
    assert "usage" not in components.required_methods(PROTOCOLS.get("embedder"))
