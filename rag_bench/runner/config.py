"""Config schemas (typos and wrong types fail at compose), range checks, building components.

The top-level schema is a dataclass registered in Hydra's ConfigStore as ``base_config``;
``conf/config.yaml`` extends it. Component groups (chunker, retriever, tracking) are free-form
nodes with a ``_target_``; :func:`build` checks their keys against the target's signature before
constructing it, so ``chunker.sise=300`` fails before any work with the list of valid keys.
"""

from __future__ import annotations

import collections.abc
import difflib
import functools
import hashlib
import importlib
import inspect
import json
import math
import re
import types
import typing
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import MissingMandatoryValue

from rag_bench.chunking.base import Chunker
from rag_bench.components import COMPONENT_GROUPS, PARSER, QUERY, missing_methods
from rag_bench.digests import path_digest, source_digest
from rag_bench.embedding.base import Embedder
from rag_bench.errors import ConfigError, RagBenchError
from rag_bench.evaluation import measures
from rag_bench.evaluation.evaluation import chosen, scorer_names
from rag_bench.generation.base import Generator
from rag_bench.generation.prompt import HISTORY_CHARS, HISTORY_TURNS, HistoryWindow
from rag_bench.indexing.base import VectorIndex
from rag_bench.judging.base import Judge
from rag_bench.parsing.base import Parser
from rag_bench.query.base import QueryTransform
from rag_bench.registry import Registry
from rag_bench.reranking.base import Reranker, check_depth
from rag_bench.retrieval.base import Retriever
from rag_bench.tracking.base import Tracker

# Both ship inside the package (package data), so a plain `pip install` has them; the checkout's
# top-level conf/ and datasets/kettleby are relative symlinks to these folders.
PACKAGE_DIR = Path(__file__).resolve().parents[1]
CONF_DIR = PACKAGE_DIR / "conf"
DEMO_DATASET = PACKAGE_DIR / "datasets" / "kettleby"
# Keys that say where results go, what the results cost (prices: they change no output) or how a
# sweep searches the grid (search: which cells, never how one is computed) or what it may spend
# (budget), not what is computed: excluded from the cell id.
NON_IDENTITY_KEYS = ("tracking", "output", "experiment", "sweep", "prices", "search", "budget")
EXPERIMENT_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}")
MAX_BOOTSTRAP_RESAMPLES = 100_000
# The protocol each config group's components implement (checked before a component is built).
PROTOCOLS: Registry[type] = Registry("component group", {
    "parser": Parser, "chunker": Chunker, "embedder": Embedder, "index": VectorIndex, "retriever": Retriever, "reranker": Reranker,
    "query": QueryTransform, "generator": Generator, "judge": Judge, "tracking": Tracker})
# The value tables eval.* settings choose from: each name with what it means.
RELEVANCE: Registry[str] = Registry("eval.relevance", {
    "overlap": "a chunk overlapping an evidence span by eval.min_coverage", "section": "a chunk inside the "
    "evidence's section", "facts": "a chunk holding all the question's facts"})
GAIN: Registry[str] = Registry("eval.gain", {"linear": "nDCG gain = grade", "exponential": "nDCG gain = 2^grade - 1"})
UNITS: Registry[str] = Registry("eval.unit", {"chunk": "ranking measures over chunks", "document": "over documents (BEIR-comparable)",
                               "both": "both, in two sections"})
ANSWER_MATCH: Registry[str] = Registry("eval.answer_match", {
    "auto": "facts present when the question has facts, else contains", "contains": "a reference occurs in the "
    "answer", "f1": "SQuAD token F1 >= eval.f1_threshold", "em": "SQuAD exact match", "facts": "every fact occurs"})
CLAIMS_JUDGE: Registry[str] = Registry("eval.claims_judge", {
    "lexical": "the claim's words, numbers, names and negation in one passage (rag_bench.metrics.support)",
    "semantic": "the lexical findings and the claim's best cosine with a passage sentence or window, weighed by a "
    "model fitted on people's judgments; ambiguous evidence undecided (rag_bench.metrics.semantic)"})
# Bootstrap memory: resample indices (int64) and resampled values (float64), per question.
MAX_BOOTSTRAP_BYTES = 4 << 30


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
    history_turns: int = HISTORY_TURNS  # a conversation question's last turns in the prompt (0: none)
    history_chars: int = HISTORY_CHARS  # ... the newest of them that fit in this many characters


@dataclass
class EvalConf:
    ks: list[int] = field(default_factory=lambda: [1, 3, 5, 10])
    min_coverage: float = 0.5
    relevance: str = "overlap"
    gain: str = "linear"  # nDCG gain: linear (level) or exponential (2^level - 1)
    # Which answer-matching measure is `correct`: auto (facts when the question has facts, else
    # contains = a reference occurs in the answer), contains, f1, em or facts.
    answer_match: str = "auto"
    f1_threshold: float = 0.5  # token F1 needed for answer_match=f1
    unit: str = "chunk"  # ranking measures over chunks, documents (BEIR-comparable) or both
    relevance_level: int = 1  # binary measures count grades >= this (trec_eval -l)
    bootstrap_resamples: int = 1000
    seed: int = 0
    # The scorers the evaluation runs (rag_bench.evaluation.measures.SCORERS): all, or names joined
    # by commas (a string, not a list: every cell's composition pays for each node of the schema).
    scorers: str = "all"
    # The claims scorer's judge: lexical (words, numbers, names, negation) or semantic (also the
    # packaged embedding model's cosine, weighed by a model fitted on people's judgments; issue 55).
    claims_judge: str = "lexical"


@dataclass
class ExperimentConf:
    name: str = "default"
    # The measure that ranks the experiment's cells everywhere (rag_bench.decision.decide): auto =
    # generation/correct when answers are generated, else retrieval/ndcg@10. Not part of a cell id.
    primary: str = "auto"
    # The cell the best is compared with (rag_bench.decision.decide.baseline_of): a cell's name as
    # the leaderboard prints it, or its id. Unset: the config's defaults cell, else the grid's
    # first cell. Not part of a cell id.
    baseline: str | None = None


@dataclass
class OutputConf:
    root: str = "experiments"


@dataclass
class ModelPriceConf:
    """One model's prices (``prices.models.<model>``), each null = not priced that way. A model
    with no token, text or call price runs on our machine: priced on its stage's measured seconds
    at ``usd_per_hour`` (null: ``prices.usd_per_hour``)."""

    usd_per_1m_input_tokens: float | None = None  # generator, judge: prompt tokens
    usd_per_1m_output_tokens: float | None = None  # generator, judge: completion tokens
    usd_per_1k_texts: float | None = None  # embedder: texts sent (their tokens are not counted)
    usd_per_1k_calls: float | None = None  # reranker service: one call per question reranked
    usd_per_hour: float | None = None  # local: the machine this model runs on


@dataclass
class PricesConf:
    """What the run costs in money (rag_bench.evaluation.prices): per model by the name its stage's
    config gives (``model``, else the option's ``name``), and local compute by the hour. Never part
    of the cell id: prices change no output. conf/prices/example.yaml is an example table."""

    usd_per_hour: float | None = None  # local compute (retrieval, our rerankers, local models)
    models: dict[str, ModelPriceConf] = field(default_factory=dict)


@dataclass
class BudgetConf:
    """What one ``rag-bench run -m`` invocation may spend (:mod:`rag_bench.budget`, docs/search.md,
    "Budgets"); null: no cap. Neither part of a cell id nor of its stored config."""

    max_llm_calls: int | None = None  # LLM calls (generator, judge) this invocation may make
    seconds: float | None = None  # wall seconds after which this invocation starts no new cell
    usd: float | None = None  # US dollars (prices.*) this invocation's model calls may cost


@dataclass
class RagBenchConf:
    dataset: DatasetConf = field(default_factory=DatasetConf)
    pipeline: PipelineConf = field(default_factory=PipelineConf)
    eval: EvalConf = field(default_factory=EvalConf)
    experiment: ExperimentConf = field(default_factory=ExperimentConf)
    output: OutputConf = field(default_factory=OutputConf)
    prices: PricesConf = field(default_factory=PricesConf)
    # The id of the sweep this cell belongs to (its context: rag_bench.runner.sweep_context), set by the
    # sweeper for each job; neither part of the cell id nor of its stored config.
    sweep: str | None = None
    budget: BudgetConf = field(default_factory=BudgetConf)
    search: Any = None  # how a sweep searches its grid: a component (conf/search/, _target_ + settings)
    parser: Any = None
    query: Any = None  # what the retriever searches for (conf/query/; none when unset)
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
    if not OmegaConf.has_resolver("rag_bench.folder"):
        # hydra.sweep.dir is ${output.root}/${rag_bench.folder:${experiment.name}}/.hydra: Hydra makes
        # that folder before any cell runs, so the name is checked as the path is resolved.
        OmegaConf.register_new_resolver("rag_bench.folder", _folder_name)
    store.store(group="hydra/sweeper", name="rag_bench", node=RagBenchSweeperConf, provider="rag_bench")


def validate(cfg: DictConfig) -> None:
    """Range checks the type schema cannot express; raises ConfigError naming the key."""
    ks = list(cfg.eval.ks)
    if not ks or any(isinstance(k, bool) or not isinstance(k, int) or k <= 0 for k in ks):
        raise ConfigError(f"eval.ks must be a non-empty list of integers > 0, got {ks} -- fix: eval.ks=[1,3,5,10]")
    if cfg.pipeline.token_budget <= 0:
        raise ConfigError(f"pipeline.token_budget must be > 0, got {cfg.pipeline.token_budget} -- fix: 2000")
    for key, default in (("history_turns", HISTORY_TURNS), ("history_chars", HISTORY_CHARS)):
        if cfg.pipeline[key] < 0:
            raise ConfigError(f"pipeline.{key} must be >= 0, got {cfg.pipeline[key]} -- fix: pipeline.{key}={default} "
                              "(0 shows the generator no history)")
    if cfg.pipeline.k <= 0:
        raise ConfigError(f"pipeline.k must be > 0, got {cfg.pipeline.k} -- fix: pipeline.k=5")
    mc = cfg.eval.min_coverage
    if not (math.isfinite(mc) and 0 < mc <= 1):
        raise ConfigError(f"eval.min_coverage must be in (0, 1], got {mc} -- fix: eval.min_coverage=0.5")
    RELEVANCE.check(cfg.eval.relevance)
    GAIN.check(cfg.eval.gain)
    UNITS.check(cfg.eval.unit)
    if isinstance(cfg.eval.relevance_level, bool) or not 1 <= cfg.eval.relevance_level <= 1000:
        raise ConfigError(f"eval.relevance_level must be an integer in [1, 1000], got {cfg.eval.relevance_level} "
                          "-- fix: eval.relevance_level=1 (binary measures count grades >= it)")
    ANSWER_MATCH.check(cfg.eval.answer_match)
    CLAIMS_JUDGE.check(cfg.eval.claims_judge)
    f1 = cfg.eval.f1_threshold
    if not (math.isfinite(f1) and 0 < f1 <= 1):
        raise ConfigError(f"eval.f1_threshold must be in (0, 1], got {f1} -- fix: eval.f1_threshold=0.5")
    if not 1 <= cfg.eval.bootstrap_resamples <= MAX_BOOTSTRAP_RESAMPLES:
        raise ConfigError(f"eval.bootstrap_resamples must be in [1, {MAX_BOOTSTRAP_RESAMPLES}], got "
                          f"{cfg.eval.bootstrap_resamples} -- fix: eval.bootstrap_resamples=1000 (10000 for "
                          "publication-grade intervals)")
    if cfg.eval.seed < 0:
        raise ConfigError(f"eval.seed must be >= 0, got {cfg.eval.seed} -- fix: eval.seed=0")
    check_experiment_name(cfg.experiment.name)
    check_prices(cfg.get("prices"))
    chosen(scorer_names(cfg.eval.scorers))
    measures.check_primary(str(cfg.experiment.primary))
    for group in COMPONENT_GROUPS:
        node = cfg.get(group)
        if group in (PARSER, QUERY) and node is None:
            continue  # a config composed without the group reads its documents as parser=auto, searches as query=none
        if not isinstance(node, DictConfig) or "_target_" not in node:
            raise ConfigError(f"config group {group!r} is not set -- fix: add {group}=<name> (see conf/{group}/)")


def check_prices(prices: Any) -> None:
    """Every price of ``prices`` is a finite number >= 0 or null (unpriced); ConfigError naming the key."""
    if prices is None:
        return
    found = [("prices.usd_per_hour", prices.get("usd_per_hour"))]
    known = [f.name for f in fields(ModelPriceConf)]
    for model, entry in (prices.get("models") or {}).items():
        for k, v in entry.items():
            if k not in known:  # `+prices.models.m.key=...` adds a key the schema would refuse from a file
                near = difflib.get_close_matches(str(k), known, n=1)
                raise ConfigError(f"prices.models.{model}.{k} is not a price -- fix: use one of {known}"
                                  + (f" (did you mean prices.models.{model}.{near[0]}?)" if near else ""))
            found.append((f"prices.models.{model}.{k}", v))
    for key, value in found:
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                  or not math.isfinite(value) or value < 0):
            raise ConfigError(f"{key} must be a price >= 0 in US dollars, got {value!r} -- fix: {key}=0.5, or null "
                              "to leave it unpriced (docs/metrics.md, cost in money)")


def _folder_name(name: Any) -> str:
    check_experiment_name(name)
    return str(name)


def check_hydra_targets(overrides: list[str]) -> None:
    """Command-line overrides under ``hydra.`` may only name Hydra plugin classes as ``_target_``.

    Hydra instantiates ``hydra.callbacks.*``, the launcher and the sweeper before any rag_bench
    code runs, so ``+hydra.callbacks.x._target_=builtins.open`` would call ``open`` at startup.
    Such a target must be a class deriving from Hydra's Callback, Launcher or Sweeper. Shape, not
    intent: the command line is the user's own code, but a mistyped or hostile value from a sweep
    cannot call an arbitrary function.
    """
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException
    from hydra.experimental.callback import Callback
    from hydra.plugins.launcher import Launcher
    from hydra.plugins.sweeper import Sweeper

    candidates = [o for o in overrides if o.lstrip("+~").startswith("hydra.") and "_target_" in o]
    if not candidates:
        return
    try:
        parsed = OverridesParser.create().parse_overrides(candidates)
    except HydraException:
        return  # Hydra reports the syntax error itself, before instantiating anything
    for ov in parsed:
        key = ov.key_or_group
        targets: list[tuple[str, Any]] = []

        def walk(path: str, value: Any) -> None:
            if isinstance(value, dict):
                for k, v in value.items():
                    walk(f"{path}.{k}", v)
            elif path.endswith("._target_") or path == "_target_":
                targets.append((path, value))

        values = list(ov.sweep_string_iterator()) if ov.is_sweep_override() else [ov.value()]
        for value in values:
            if isinstance(value, dict):
                walk(key, value)
            elif key.endswith("_target_"):
                targets.append((key, value))
        for path, target in targets:
            module, _, name = str(target).rpartition(".")
            try:
                cls = getattr(importlib.import_module(module), name) if module else None
            except (ImportError, AttributeError, ValueError):
                cls = None
            if not (inspect.isclass(cls) and issubclass(cls, (Callback, Launcher, Sweeper))):
                raise ConfigError(f"{path}={target!r} is not a Hydra Callback, Launcher or Sweeper class -- fix: "
                                  "remove the override; hydra targets must name plugin classes")


def check_group_overrides(overrides: list[str]) -> None:
    """A config group override (``chunker=fixed``, ``hydra/launcher=joblib``) names an option: a
    value the override grammar reads as a number or null (``chunker=inf``, ``chunker=1``,
    ``chunker=null``, also inside a sweep ``chunker=fixed,1``) is refused with the group's options.
    Hydra raises a bare ValueError for them while building the defaults list."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    parser = OverridesParser.create()
    for text in overrides:
        if text.startswith("-") or "=" not in text:
            continue
        try:
            ov = parser.parse_override(text)
        except HydraException:
            continue  # Hydra reports the syntax error itself
        group = ov.key_or_group.lstrip("+~")
        if not ((CONF_DIR / group).is_dir() or group.startswith("hydra/")) or ov.is_delete():
            continue
        values = list(ov.sweep_iterator()) if ov.is_sweep_override() else [ov.value()]
        flat = [x for v in values for x in (v if isinstance(v, list) else [v])]
        odd = next((v for v in flat if not isinstance(v, (str, dict))), None)
        if odd is None and not any(v is None for v in flat):
            continue
        kind = ("null" if odd is None else f"a boolean ({odd})" if isinstance(odd, bool)
                else f"a number ({odd!r})" if isinstance(odd, (int, float)) else f"a {type(odd).__name__} ({odd!r})")
        options = sorted(p.stem for p in (CONF_DIR / group).glob("*.yaml")) if (CONF_DIR / group).is_dir() else []
        raise ConfigError(f"{text}: the config group {group} takes an option name, got {kind} -- fix: "
                          f"{group}=<option>" + (f", one of {', '.join(options)}" if options else "") +
                          " (`rag-bench run --help` lists the groups)")


def check_experiment_name(name: Any) -> None:
    """``experiment.name`` names one folder under ``output.root``: never a path that leaves it.

    Values arrive from sweeps and presets as well as from the user, so ``../x``, ``/abs``, ``a/b``,
    ``.`` and hidden names are refused (a folder name of letters, digits, ``.``, ``_``, ``-``).
    """
    if not isinstance(name, str) or not EXPERIMENT_NAME.fullmatch(name) or name in (".", ".."):
        raise ConfigError(f"experiment.name must be a folder name ({EXPERIMENT_NAME.pattern}: letters, digits, "
                          f"'.', '_', '-', not starting with '.'), got {name!r} -- fix: experiment.name=my_sweep; "
                          "choose the parent folder with output.root=DIR")


def check_component(cls: Any, group: str, target: str, protocol: type | None = None) -> None:
    """A component target must be a class with the required methods of its stage's protocol.

    Checked before anything is built, so a function (``os.system``, any ``rag_bench`` helper) or a
    class of the wrong stage is refused with the missing methods named. The check looks at shape,
    not intent: it is the same rule a user plugin will be held to.
    """
    if not inspect.isclass(cls):
        raise ConfigError(f"{group}._target_ {target!r} is a {type(cls).__name__}, not a class -- fix: name a "
                          f"{group} class (see conf/{group}/)")
    missing = missing_methods(cls, protocol or PROTOCOLS.get(group))
    if missing:
        raise ConfigError(f"{group}._target_ {target!r} does not implement the {group} stage: missing "
                          f"{', '.join(missing)} -- fix: name a {group} class (see conf/{group}/)")


def _import_target(target: str, group: str, protocol: type | None = None) -> Any:
    """The class a component ``_target_`` names: any importable class (rag_bench's own or a
    plugin's) that implements the group's protocol (``protocol``, else the group's in
    :data:`PROTOCOLS`: :func:`check_component`)."""
    if not isinstance(target, str) or "." not in target or not all(p.isidentifier() for p in target.split(".")):
        raise ConfigError(f"{group}._target_ must be the dotted path of a class (package.module.Class), got "
                          f"{target!r} -- fix: use one of the configs in conf/{group}/ or your plugin's class")
    module, _, name = target.rpartition(".")
    try:
        cls = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"{group}._target_ {target!r} cannot be imported ({exc}) -- fix: check the spelling, and "
                          "that the plugin's package is installed or on PYTHONPATH")
    check_component(cls, group, target, protocol)
    return cls


def wants(node: DictConfig, group: str, name: str, protocol: type | None = None) -> bool:
    """Whether the component of ``node`` takes a ``name`` argument (e.g. an injected embedder);
    ``protocol`` as for :func:`build`."""
    cls = _import_target(node.get("_target_"), group, protocol)
    return name in _shape(cls, cls.__init__)[0].parameters


def _type_name(hint: Any) -> str:
    if typing.get_origin(hint) is Literal:
        return " or ".join(repr(v) for v in typing.get_args(hint))
    return getattr(hint, "__name__", None) or str(hint).replace("typing.", "")


def _fits(value: Any, hint: Any) -> bool:
    """Whether a config value fits a parameter annotation (the JSON-like types configs hold)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any or hint is inspect.Parameter.empty or isinstance(hint, (str, typing.TypeVar)):
        return True
    if hint is None or hint is type(None):
        return value is None
    if origin is Literal:
        return any(value == a and type(value) is type(a) for a in args)
    if origin in (typing.Union, types.UnionType):
        return any(_fits(value, a) for a in args)
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if hint is str:
        return isinstance(value, str)
    container = origin or hint
    if container in (list, tuple, collections.abc.Sequence, collections.abc.Iterable):
        if not isinstance(value, (list, tuple)):
            return False
        if container is tuple:
            item = args[0] if len(args) == 2 and args[1] is Ellipsis else Any
        else:
            item = args[0] if args else Any
        return all(_fits(v, item) for v in value)
    if container in (dict, collections.abc.Mapping):
        return isinstance(value, dict)
    return True  # a type configs cannot express (an object): checked by the component itself


def _hints(cls: type) -> dict[str, Any]:
    try:
        return typing.get_type_hints(cls.__init__)  # type: ignore[misc]
    except Exception:  # a plugin's annotation that does not resolve: fall back to defaults below
        return {}


# Pure in the class and its __init__ (both in the key); bounded; results shared, never mutated.
@functools.lru_cache(maxsize=256)
def _shape(cls: type, init: Any) -> tuple[inspect.Signature, dict[str, Any]]:
    """``cls``'s signature and resolved parameter annotations. Pure in the class and its
    ``__init__`` (``init``, part of the key: a replaced ``__init__`` is read again); every cell
    builds some seven components and computing these cost ~1.5 ms a cell. Bounded: 256 classes.
    The hints are shared, never mutated."""
    return inspect.signature(cls), _hints(cls)


def build(node: DictConfig, group: str, *, protocol: type | None = None, **inject: Any) -> Any:
    """Construct the component described by ``node`` (``_target_`` + keyword arguments), after
    checking it: the call Hydra's ``instantiate`` would make (not recursive, plain containers).

    ``name`` is metadata (the option's name) and is not passed on. A key that is not a parameter
    of the class, or a value that does not fit the parameter's annotation (``Literal`` choices
    listed; a default's type where there is no annotation), raises :class:`ConfigError` naming
    ``group.key`` and the valid keys or values. ``inject`` holds objects built from other groups
    (``embedder=``, ``index=``, ``shared=``), passed only to components whose signature asks for them.
    ``protocol``: the protocol of a group above the runner (a search strategy), else the group's.
    """
    try:
        raw = OmegaConf.to_container(node, resolve=True, throw_on_missing=True)
    except MissingMandatoryValue as exc:
        key = getattr(exc, "full_key", "") or group
        raise ConfigError(f"{key} must be set (it is ??? in conf/{group}/) -- fix: pass {key}=<value>") from exc
    params: dict[str, Any] = {str(k): v for k, v in raw.items()}  # type: ignore[union-attr]
    target = params.pop("_target_", None)
    params.pop("name", None)
    cls = _import_target(target, group, protocol)
    sig, hints = _shape(cls, cls.__init__)
    valid = [p for p in sig.parameters if p != "self" and p not in inject]
    for key, value in params.items():
        if key not in sig.parameters or key in inject:
            near = difflib.get_close_matches(key, valid, n=1)
            raise ConfigError(f"{group}.{key} is not a parameter of {target} -- fix: use one of {valid}"
                              + (f" (did you mean {group}.{near[0]}?)" if near else ""))
        default = sig.parameters[key].default
        hint = hints.get(key, inspect.Parameter.empty)
        if hint is inspect.Parameter.empty and default is not inspect.Parameter.empty and default is not None:
            hint = list if type(default) is tuple else type(default)
        if isinstance(value, float) and not math.isfinite(value):
            raise ConfigError(f"{group}.{key} must be finite, got {value!r}")
        if value is not None and not _fits(value, hint):
            example = f"e.g. {group}.{key}={default!r}" if default is not inspect.Parameter.empty else \
                f"give {group}.{key} a {_type_name(hint)}"
            raise ConfigError(f"{group}.{key} must be {_type_name(hint)}, got {value!r} -- fix: {example}")
    kwargs = {k: v for k, v in inject.items() if k in sig.parameters}
    try:
        # What Hydra's instantiate(_recursive_=False, _convert_="all") does with these checked,
        # plain parameters -- call the target -- without its per-call OmegaConf round trip (~3 ms,
        # paid several times by every cell). Not recursive: a nested {_target_: ...} in a
        # parameter's value is data, never a call.
        return cls(**params, **kwargs)
    except RagBenchError:
        raise
    except Exception as exc:
        raise ConfigError(f"{group}: {target}({', '.join(f'{k}={v!r}' for k, v in params.items())}) failed: "
                          f"{type(exc).__name__}: {exc} -- fix: check the {group} parameters") from exc


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
    data = without_old_defaults(data)
    provenance = component_provenance(data)
    if provenance:  # only then: the ids of cells of built-in, packaged components stay what they were
        data["provenance"] = provenance
    return data


def without_old_defaults(config: dict[str, Any]) -> dict[str, Any]:
    """``config`` (a plain config dict) without the settings whose value is what every cell had
    before the setting existed: what keeps cell ids stable across versions (:func:`cell_identity`),
    and what lets a cell written before a setting existed match one written after it (``rag-bench
    agree``'s grid matching). A new copy; the keys absent stay absent.

    >>> without_old_defaults({"eval": {"claims_judge": "lexical", "ks": [5]}, "query": {"name": "none",
    ...                       "_target_": "rag_bench.query.none.NoQueryTransform"}})
    {'eval': {'ks': [5]}}
    """
    data = dict(config)
    if data.get("eval", {}).get("scorers") == measures.ALL_SCORERS:
        # every scorer is what a cell was before eval.scorers existed: cells keep their ids
        data["eval"] = {k: v for k, v in data["eval"].items() if k != "scorers"}
    if data.get("eval", {}).get("claims_judge") == "lexical":
        # the lexical judge is what every cell had before the option existed: cells keep their ids
        data["eval"] = {k: v for k, v in data["eval"].items() if k != "claims_judge"}
    if data.get(PARSER) is None or (isinstance(data[PARSER], dict) and data[PARSER].get("name") == "auto"
                                    and str(data[PARSER].get("_target_", "")).startswith("rag_bench.parsing.")):
        # auto is what every cell read before the parser existed: cells keep their ids (a dataset
        # with .pdf/.html/.docx files is a new dataset, its fingerprint covers them)
        data.pop(PARSER, None)
    pipeline = data.get("pipeline")
    if isinstance(pipeline, dict) and (pipeline.get("history_turns"), pipeline.get("history_chars")) == (
            HISTORY_TURNS, HISTORY_CHARS):
        # the default window is what every cell was before conversations: cells keep their ids (a
        # dataset with history is a new dataset, its fingerprint covers it)
        data["pipeline"] = {k: v for k, v in pipeline.items() if k not in ("history_turns", "history_chars")}
    if data.get(QUERY) is None or (isinstance(data[QUERY], dict) and data[QUERY].get("name") == "none"
                                   and str(data[QUERY].get("_target_", "")).startswith("rag_bench.query.")):
        # none is what every cell searched before the query group existed: cells keep their ids
        data.pop(QUERY, None)
    if isinstance(data.get("index"), dict) and data["index"].get("target_recall", 0) is None:
        # null (no tuning) is what an index did before the key existed: cells keep their ids
        data["index"] = {k: v for k, v in data["index"].items() if k != "target_recall"}
    return data


# Keys of a stage's config that may name a local model file or folder.
MODEL_KEYS = ("model", "model_path")


def component_provenance(config: dict[str, Any]) -> dict[str, dict[str, str]]:
    """What each component really is, beyond its config, for the cell id: a plugin's (a
    ``_target_`` outside rag_bench) source digest and a local model file or folder's content
    digest. A plugin or a model folder edited in place then makes new cells instead of
    resuming the old numbers. Empty for built-in components with packaged models or hub ids."""
    out: dict[str, dict[str, str]] = {}
    for group in COMPONENT_GROUPS:
        node = config.get(group)
        if not isinstance(node, dict):
            continue
        entry: dict[str, str] = {}
        target = node.get("_target_")
        if isinstance(target, str) and target and not target.startswith("rag_bench."):
            entry["source"] = source_digest(target)
        for key in MODEL_KEYS:
            value = node.get(key)
            if isinstance(value, str) and value:
                path = Path(value).expanduser()
                if path.exists():
                    entry[key] = path_digest(path)
        if entry:
            out[group] = entry
    return out


def history_window(cfg: DictConfig) -> HistoryWindow:
    """``pipeline.history_turns`` and ``pipeline.history_chars``: how much of a conversation the
    prompt shows (the defaults for a stored config that predates them; :func:`validate` checks the
    range)."""
    return HistoryWindow(int(cfg.pipeline.get("history_turns", HISTORY_TURNS)),
                         int(cfg.pipeline.get("history_chars", HISTORY_CHARS)))


def cell_id(cfg: DictConfig, dataset_fingerprint: str) -> str:
    """Short stable hash of :func:`cell_identity`."""
    blob = json.dumps(cell_identity(cfg, dataset_fingerprint), sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def dataset_path(cfg: DictConfig) -> Path:
    """``dataset.path`` resolved (None = the demo set)."""
    return Path(cfg.dataset.path).expanduser() if cfg.dataset.path else DEMO_DATASET


def build_cell(cfg: DictConfig, work: Any) -> Any:
    """Build the components of the cell ``cfg`` (``work``: the :class:`~rag_bench.memo.SharedWork`
    of the process, which keeps one checked embedder per embedder config). Each is built, so its
    parameters are checked (:func:`build`), before anything is loaded: models load lazily."""
    from rag_bench import memo
    from rag_bench.components import is_null
    from rag_bench.evaluation.evaluation import Evaluation
    from rag_bench.generation.base import checked_traits, generator_identity
    from rag_bench.pipeline.parts import CellParts, CellSettings
    from rag_bench.pipeline.stages import CheckedEmbedder
    from rag_bench.query.none import NoQueryTransform

    takes = {"embedder": (), "index": (),
             "chunker": tuple(g for g in ("embedder",) if wants(cfg.chunker, "chunker", g)),
             "retriever": tuple(g for g in ("embedder", "index") if wants(cfg.retriever, "retriever", g)),
             "reranker": tuple(g for g in ("embedder",) if wants(cfg.reranker, "reranker", g)), QUERY: ()}
    what: dict[str, Any] = {}
    for group in ("embedder", "chunker", "retriever", "reranker", *takes["retriever"]):
        node = OmegaConf.to_container(cfg[group], resolve=True)
        extra = component_provenance({group: node}).get(group)
        what[group] = [node, extra] if extra else node
    # One embedder object per config and process: its model stays loaded across cells. Its
    # outputs are checked at the boundary (finite, one row per text, one width).
    embedder = work.get_or("embedders", memo.key(what["embedder"]),
                           lambda: CheckedEmbedder(build(cfg.embedder, "embedder")))
    generator = build(cfg.generator, "generator")
    query_node = cfg.get(QUERY)
    query = build(query_node, QUERY, generator=generator) if query_node is not None else NoQueryTransform()
    if not is_null(query):  # what determines its texts: its config, what it declares, its source, its model
        node = OmegaConf.to_container(query_node, resolve=True)
        what[QUERY] = [node, getattr(query, "identity", None), component_provenance({QUERY: node}).get(QUERY),
                       generator_identity(generator) if wants(query_node, QUERY, "generator") else None]
    judge = build(cfg.judge, "judge", embedder=embedder)  # built (its parameters checked) in every cell
    chunker = build(cfg.chunker, "chunker", embedder=embedder)
    retriever = build(cfg.retriever, "retriever", embedder=embedder, index=build(cfg.index, "index"), shared=work)
    reranker = build(cfg.reranker, "reranker", embedder=embedder)
    ks, k = tuple(sorted(set(int(x) for x in cfg.eval.ks))), int(cfg.pipeline.k)
    # How deep the retriever searches: every cutoff measured, the generator's k, the reranker's
    # shortlist (a plugin's depth checked here, before anything is loaded).
    depth = max(*ks, k, *([] if is_null(reranker) else [check_depth(getattr(reranker, "depth", None))]))
    settings = CellSettings(ks=ks, k=k, depth=depth, include_archived=bool(cfg.pipeline.include_archived),
                            expand_parents=bool(cfg.pipeline.expand_parents),
                            token_budget=int(cfg.pipeline.token_budget), split=str(cfg.dataset.split),
                            index_name=str(cfg.index.name), judge_name=str(cfg.judge.name),
                            history=history_window(cfg))
    return CellParts(settings=settings, embedder=embedder, chunker=chunker, retriever=retriever, reranker=reranker,
                     generator=generator, query=query, judge=None if is_null(generator) else judge,
                     traits=None if is_null(generator) else checked_traits(generator),
                     evaluation=Evaluation.from_config(cfg),
                     identity={g: [what[g], *(what[t] for t in takes[g])] for g in takes if g in what})
