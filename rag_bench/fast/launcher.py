"""The launcher behind ``rag-bench run -m``: Hydra's basic launcher with cheaper per-job bookkeeping.

The class is ``hydra_plugins.rag_bench_sweeper.rag_bench_launcher.RagBenchLauncher``
(``hydra/launcher=rag_bench``, the default; Hydra only loads plugins from ``hydra_plugins``); its
logic is here. It runs the jobs of a batch one after the other in this process, as Hydra's
``BasicLauncher`` does, and :func:`run_job` is ``hydra.core.utils.run_job`` step by step: the
same ``JobReturn`` (overrides, cfg, hydra_cfg, working_dir, task_name, status, return value;
a task's exception is caught as ``JobStatus.FAILED``), the same ``HydraConfig.get()`` inside the
task and the callbacks (the job's hydra node with ``runtime.output_dir``, ``job.id``/``num``,
``runtime.choices``, its parent the job's config), the same output folder, ``hydra.job.chdir``,
``.hydra/`` files when ``hydra.output_subdir`` is set, ``hydra.job.env_set`` and
``on_job_start``/``on_job_end`` calls. What differs is how, for speed: Hydra's bookkeeping costs
~0.05 s per job (the fixed cost of every cell of a sweep), mostly deep copies of the large
``hydra`` node. Here:

* **Copies by pickle.** ``run_job`` deep-copies the hydra node four times per job (two
  ``HydraConfig.set_config``, each an ``OmegaConf.masked_copy``, and ``copy.deepcopy`` of the
  HydraConfig for ``JobReturn.hydra_cfg``) and the whole config once (for the task's config,
  which then drops ``hydra``). Here the HydraConfig wraps the job's own hydra node, read-only
  for the job's duration (the job's config is a private copy the launcher composed for this job
  and drops after it, so a copy of its hydra node would only be a second, equal, read-only
  node), ``JobReturn.hydra_cfg`` is a copy of that node made when first read, and the
  task's config is pickled without the hydra node (:class:`~rag_bench.fast.compose.Frozen`:
  the same nodes, flags, types and parents; ``copy.deepcopy`` when a value cannot be pickled).
  Each is built as Hydra builds it (the same wrapper node, the hydra node's parent the job's
  config for the HydraConfig and its copy's wrapper for ``hydra_cfg``).
* **HydraConfig set once.** ``run_job`` sets the HydraConfig once only so that interpolations in
  ``hydra.sweep.dir``/``subdir`` (``${hydra:...}``) resolve, then computes the output folder,
  writes ``hydra.runtime.output_dir`` into the config and sets it again. Here the job's config
  itself stands in for that first copy while the folder is resolved (same values, read only),
  and the one copy is made after ``runtime.output_dir`` is written.
* **Logging applied when it changes.** ``run_job`` applies ``hydra.job_logging`` before every task
  and the launcher re-applies ``hydra.hydra_logging`` after every job (``configure_log``: a
  resolve and a ``logging.config.dictConfig``). Here a job's logging is applied unless the same
  resolved config (``hydra.job_logging`` resolved for that job, ``hydra.verbose`` and the
  working directory it is applied in) is in force and the logging state it left (loggers'
  levels, handlers, filters, ``sys.stdout``/``stderr``) is unchanged; the hydra logging is
  re-applied between two jobs only when the next job's logging must be applied, and after the
  last job. rag_bench's ``hydra/job_logging=rag_bench`` names a log file under
  ``${output.root}/${experiment.name}``: the key holds the resolved path, so a sweep over
  ``experiment.name`` or ``output.root`` switches files as with Hydra's launcher.

One thing is routed differently, by design: between two jobs whose logging is the same, the
launcher's ``#N : overrides`` line is logged through the job logging in force instead of the
hydra logging (with rag_bench's configs both send it only to the same log file in the same
format, so the output is the same; under Hydra's default configs the job log file depends on
the job's folder, and a sweep whose jobs have their own folders is logged as Hydra logs it).
The next job's config is composed before that line is logged, when a job's logging is in force.
A skipped ``configure_log`` also leaves the job's handlers open between jobs (Hydra closes and
makes them anew: the same records reach the same files) and does not add a config's root
``filters`` to the root logger again (``dictConfig`` never removes them, so under Hydra they pile
up one copy per job). ``benchmarks/launcher.py``: 0.055-0.065 s of launcher work per job with
``hydra/launcher=basic``, 0.011-0.016 s here (40 jobs of the rag_bench config, no-op task).

**Garbage collection.** A sweep allocates and drops many cyclic objects (every OmegaConf node
points to its parent, so each job's configs are freed by the cyclic collector, not by reference
counts), and CPython's default thresholds (700, 10, 10) then run full collections that walk the
whole heap: every object pandas, pyarrow, Hydra and the loaded models made. In a warm 72-cell
demo sweep that was 1.5-2.1 s of ~10 s (eight full collections at ~0.14 s each, measured with
``gc.callbacks``). For the duration of a batch the collector is tuned (:func:`rag_bench.heap.tuned`:
what exists when the batch starts is frozen, the young generation collected after 10,000
allocations instead of 700), which brought the collector's time to ~0.7 s; both are put back
when the batch ends. Only how often the collector runs changes, never what it frees.

**Interpolations parsed once.** OmegaConf parses an interpolation (``${output.root}/...``) with
its ANTLR grammar every time it resolves or merges it, and keeps no parse: a warm 72-cell demo
sweep parsed 11 distinct strings 393 times, ~0.23 s. For the duration of a batch,
:func:`_parse_once` gives OmegaConf's resolver and merge a memo of its own ``parse`` (the
trees are only read by OmegaConf's visitor; each tree's tokens keep their own input), put back
afterwards; a string that does not parse raises as before (errors are not kept).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from textwrap import dedent
from typing import Any

from hydra import version
from hydra._internal.deprecation_warning import deprecation_warning
from hydra.conf import HydraConf
from hydra.core.hydra_config import HydraConfig
from hydra.core.utils import (
    JobReturn,
    JobRuntime,
    JobStatus,
    _flush_loggers,
    _save_config,
    configure_log,
    env_override,
    filter_overrides,
    setup_globals,
)
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig, OmegaConf, grammar_parser, open_dict, read_write
from omegaconf import _utils as omegaconf_utils
from omegaconf import base as omegaconf_base

from rag_bench import heap
from rag_bench.fast.compose import Frozen
from rag_bench.tracking import background

# BasicLauncher's logger: the launcher's own lines carry the name they carry under hydra/launcher=basic.
log = logging.getLogger("hydra._internal.core_plugins.basic_launcher")


@dataclass
class RagBenchLauncherConf:
    """Hydra config of the launcher (``hydra/launcher=rag_bench``, the default)."""

    _target_: str = "hydra_plugins.rag_bench_sweeper.rag_bench_launcher.RagBenchLauncher"


# -- copies ---------------------------------------------------------------------------------


@contextlib.contextmanager
def _detached(node: DictConfig) -> Iterator[DictConfig]:
    """``node`` without its parent for the duration (a pickle of a node holds its parents)."""
    parent = node._get_parent()
    node._set_parent(None)
    try:
        yield node
    finally:
        node._set_parent(parent)


@contextlib.contextmanager
def _without_hydra(config: DictConfig) -> Iterator[DictConfig]:
    """``config`` without its ``hydra`` key for the duration (key order kept)."""
    content = config.__dict__["_content"]
    config.__dict__["_content"] = {k: v for k, v in content.items() if k != "hydra"}
    try:
        yield config
    finally:
        config.__dict__["_content"] = content


def _hydra_root(node: DictConfig, parent: DictConfig | None) -> DictConfig:
    """What ``OmegaConf.masked_copy(config, "hydra")`` returns, around ``node`` (a fresh copy,
    taken as it is instead of deep-copied again); with ``parent`` the hydra node's parent, as
    ``HydraConfig.set_config`` sets it."""
    root = DictConfig(content={"hydra": node}, flags={"no_deepcopy_set_nodes": True})
    root._set_flag("no_deepcopy_set_nodes", None)
    if parent is not None:
        root.hydra._set_parent(parent)
    return root


class _JobReturn(JobReturn):
    """A ``JobReturn`` whose ``hydra_cfg`` -- ``copy.deepcopy(HydraConfig.instance().cfg)`` in
    ``run_job`` -- is copied from the job's hydra node when first read: a sweep's launcher and
    callbacks rarely read it, and the copy cost ~2 ms a job. The node is read-only from the
    job's start on and nothing writes it after (module doc), so a later copy equals run_job's."""

    def __init__(self, node: DictConfig) -> None:
        super().__init__()
        self._hydra_node: DictConfig | None = node

    @property  # type: ignore[override]
    def hydra_cfg(self) -> Any:
        if self._hydra_node is not None:
            with _detached(self._hydra_node) as node:
                self._hydra_cfg = _hydra_root(Frozen(node).thaw(), None)
            self._hydra_node = None
        return self._hydra_cfg

    @hydra_cfg.setter
    def hydra_cfg(self, value: Any) -> None:
        self._hydra_cfg, self._hydra_node = value, None


def _task_config(config: DictConfig) -> DictConfig:
    """``copy.deepcopy(config)`` without its ``hydra`` key, as ``run_job`` hands it to the task."""
    with _without_hydra(config):
        copied: DictConfig = Frozen(config).thaw()
    return copied


# -- logging --------------------------------------------------------------------------------


def _logging_state(key: Any) -> tuple[Any, ...]:
    """What applying the job logging of ``key`` again would set (``logging.config.dictConfig`` and
    ``hydra.verbose``): the root logger's and the configured or verbose loggers' (and their
    children's) levels, handlers, filters and propagation, their handlers' levels, formatters and
    filters, which loggers are disabled, how many exist, and the streams ``ext://sys.stdout`` and
    ``stderr`` name. Other loggers' levels and handlers dictConfig leaves alone. Objects, not ids:
    the tuple keeps them alive."""
    conf, verbose, _ = key
    named = set(conf.get("loggers") or ()) if isinstance(conf, dict) else set()
    if isinstance(verbose, str):
        named.add(verbose)
    elif isinstance(verbose, list):
        named.update(str(v) for v in verbose)
    prefixes = tuple(f"{n}." for n in named)
    manager = logging.Logger.manager
    existing = list(manager.loggerDict.items())
    disabled = [lg for _, lg in existing if getattr(lg, "disabled", False)]  # a PlaceHolder has no flag
    loggers: list[logging.Logger] = [logging.root]
    if named:
        loggers += [lg for name, lg in existing if isinstance(lg, logging.Logger)
                    and (name in named or name.startswith(prefixes))]
    handlers = dict.fromkeys(h for lg in loggers for h in lg.handlers)
    return (sys.stdout, sys.stderr, manager.disable, len(manager.loggerDict), tuple(disabled),
            tuple((lg, lg.level, lg.propagate, tuple(lg.handlers), tuple(lg.filters)) for lg in loggers),
            tuple((h, h.level, h.formatter, tuple(h.filters)) for h in handlers))


def _changes_dir(value: Any) -> bool:
    """``hydra.job.chdir`` as ``run_job`` reads it (unset: change directory before version_base 1.2)."""
    return bool(value) if value is not None else not version.base_at_least("1.2")


def job_logging_key(config: DictConfig, cwd: str) -> Any:
    """What applying ``config.hydra.job_logging`` depends on: the resolved logging config (so a
    log file under ``${output.root}`` or the job's folder is part of it), ``hydra.verbose`` and
    the working directory (a relative file name is opened there). None: no key, always apply."""
    if config.hydra.job_logging is None:
        return None  # configure_log then adds a console handler each time: never the same
    try:
        conf = OmegaConf.to_container(config.hydra.job_logging, resolve=True)
    except Exception:
        return None  # configure_log raises it, at the point run_job does
    verbose = config.hydra.verbose
    return conf, OmegaConf.to_container(verbose) if OmegaConf.is_config(verbose) else verbose, cwd


class Logging:
    """Which logging config is in force: the hydra logging, or a job's (with its key)."""

    def __init__(self) -> None:
        self.current: str | None = None  # "hydra", "job", or None before the first is applied
        self.key: Any = None  # the key of the job logging in force (None: not known, apply again)
        self.state: tuple[Any, ...] | None = None  # the logging state it left
        self.job_started = False  # the current job has reached the point where run_job applies its logging

    def hydra(self, config: DictConfig) -> None:
        """Apply ``hydra.hydra_logging``, as the launcher does before and after each job."""
        self.current, self.key, self.state = "hydra", None, None
        configure_log(config.hydra.hydra_logging, config.hydra.verbose)

    @property
    def hydra_in_force(self) -> bool:
        return self.current == "hydra"

    def in_force(self, key: Any) -> bool:
        """Whether applying the job logging of ``key`` would change nothing."""
        return (self.current == "job" and key is not None and key == self.key and self.state is not None
                and self.state == _logging_state(key))

    def job(self, config: DictConfig, key: Any) -> None:
        """Apply ``hydra.job_logging`` unless the same is in force."""
        self.job_started = True
        if self.in_force(key):
            return
        self.current, self.key, self.state = "job", None, None
        configure_log(config.hydra.job_logging, config.hydra.verbose)
        if key is not None:
            self.key, self.state = key, _logging_state(key)


# -- one job --------------------------------------------------------------------------------


@dataclass
class Job:
    """What :func:`prepare` found for a job's config (its output folder is written in the config)."""

    output_dir: str
    old_cwd: str
    orig_hydra_cfg: Any
    log_key: Any


def prepare(config: DictConfig, job_dir_key: str, job_subdir_key: str | None) -> Job:
    """``run_job`` up to its second ``HydraConfig.set_config``: the output folder resolved (with the
    HydraConfig set to the job's) and written to ``hydra.runtime.output_dir``; the HydraConfig is
    left as it was, so the launcher's line for the job is logged as Hydra logs it."""
    old_cwd = os.getcwd()
    instance = HydraConfig.instance()
    orig_hydra_cfg = instance.cfg
    OmegaConf.set_readonly(config.hydra, True)
    hydra_node_type = OmegaConf.get_type(config, "hydra")
    assert hydra_node_type is not None and issubclass(hydra_node_type, HydraConf)
    # HydraConfig.get() is config.hydra itself while the folder is resolved: the values a copy holds.
    instance.cfg = config  # type: ignore[assignment]
    try:
        output_dir = str(OmegaConf.select(config, job_dir_key))
        if job_subdir_key is not None:
            subdir = str(OmegaConf.select(config, job_subdir_key))
            output_dir = os.path.join(output_dir, subdir)
        with read_write(config.hydra.runtime):
            with open_dict(config.hydra.runtime):
                config.hydra.runtime.output_dir = os.path.abspath(output_dir)
        cwd = os.path.abspath(output_dir) if _changes_dir(config.hydra.job.chdir) else old_cwd
        key = job_logging_key(config, cwd)
    finally:
        instance.cfg = orig_hydra_cfg
    return Job(output_dir, old_cwd, orig_hydra_cfg, key)


def run_job(task_function: TaskFunction, config: DictConfig, job_dir_key: str, job_subdir_key: str | None,
            hydra_context: HydraContext, configure_logging: bool = True, logs: Logging | None = None,
            job: Job | None = None) -> JobReturn:
    """``hydra.core.utils.run_job`` with the copies and the logging of the module doc; ``job``: the
    job :func:`prepare` made of ``config`` (the launcher logs its line in between). Named as
    Hydra's: Hydra's error report shortens a task's traceback to the frames below ``run_job``."""
    if job is None:
        job = prepare(config, job_dir_key, job_subdir_key)
    logs = logs if logs is not None else Logging()
    callbacks = hydra_context.callbacks
    output_dir = job.output_dir
    # = HydraConfig.instance().set_config(config)
    OmegaConf.set_readonly(config.hydra, True)
    HydraConfig.instance().cfg = _hydra_root(config.hydra, config)  # type: ignore[assignment]
    _chdir: Any = None
    try:
        ret = _JobReturn(config.hydra)
        task_cfg = _task_config(config)
        ret.cfg = task_cfg
        overrides = OmegaConf.to_container(config.hydra.overrides.task)
        assert isinstance(overrides, list)
        ret.overrides = overrides
        Path(str(output_dir)).mkdir(parents=True, exist_ok=True)

        _chdir = config.hydra.job.chdir
        if _chdir is None:
            if version.base_at_least("1.2"):
                _chdir = False
        if _chdir is None:
            url = "https://hydra.cc/docs/1.2/upgrades/1.1_to_1.2/changes_to_job_working_dir/"
            deprecation_warning(
                message=dedent(f"""\
                    Future Hydra versions will no longer change working directory at job runtime by default.
                    See {url} for more information."""),
                stacklevel=2,
            )
            _chdir = True
        if _chdir:
            os.chdir(output_dir)
            ret.working_dir = output_dir
        else:
            ret.working_dir = os.getcwd()

        if configure_logging:
            logs.job(config, job.log_key)

        if config.hydra.output_subdir is not None:
            hydra_output = Path(config.hydra.runtime.output_dir) / Path(config.hydra.output_subdir)
            _save_config(task_cfg, "config.yaml", hydra_output)
            _save_config(ret.hydra_cfg, "hydra.yaml", hydra_output)
            _save_config(config.hydra.overrides.task, "overrides.yaml", hydra_output)

        with env_override(config.hydra.job.env_set):
            callbacks.on_job_start(config=config, task_function=task_function)
            try:
                ret.return_value = task_function(task_cfg)
                ret.status = JobStatus.COMPLETED
            except Exception as e:
                ret.return_value = e
                ret.status = JobStatus.FAILED

        ret.task_name = JobRuntime.instance().get("name")
        _flush_loggers()
        callbacks.on_job_end(config=config, job_return=ret)
        return ret
    finally:
        HydraConfig.instance().cfg = job.orig_hydra_cfg
        if _chdir:
            os.chdir(job.old_cwd)


# -- a batch --------------------------------------------------------------------------------


def launch(config: DictConfig, hydra_context: HydraContext, task_function: TaskFunction, logs: Logging,
           job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> list[JobReturn]:
    """``BasicLauncher.launch``: the jobs one after the other, in this process."""
    setup_globals()
    logs.hydra(config)
    sweep_dir = config.hydra.sweep.dir
    Path(str(sweep_dir)).mkdir(parents=True, exist_ok=True)
    log.info(f"Launching {len(job_overrides)} jobs locally")
    runs: list[JobReturn] = []
    # MLflow logging of each cell from a child process while the next cell runs; every cell's
    # logging has ended (DONE written, or its error raised) when the batch returns.
    with heap.tuned(), _parse_once(), background.session():
        _launch_jobs(config, hydra_context, task_function, logs, job_overrides, initial_job_idx, runs)
    if not logs.hydra_in_force:
        logs.hydra(config)
    return runs


PARSES_KEPT = 4096


@contextlib.contextmanager
def _parse_once() -> Iterator[None]:
    """OmegaConf's interpolation parser memoised for the duration (module doc)."""
    modules = (omegaconf_base, omegaconf_utils)  # where OmegaConf calls it (``from .grammar_parser import parse``)
    original = [getattr(m, "parse") for m in modules]  # noqa: B009 (not in the modules' stubs)
    memo = functools.lru_cache(maxsize=PARSES_KEPT)(grammar_parser.parse)
    for m in modules:
        setattr(m, "parse", memo)  # noqa: B010
    try:
        yield
    finally:
        for m, parse in zip(modules, original):
            setattr(m, "parse", parse)  # noqa: B010


def _launch_jobs(config: DictConfig, hydra_context: HydraContext, task_function: TaskFunction, logs: Logging,
                 job_overrides: Sequence[Sequence[str]], initial_job_idx: int, runs: list[JobReturn]) -> None:
    for idx, overrides in enumerate(job_overrides):
        idx = initial_job_idx + idx
        line = f"\t#{idx} : {' '.join(filter_overrides(overrides))}"
        deferred = not logs.hydra_in_force  # the previous job's logging: the hydra logging not re-applied yet
        if not deferred:
            log.info(line)
        try:
            sweep_config = hydra_context.config_loader.load_sweep_config(config, list(overrides))
            with open_dict(sweep_config):
                sweep_config.hydra.job.id = idx
                sweep_config.hydra.job.num = idx
            job = prepare(sweep_config, "hydra.sweep.dir", "hydra.sweep.subdir")
        except BaseException:
            if deferred:
                logs.hydra(config)
                log.info(line)
            raise
        if deferred:
            if not logs.in_force(job.log_key):
                logs.hydra(config)
            log.info(line)
        logs.job_started = False
        try:
            runs.append(run_job(task_function, sweep_config, "hydra.sweep.dir", "hydra.sweep.subdir", hydra_context,
                                logs=logs, job=job))
        except BaseException:
            if not logs.job_started and not logs.hydra_in_force:
                logs.hydra(config)  # failed before its logging: Hydra's logging is in force, as with run_job
            raise
