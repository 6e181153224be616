"""Compose once per sweep: a caching wrapper around Hydra's config loader for the cells of a grid.

Hydra composes every job of a sweep from scratch (``ConfigLoaderImpl.load_sweep_config``): it
re-reads and re-parses every YAML file, rebuilds the defaults tree and merges some twenty config
nodes -- ~0.25 s per job, most of a warm cell's cost. :class:`ComposeOnce` gives the launcher
(basic, joblib, submitit) and the sweeper's validation exactly the config Hydra would give, from
two caches:

* **Templates.** Hydra's composition is ``compose(defaults list) → struct → apply the value
  overrides → fill hydra.overrides / runtime / job``. The defaults list, and so everything before
  the value overrides, depends only on the config name, the run mode, the search path and the
  *group* overrides (``chunker=fixed``, ``+experiment=demo``) -- Hydra's own rule
  (``defaults_list.Overrides``: an override is a value override when its key is not a config
  group or its value is a dict). So the composed config is kept per those, and a job that
  differs only in values (``pipeline.k``, ``reranker.depth``) gets a fresh copy of it, with the
  rest of Hydra's steps run by Hydra's own code (``_apply_overrides_to_config``,
  ``get_overrides_dirname``).
* **Parsed configs.** A job with new group choices is composed by Hydra's code, from a
  repository that keeps every config it has loaded (YAML read and parsed once per sweep; Hydra
  mutates and aliases what it merges, so the merge gets a fresh copy each time) and from kept
  merges of prefixes of the defaults list: the merge of the first ``i`` defaults is a function of
  those defaults, so Hydra's own config and the groups before the first that changed are merged
  once.

* **Defaults trees without idle maps.** Building the defaults tree, Hydra makes for every
  config node with a defaults list an OmegaConf map of the choices so far, used only to resolve
  an interpolated entry (``- db: ${db_name}``) of that list -- 70% of the tree's time for
  rag_bench's configs, which have none. While this module builds a tree, a list without an
  interpolated entry (checked on the entries Hydra passes, the overrides already applied) gets
  an empty map instead (:func:`_lazy_interpolation_map`); a list with one gets Hydra's.

Copies are unpickled from bytes pickled once (:class:`Frozen`), five times faster than
``copy.deepcopy`` of an OmegaConf tree. Anything else (a sweep override, a loader that is not
Hydra's) goes to the wrapped loader unchanged. A test composes whole grids both ways and compares every config (``--cfg job``,
``hydra.runtime.choices``, the cell's config.yaml).
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import os
import pickle
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from hydra._internal import defaults_list as hydra_defaults_list
from hydra._internal.config_loader_impl import ConfigLoaderImpl, get_overrides_dirname
from hydra._internal.config_repository import CachingConfigRepository, IConfigRepository
from hydra._internal.defaults_list import create_defaults_list
from hydra.conf import ConfigSourceInfo
from hydra.core.config_loader import ConfigLoader
from hydra.core.config_search_path import ConfigSearchPath
from hydra.core.default_element import ResultDefault
from hydra.core.object_type import ObjectType
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Override
from hydra.core.utils import JobRuntime
from hydra.errors import ConfigCompositionException
from hydra.plugins.config_source import ConfigResult, ConfigSource
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf, flag_override, open_dict
from omegaconf.errors import OmegaConfBaseException

SEARCHPATH = "hydra.searchpath"


class Frozen:
    """A private copy of a config object, thawed into a fresh copy on each use: pickled once and
    unpickled per use (about five times faster than ``copy.deepcopy`` of an OmegaConf tree, with
    the same result: nodes, flags, types, parents); kept as a deep copy when it cannot be pickled
    (a structured config of a class defined inside a function)."""

    def __init__(self, value: Any) -> None:
        try:
            self._data: bytes | None = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
            self._value = None
        except (pickle.PicklingError, AttributeError, TypeError):
            self._data, self._value = None, copy.deepcopy(value)

    def thaw(self) -> Any:
        """A fresh copy."""
        return pickle.loads(self._data) if self._data is not None else copy.deepcopy(self._value)


@dataclass(frozen=True)
class _Template:
    """A composed config before its value overrides (never handed out: callers get copies)."""

    cfg: Frozen  # the DictConfig
    known_choices: dict[str, str | None]
    sources: tuple[tuple[str, str, str], ...]  # (path, scheme, provider) of the repository
    baked: Frozen  # ``cfg`` with the per-job steps that are the same for every job already done


class _KeptRepository(CachingConfigRepository):
    """A caching repository that outlives one composition: each config is loaded once and every
    caller gets its own deep copy (Hydra merges loaded nodes without copying them and mutates
    results while matching schemas, so a shared result must never be handed out to it). Building
    the defaults list only reads the results (``hydra._internal.defaults_list``): it gets them
    uncopied."""

    reading = False  # True while Hydra builds a defaults list: it only reads what it loads

    def __init__(self, delegate: IConfigRepository) -> None:
        super().__init__(delegate)
        self.frozen: dict[str, Frozen] = {}

    def load_config(self, config_path: str) -> ConfigResult | None:
        key = f"config_path={config_path}"
        if key not in self.cache:
            self.cache[key] = self.delegate.load_config(config_path=config_path)
        if self.reading:
            return self.cache[key]
        if key not in self.frozen:
            self.frozen[key] = Frozen(self.cache[key])
        result: ConfigResult | None = self.frozen[key].thaw()
        return result


class ComposeOnce(ConfigLoader):
    """Hydra's config loader with the caches of the module doc; same results, fewer compositions."""

    def __init__(self, loader: ConfigLoader) -> None:
        self.loader = loader
        self._reset()

    def _reset(self) -> None:
        self._templates: dict[tuple[Any, ...], _Template] = {}
        self._repos: dict[tuple[str | None, str | None], _KeptRepository] = {}
        self._groups: dict[tuple[Any, ...], bool] = {}
        self._prefixes: dict[tuple[Any, ...], Frozen] = {}
        self._lists: list[tuple[Any, ...]] = []
        self._parser = OverridesParser.create()
        self._parsed: dict[str, Override] = {}
        self._whole: dict[tuple[Any, ...], Frozen] = {}  # Hydra's own compositions (sweep overrides)
        self.compositions = 0  # full (template) compositions, for tests and benchmarks
        self.copies = 0        # configs served from a template

    def __getstate__(self) -> dict[str, Any]:
        # A launcher that ships the loader to workers (joblib, submitit) ships it without caches.
        return {"loader": self.loader}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.loader = state["loader"]
        self._reset()

    # -- the ConfigLoader interface ---------------------------------------------------------

    def load_configuration(self, config_name: str | None, overrides: list[str], run_mode: RunMode,
                           from_shell: bool = True, validate_sweep_overrides: bool = True) -> DictConfig:
        """What ``ConfigLoaderImpl.load_configuration`` returns for the same arguments."""
        impl = self.loader
        if not isinstance(impl, ConfigLoaderImpl):
            return self.loader.load_configuration(config_name, overrides, run_mode, from_shell,
                                                  validate_sweep_overrides)
        try:
            parsed = self._parse(overrides)
            if any(o.is_sweep_override() for o in parsed):  # Hydra's own errors and rules for these
                return self._whole_config(impl, config_name, overrides, parsed, run_mode, from_shell,
                                          validate_sweep_overrides)
            return self._compose(impl, config_name, parsed, run_mode)
        except OmegaConfBaseException as e:
            raise ConfigCompositionException().with_traceback(sys.exc_info()[2]) from e

    def load_sweep_config(self, master_config: DictConfig, sweep_overrides: list[str]) -> DictConfig:
        """``ConfigLoaderImpl.load_sweep_config``, through :meth:`load_configuration`."""
        hydra_overrides = OmegaConf.to_container(master_config.hydra.overrides.hydra)
        assert isinstance(hydra_overrides, list)
        sweep_config = self.load_configuration(config_name=master_config.hydra.job.config_name,
                                               overrides=hydra_overrides + list(sweep_overrides), run_mode=RunMode.RUN)
        OmegaConf.copy_cache(from_config=master_config, to_config=sweep_config)
        return sweep_config

    def get_search_path(self) -> ConfigSearchPath:
        """The wrapped loader's search path."""
        return self.loader.get_search_path()

    def get_sources(self) -> list[ConfigSource]:
        """The wrapped loader's config sources."""
        return self.loader.get_sources()

    def list_groups(self, parent_name: str) -> list[str]:
        """The wrapped loader's groups under ``parent_name``."""
        return self.loader.list_groups(parent_name)

    def get_group_options(self, group_name: str, results_filter: ObjectType | None = ObjectType.CONFIG,
                          config_name: str | None = None, overrides: list[str] | None = None) -> list[str]:
        """The wrapped loader's options of ``group_name``."""
        return self.loader.get_group_options(group_name, results_filter, config_name, overrides)

    def compute_defaults_list(self, config_name: str | None, overrides: list[str], run_mode: RunMode) -> Any:
        """The wrapped loader's defaults list."""
        return self.loader.compute_defaults_list(config_name, overrides, run_mode)

    # -- composition --------------------------------------------------------------------------

    def _parse(self, overrides: list[str]) -> list[Override]:
        """``OverridesParser.parse_overrides(overrides)``: each line parsed once per sweep (Hydra
        parses lines one by one; a job gets copies). A line that does not parse is handed to
        Hydra's parser with the whole list, for Hydra's own error."""
        out = []
        for line in overrides:
            if line not in self._parsed:
                try:
                    self._parsed[line] = self._parser.parse_overrides(overrides=[line])[0]
                except Exception:
                    return OverridesParser.create().parse_overrides(overrides=overrides)
            out.append(copy.deepcopy(self._parsed[line]))
        return out

    def _whole_config(self, impl: ConfigLoaderImpl, config_name: str | None, overrides: list[str],
                      parsed: list[Override], run_mode: RunMode, from_shell: bool, validate: bool) -> DictConfig:
        """Hydra's composition of a command line with sweep overrides, once per arguments: Hydra
        composes the same command line twice before a sweep starts (``Hydra.get_mode``, then
        ``multirun``), the first time without validating the sweep overrides. The check runs here
        when asked, as Hydra runs it (before composing); the composition is Hydra's, kept frozen."""
        if validate:
            impl.ensure_main_config_source_available()
            impl.validate_sweep_overrides_legal(overrides=parsed, run_mode=run_mode, from_shell=from_shell)
        key = (config_name, tuple(overrides), run_mode, from_shell, os.getcwd(),
               tuple(sorted(os.environ.items())))
        kept = self._whole.get(key)
        if kept is not None:
            return kept.thaw()  # type: ignore[no-any-return]
        cfg = impl.load_configuration(config_name, overrides, run_mode, from_shell, validate_sweep_overrides=False)
        self._whole[key] = Frozen(cfg)
        return cfg

    def _repo(self, impl: ConfigLoaderImpl, config_name: str | None, parsed: list[Override]) -> _KeptRepository:
        """The kept repository of this config name and ``hydra.searchpath`` override (Hydra's
        ``_parse_overrides_and_create_caching_repo``, once)."""
        line = next((o.input_line for o in parsed if o.get_key_element() == SEARCHPATH), None)
        key = (config_name, line)
        repo = self._repos.get(key)
        if repo is None:
            repo = _KeptRepository(impl.repository)
            impl._process_config_searchpath(config_name, [o for o in parsed if o.input_line == line] if line else [],
                                            repo)
            self._repos[key] = repo
        return repo

    def _is_value_override(self, repo: IConfigRepository, override: Override) -> bool:
        # Hydra's rule (defaults_list.Overrides): a value override unless it names a config group
        # with a non-dict value.
        key = (id(repo), override.key_or_group)
        if key not in self._groups:
            self._groups[key] = repo.group_exists(override.key_or_group)
        return isinstance(override.value(), dict) or not self._groups[key]

    def _compose(self, impl: ConfigLoaderImpl, config_name: str | None, parsed: list[Override],
                 run_mode: RunMode) -> DictConfig:

        impl.ensure_main_config_source_available()
        repo = self._repo(impl, config_name, parsed)
        values = [o for o in parsed if self._is_value_override(repo, o)]
        groups = tuple(o.input_line for o in parsed if not self._is_value_override(repo, o))
        search = next((o.input_line for o in parsed if o.get_key_element() == SEARCHPATH), None)
        key = (config_name, run_mode, search, groups)
        template = self._templates.get(key)
        if template is None:
            template = self._template(impl, repo, config_name, parsed, run_mode)
            self._templates[key] = template
        else:
            self.copies += 1
        # The steps after the value overrides that set the same values for every job of this
        # template are already done in ``template.baked``, unless a value override touches what
        # they set (then every step runs after the overrides, in Hydra's order).
        fast = not any(_touches(_BAKED, o.key_or_group) for o in values)
        cfg = template.baked.thaw() if fast else template.cfg.thaw()

        # From here on, Hydra's _load_configuration_impl after the composition, step for step.
        ConfigLoaderImpl._apply_overrides_to_config(values, cfg)
        app_overrides = []
        for override in parsed:
            if override.is_hydra_override():
                cfg.hydra.overrides.hydra.append(override.input_line)
            else:
                cfg.hydra.overrides.task.append(override.input_line)
                app_overrides.append(override)
        if fast:
            if cfg.hydra.job.env_copy:
                with open_dict(cfg.hydra):
                    for env_key in cfg.hydra.job.env_copy:
                        cfg.hydra.job.env_set[env_key] = os.environ[env_key]
            if cfg.hydra.runtime.cwd != os.getcwd():
                cfg.hydra.runtime.cwd = os.getcwd()
            cfg.hydra.job.override_dirname = _dirname(cfg, app_overrides)
            return cfg
        self._finish_steps(cfg, template, config_name)
        cfg.hydra.job.override_dirname = _dirname(cfg, app_overrides)
        cfg.hydra.job.config_name = config_name
        return cfg

    @staticmethod
    def _finish_steps(cfg: DictConfig, template: _Template, config_name: str | None) -> None:
        """Hydra's steps after the value overrides that do not depend on the job's overrides
        (choices, environment, runtime, job name)."""
        from hydra import __version__, version

        with open_dict(cfg.hydra):
            cfg.hydra.runtime.choices.update(template.known_choices)
            for env_key in cfg.hydra.job.env_copy:
                cfg.hydra.job.env_set[env_key] = os.environ[env_key]
        cfg.hydra.runtime.version = __version__
        cfg.hydra.runtime.version_base = version.getbase()
        cfg.hydra.runtime.cwd = os.getcwd()
        cfg.hydra.runtime.config_sources = [ConfigSourceInfo(path=p, schema=s, provider=v)
                                            for p, s, v in template.sources]
        if "name" not in cfg.hydra.job:
            cfg.hydra.job.name = JobRuntime().get("name")

    def _template(self, impl: ConfigLoaderImpl, repo: _KeptRepository, config_name: str | None,
                  parsed: list[Override], run_mode: RunMode) -> _Template:
        """Hydra's composition up to the value overrides (its code, the kept repository)."""
        self.compositions += 1
        impl.validate_sweep_overrides_legal(overrides=parsed, run_mode=run_mode, from_shell=True)
        repo.reading = True
        hydra_map = hydra_defaults_list._create_interpolation_map
        hydra_defaults_list._create_interpolation_map = _lazy_interpolation_map  # type: ignore[assignment]
        try:
            defaults = create_defaults_list(repo=repo, config_name=config_name, overrides_list=parsed,
                                            prepend_hydra=True, skip_missing=run_mode == RunMode.MULTIRUN)
        finally:
            hydra_defaults_list._create_interpolation_map = hydra_map
            repo.reading = False
        cfg = self._merge(impl, defaults.defaults, repo)
        OmegaConf.set_struct(cfg, True)
        OmegaConf.set_readonly(cfg.hydra, False)
        sources = tuple((x.path, x.scheme(), x.provider) for x in repo.get_sources())
        template = _Template(Frozen(cfg), dict(defaults.overrides.known_choices), sources, Frozen(None))
        self._finish_steps(cfg, template, config_name)  # on ``cfg`` itself: its copy is kept above
        cfg.hydra.job.config_name = config_name
        return dataclasses.replace(template, baked=Frozen(cfg))

    def _merge(self, impl: ConfigLoaderImpl, defaults: list[ResultDefault], repo: _KeptRepository) -> DictConfig:
        """``ConfigLoaderImpl._compose_config_from_defaults_list``, resumed from a kept merge of a
        prefix of ``defaults``. Prefixes are kept (as private copies) where lists branch: after
        Hydra's own configs, and where this list first differs from every list seen before."""
        ids = tuple((id(repo), d.config_path, d.package, d.primary, d.is_self, d.parent) for d in defaults)
        shared = max((_common(ids, seen) for seen in self._lists), default=0)
        hydra_end = next((i for i, d in enumerate(defaults) if not str(d.config_path).startswith("hydra/")), 0)
        keep = {hydra_end, shared} - {0, len(ids)}
        start = max((i for i in range(shared + 1) if ids[:i] in self._prefixes), default=0)
        cfg = self._prefixes[ids[:start]].thaw() if start else OmegaConf.create()
        self._lists.append(ids)
        with flag_override(cfg, "no_deepcopy_set_nodes", True):
            for i in range(start, len(defaults)):
                default = defaults[i]
                loaded = impl._load_single_config(default=default, repo=repo)
                try:
                    cfg.merge_with(loaded.config)
                except OmegaConfBaseException as e:
                    raise ConfigCompositionException(
                        f"In '{default.config_path}': {type(e).__name__} raised while"
                        f" composing config:\n{e}").with_traceback(sys.exc_info()[2])
                if i + 1 in keep:
                    self._prefixes[ids[:i + 1]] = Frozen(cfg)
        _strip_defaults(cfg)
        return cfg


@contextlib.contextmanager
def in_hydra() -> Iterator[None]:
    """For the duration, the ``Hydra`` that ``@hydra.main`` creates composes through
    :class:`ComposeOnce` from the start (``rag-bench run``): the two compositions of the command
    line before a sweep (:meth:`ComposeOnce._whole_config`) and those of a single run become one,
    and the sweeper finds the loader already wrapped. The classmethod is put back afterwards."""
    from hydra._internal.hydra import Hydra

    original = Hydra.__dict__["create_main_hydra2"]

    def create(cls: type[Hydra], task_name: str, config_search_path: ConfigSearchPath) -> Hydra:
        hydra: Hydra = original.__func__(cls, task_name=task_name, config_search_path=config_search_path)
        hydra.config_loader = ComposeOnce(hydra.config_loader)
        return hydra

    Hydra.create_main_hydra2 = classmethod(create)  # type: ignore[method-assign,assignment]
    try:
        yield
    finally:
        Hydra.create_main_hydra2 = original  # type: ignore[method-assign]


_HYDRA_INTERPOLATION_MAP = hydra_defaults_list._create_interpolation_map
_NO_CHOICES = OmegaConf.create({"defaults": []})


def _lazy_interpolation_map(overrides: Any, defaults_list: list[Any], self_added: bool) -> DictConfig:
    """Hydra's ``_create_interpolation_map`` when an entry of ``defaults_list`` is interpolated
    (the only case Hydra reads the map: ``dd.is_interpolation()`` on the same entries), else an
    empty map that nothing reads."""
    if any(d.is_interpolation() for d in defaults_list):
        return _HYDRA_INTERPOLATION_MAP(overrides, defaults_list, self_added)
    return _NO_CHOICES


# What the baked steps set: a value override of one of these (or of a node above one) replays them.
_BAKED = ("hydra.runtime", "hydra.job.name", "hydra.job.config_name", "hydra.job.env_set", "hydra.job.env_copy")


def _touches(paths: tuple[str, ...], key: str) -> bool:
    """Whether overriding ``key`` can change a value under one of ``paths`` (or the reverse).

    >>> _touches(_BAKED, "hydra.job"), _touches(_BAKED, "hydra.runtime.cwd"), _touches(_BAKED, "hydra.job.chdir")
    (True, True, False)
    """
    return any(key == p or key.startswith(p + ".") or p.startswith(key + ".") for p in paths)


def _dirname(cfg: DictConfig, app_overrides: list[Override]) -> str:
    """Hydra's ``hydra.job.override_dirname`` of these task overrides."""
    conf = cfg.hydra.job.config.override_dirname
    return str(get_overrides_dirname(overrides=app_overrides, kv_sep=conf.kv_sep, item_sep=conf.item_sep,
                                     exclude_keys=conf.exclude_keys))


def _common(a: tuple[Any, ...], b: tuple[Any, ...]) -> int:
    """Length of the common prefix of ``a`` and ``b``."""
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def _strip_defaults(cfg: Any) -> None:
    # Hydra's strip_defaults (inside _compose_config_from_defaults_list): remove remaining
    # defaults lists from all nodes.
    if isinstance(cfg, DictConfig):
        if cfg._is_missing() or cfg._is_none():
            return
        with flag_override(cfg, ["readonly", "struct"], False):
            if cfg._get_flag("HYDRA_REMOVE_TOP_LEVEL_DEFAULTS"):
                cfg._set_flag("HYDRA_REMOVE_TOP_LEVEL_DEFAULTS", None)
                cfg.pop("defaults", None)
        for _key, value in cfg.items_ex(resolve=False):
            _strip_defaults(value)
