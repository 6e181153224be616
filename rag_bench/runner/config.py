"""Config schemas (typos and wrong types fail at compose), range checks, building components.

The top-level schema is a dataclass registered in Hydra's ConfigStore as ``base_config``;
``conf/config.yaml`` extends it. Component groups (chunker, retriever, tracking) are free-form
nodes with a ``_target_``; :func:`build` checks their keys against the target's signature before
constructing it, so ``chunker.sise=300`` fails before any work with the list of valid keys.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import MissingMandatoryValue

from rag_bench.errors import ConfigError

REPO_ROOT = Path(__file__).resolve().parents[2]
CONF_DIR = REPO_ROOT / "conf"
DEMO_DATASET = REPO_ROOT / "datasets" / "kettleby"
# Keys that say where results go, not what is computed: excluded from the cell id.
NON_IDENTITY_KEYS = ("tracking", "output", "experiment")
COMPONENT_GROUPS = ("chunker", "embedder", "index", "retriever", "reranker", "generator", "judge", "tracking")


@dataclass
class DatasetConf:
    path: str | None = None  # None = the built-in demo set
    split: str = "test"  # BEIR qrels split


@dataclass
class PipelineConf:
    k: int = 5  # passages handed to the generator; a sweep axis
    include_archived: bool = False
    expand_parents: bool = False  # parent_child: hand the parent section instead of the child
    token_budget: int = 2000  # context budget (words + punctuation); passages are never cut


@dataclass
class EvalConf:
    ks: list[int] = field(default_factory=lambda: [1, 3, 5, 10])
    min_coverage: float = 0.5
    relevance: str = "overlap"
    gain: str = "linear"  # nDCG gain: linear (level) or exponential (2^level - 1)
    bootstrap_resamples: int = 1000
    seed: int = 0


@dataclass
class ExperimentConf:
    name: str = "default"


@dataclass
class OutputConf:
    root: str = "experiments"


@dataclass
class RagBenchConf:
    dataset: DatasetConf = field(default_factory=DatasetConf)
    pipeline: PipelineConf = field(default_factory=PipelineConf)
    eval: EvalConf = field(default_factory=EvalConf)
    experiment: ExperimentConf = field(default_factory=ExperimentConf)
    output: OutputConf = field(default_factory=OutputConf)
    chunker: Any = None
    embedder: Any = None
    index: Any = None
    retriever: Any = None
    reranker: Any = None
    generator: Any = None
    judge: Any = None
    tracking: Any = None


def register_configs() -> None:
    """Register the schema (``base_config``) and the sweeper (``hydra/sweeper=rag_bench``) that
    ``conf/config.yaml`` lists in its defaults."""
    from rag_bench.runner.sweeper import RagBenchSweeperConf

    store = ConfigStore.instance()
    store.store(name="base_config", node=RagBenchConf)
    store.store(group="hydra/sweeper", name="rag_bench", node=RagBenchSweeperConf, provider="rag_bench")


def validate(cfg: DictConfig) -> None:
    """Range checks the type schema cannot express; raises ConfigError naming the key."""
    ks = list(cfg.eval.ks)
    if not ks or any(isinstance(k, bool) or not isinstance(k, int) or k <= 0 for k in ks):
        raise ConfigError(f"eval.ks must be a non-empty list of integers > 0, got {ks} -- fix: eval.ks=[1,3,5,10]")
    if cfg.pipeline.token_budget <= 0:
        raise ConfigError(f"pipeline.token_budget must be > 0, got {cfg.pipeline.token_budget} -- fix: 2000")
    if cfg.pipeline.k <= 0:
        raise ConfigError(f"pipeline.k must be > 0, got {cfg.pipeline.k} -- fix: pipeline.k=5")
    mc = cfg.eval.min_coverage
    if not (math.isfinite(mc) and 0 < mc <= 1):
        raise ConfigError(f"eval.min_coverage must be in (0, 1], got {mc} -- fix: eval.min_coverage=0.5")
    if cfg.eval.relevance not in ("overlap", "section", "facts"):
        raise ConfigError(f"eval.relevance must be overlap, section or facts, got {cfg.eval.relevance!r}")
    if cfg.eval.gain not in ("linear", "exponential"):
        raise ConfigError(f"eval.gain must be linear or exponential, got {cfg.eval.gain!r} -- fix: eval.gain=linear")
    if cfg.eval.bootstrap_resamples < 1:
        raise ConfigError(f"eval.bootstrap_resamples must be >= 1, got {cfg.eval.bootstrap_resamples}")
    for group in COMPONENT_GROUPS:
        node = cfg.get(group)
        if not isinstance(node, DictConfig) or "_target_" not in node:
            raise ConfigError(f"config group {group!r} is not set -- fix: add {group}=<name> (see conf/{group}/)")


def _import_target(target: str, group: str) -> Any:
    if not isinstance(target, str) or not target.startswith("rag_bench."):
        raise ConfigError(f"{group}._target_ must name a class inside rag_bench, got {target!r} "
                          "-- fix: use one of the configs in conf/" + group)
    module, _, name = target.rpartition(".")
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"{group}._target_ {target!r} cannot be imported ({exc}) -- fix: check the spelling")


def wants(node: DictConfig, group: str, name: str) -> bool:
    """Whether the component of ``node`` takes a ``name`` argument (e.g. an injected embedder)."""
    cls = _import_target(node.get("_target_"), group)
    return name in inspect.signature(cls).parameters


def build(node: DictConfig, group: str, **inject: Any) -> Any:
    """Construct the component described by ``node`` (``_target_`` + keyword arguments).

    ``name`` is metadata (the option's name) and is not passed on. Unknown keys and values of
    the wrong basic type raise :class:`ConfigError` naming ``group.key``. ``inject`` holds
    objects built from other groups (``embedder=``, ``index=``), passed only to components whose
    signature asks for them.
    """
    try:
        raw = OmegaConf.to_container(node, resolve=True, throw_on_missing=True)
    except MissingMandatoryValue as exc:
        key = getattr(exc, "full_key", "") or group
        raise ConfigError(f"{key} must be set (it is ??? in conf/{group}/) -- fix: pass {key}=<value>") from exc
    params: dict[str, Any] = {str(k): v for k, v in raw.items()}  # type: ignore[union-attr]
    target = params.pop("_target_", None)
    params.pop("name", None)
    cls = _import_target(target, group)
    sig = inspect.signature(cls)
    valid = [p for p in sig.parameters if p != "self"]
    for key, value in params.items():
        if key not in sig.parameters or key in inject:
            raise ConfigError(f"{group}.{key} is not a parameter of {target} -- fix: use one of {valid}")
        default = sig.parameters[key].default
        if default is not inspect.Parameter.empty and default is not None and value is not None:
            want = type(default)
            ok = isinstance(value, want) or (want is float and isinstance(value, int)) or \
                (want is tuple and isinstance(value, list))
            if not ok or (want is int and isinstance(value, bool)):
                raise ConfigError(f"{group}.{key} must be {want.__name__}, got {value!r} "
                                  f"-- fix: e.g. {group}.{key}={default!r}")
            if isinstance(value, float) and not math.isfinite(value):
                raise ConfigError(f"{group}.{key} must be finite, got {value!r}")
    params.update({k: v for k, v in inject.items() if k in sig.parameters})
    return cls(**params)


def cell_identity(cfg: DictConfig, dataset_fingerprint: str) -> dict[str, Any]:
    """The part of the config that determines results, plus the dataset's content fingerprint.

    The dataset *path* is replaced by its fingerprint: moving a dataset keeps cell ids, editing
    it changes them.
    """
    data: dict[str, Any] = {str(k): v for k, v in OmegaConf.to_container(cfg, resolve=True).items()}  # type: ignore[union-attr]
    for key in NON_IDENTITY_KEYS:
        data.pop(key, None)
    data["dataset"] = {k: v for k, v in data["dataset"].items() if k != "path"}
    data["dataset"]["fingerprint"] = dataset_fingerprint
    return data


def cell_id(cfg: DictConfig, dataset_fingerprint: str) -> str:
    """Short stable hash of :func:`cell_identity`."""
    blob = json.dumps(cell_identity(cfg, dataset_fingerprint), sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def dataset_path(cfg: DictConfig) -> Path:
    """``dataset.path`` resolved (None = the demo set)."""
    return Path(cfg.dataset.path).expanduser() if cfg.dataset.path else DEMO_DATASET
