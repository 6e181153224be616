"""rag_bench's launcher (hydra/launcher=rag_bench) does what Hydra's basic launcher and run_job do.

In-process: the HydraConfig a task and the callbacks see, the JobReturn and the job's config
equal run_job's node for node (values, flags, types, parents), also for a config that cannot be
pickled; logging is applied again only when a job's logging differs from the one in force. Through
Hydra: the same multirun of a tiny app with hydra/launcher=basic and =rag_bench gives the same
dumps, JobReturns, .hydra/ files, log files and console (a failing job included), and the same
rag-bench sweep gives the same cells and log.
"""

from __future__ import annotations

import json
import logging
import os
import pickle
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hydra._internal.callbacks import Callbacks
from hydra._internal.config_loader_impl import ConfigLoaderImpl
from hydra._internal.utils import create_config_search_path
from hydra.core.hydra_config import HydraConfig
from hydra.core.utils import JobStatus, setup_globals
from hydra.core.utils import run_job as hydra_run_job
from hydra.types import HydraContext, RunMode
from omegaconf import DictConfig, ListConfig, OmegaConf, open_dict

from rag_bench.fast import launcher
from rag_bench.runner.config import CONF_DIR, register_configs
from tests.conftest import TINY

register_configs()
BIN = Path(sys.executable).parent


# -- in process: the copies -----------------------------------------------------------------


def structure(node: Any, path: str = "") -> dict[str, Any]:
    """Every node of a tree: type, metadata (key, flags, ref/object/element types, resolver cache),
    computed struct/readonly flags, value, and whether its parent is the node above it."""
    out: dict[str, Any] = {path: (type(node).__name__, dict(node._metadata.__dict__), node._get_flag("struct"),
                                  node._get_flag("readonly"))}
    if isinstance(node, DictConfig) and not node._is_missing() and not node._is_none():
        items = [(str(k), node._get_node(k)) for k in node.keys()]
    elif isinstance(node, ListConfig) and not node._is_missing() and not node._is_none():
        items = [(f"[{i}]", node._get_node(i)) for i in range(len(node))]
    else:
        return {path: (*out[path], node._value())}
    for key, child in items:
        out.update(structure(child, f"{path}.{key}"))
        out[f"{path}.{key}"] += (child._get_parent() is node,)
    return out


class Seen:
    """What a task and the callbacks see: the HydraConfig (its whole tree, and whether its hydra
    node hangs off the job's config), the config handed to the callbacks."""

    def __init__(self) -> None:
        self.at: dict[str, Any] = {}

    def task(self, cfg: DictConfig) -> int:
        hydra = HydraConfig.instance().cfg
        self.at["task"] = (structure(hydra), structure(cfg), HydraConfig.get().runtime.output_dir,
                           structure(HydraConfig.get()._get_parent()))
        if cfg.get("fail"):
            raise ValueError("task failed on purpose")
        return 42

    def on_job_start(self, config: DictConfig, **kwargs: Any) -> None:
        self.at["start"] = (structure(config), HydraConfig.get()._get_parent() is config)

    def on_job_end(self, config: DictConfig, job_return: Any, **kwargs: Any) -> None:
        self.at["end"] = (structure(config), HydraConfig.get()._get_parent() is config, job_return.status)


def _context(loader: Any, seen: Seen) -> HydraContext:
    callbacks = Callbacks(None)
    callbacks.callbacks.append(seen)
    return HydraContext(config_loader=loader, callbacks=callbacks)


def _both(config_of: Any, loader: Any) -> tuple[Any, ...]:
    """One job through Hydra's run_job and through ours, each on its own copy of the config."""
    results = []
    for run in (hydra_run_job, launcher.run_job):
        seen = Seen()
        config = config_of()
        ret = run(task_function=seen.task, config=config, job_dir_key="hydra.sweep.dir",
                  job_subdir_key="hydra.sweep.subdir", hydra_context=_context(loader, seen))
        results.append((seen, config, ret))
    return tuple(results)


def _same_job(stock: tuple[Any, ...], ours: tuple[Any, ...]) -> None:
    (seen_a, config_a, ret_a), (seen_b, config_b, ret_b) = stock, ours
    assert seen_a.at == seen_b.at and set(seen_a.at) == {"task", "start", "end"}
    assert seen_a.at["start"][1] is True  # HydraConfig.get() hangs off the job's config
    assert structure(config_a) == structure(config_b)
    assert structure(ret_a.cfg) == structure(ret_b.cfg)
    assert structure(ret_a.hydra_cfg) == structure(ret_b.hydra_cfg)
    assert OmegaConf.get_type(ret_b.hydra_cfg, "hydra") is OmegaConf.get_type(ret_a.hydra_cfg, "hydra")
    for name in ("overrides", "working_dir", "task_name", "status"):
        assert getattr(ret_a, name) == getattr(ret_b, name), name
    a, b = ret_a._return_value, ret_b._return_value
    assert (type(a), str(a)) == (type(b), str(b))


@pytest.fixture
def logging_restored(monkeypatch):
    """configure_log records what it would apply instead of replacing pytest's handlers."""
    applied: list[Any] = []

    def record(log_config: Any, verbose: Any = False) -> None:
        applied.append(OmegaConf.to_container(log_config, resolve=True) if log_config is not None else None)

    monkeypatch.setattr(launcher, "configure_log", record)
    monkeypatch.setattr("hydra.core.utils.configure_log", record)
    return applied


@pytest.mark.parametrize("fail", [False, True])
def test_a_job_is_run_exactly_as_run_job_runs_it(tmp_path, logging_restored, fail):
    setup_globals()
    loader = ConfigLoaderImpl(create_config_search_path(str(CONF_DIR)))
    hydra = ["hydra.output_subdir=.hydra", "hydra.sweep.subdir=${hydra.job.num}_${hydra:job.name}",
             "+hydra.job.env_set.RAG_BENCH_TEST_ENV=${hydra.job.num}"]
    master = loader.load_configuration("config", [*hydra, f"output.root={tmp_path}"], RunMode.MULTIRUN)

    def config_of() -> DictConfig:
        config = loader.load_sweep_config(master, ["pipeline.k=3", "chunker=fixed", f"output.root={tmp_path}",
                                                   f"+fail={str(fail).lower()}"])
        with open_dict(config):
            config.hydra.job.id = config.hydra.job.num = 7
        return config

    stock, ours = _both(config_of, loader)
    _same_job(stock, ours)
    ret = ours[2]
    assert ret.status == (JobStatus.FAILED if fail else JobStatus.COMPLETED)
    folder = tmp_path / "default" / ".hydra" / f"7_{ret.hydra_cfg.hydra.job.name}"  # ${hydra:job.name} resolved
    assert ours[0].at["task"][2] == str(folder)
    files = folder / ".hydra"
    assert sorted(p.name for p in files.iterdir()) == ["config.yaml", "hydra.yaml", "overrides.yaml"]
    assert HydraConfig.instance().cfg is None or HydraConfig.get().job.get("num") is None  # restored


def test_a_config_that_cannot_be_pickled_is_deep_copied_as_run_job_does(tmp_path, logging_restored):
    @dataclass
    class Inner:  # local: pickle cannot import it
        size: int = 1

    setup_globals()
    loader = ConfigLoaderImpl(create_config_search_path(str(CONF_DIR)))
    master = loader.load_configuration("config", [f"output.root={tmp_path}"], RunMode.MULTIRUN)

    def config_of() -> DictConfig:
        config = loader.load_sweep_config(master, [f"output.root={tmp_path}"])
        with open_dict(config):
            config.inner = OmegaConf.structured(Inner)
            config.hydra.job.id = config.hydra.job.num = 0
        return config

    with pytest.raises((AttributeError, pickle.PicklingError)):
        pickle.dumps(config_of())
    _same_job(*_both(config_of, loader))


# -- in process: logging --------------------------------------------------------------------


CONFIG = """\
defaults:
  - override hydra/job_logging: own
  - _self_
x: 1
log: same
hydra:
  job:
    chdir: false
  sweep:
    dir: {root}
    subdir: ${{hydra.job.num}}
"""

JOB_LOGGING = """\
version: 1
handlers:
  file:
    class: logging.FileHandler
    filename: {root}/${{log}}.log
    delay: true
root:
  handlers: [file]
  level: INFO
disable_existing_loggers: false
"""


def _app_conf(root: Path) -> Path:
    conf = root / "conf"
    (conf / "hydra" / "job_logging").mkdir(parents=True)
    (conf / "config.yaml").write_text(CONFIG.format(root=root / "out"))
    (conf / "hydra" / "job_logging" / "own.yaml").write_text(JOB_LOGGING.format(root=root / "out"))
    return conf


def _launch(tmp_path: Path, jobs: list[list[str]], task: Any = None) -> list[Any]:
    loader = ConfigLoaderImpl(create_config_search_path(str(_app_conf(tmp_path))))
    config = loader.load_configuration("config", [], RunMode.MULTIRUN)
    HydraConfig.instance().set_config(config)
    return launcher.launch(config, HydraContext(config_loader=loader, callbacks=Callbacks(None)), task or (lambda c: c.x),
                           launcher.Logging(), jobs, 0)


def _files(applied: list[Any]) -> list[str]:
    """Which config each configure_log call applied: hydra (H) or a job's log file name."""
    return [Path(c["handlers"]["file"]["filename"]).name if "file" in (c.get("handlers") or {}) else "H"
            for c in applied]


def test_the_logging_is_applied_once_when_every_job_has_the_same(tmp_path, logging_restored):
    runs = _launch(tmp_path, [["x=1"], ["x=2"], ["x=3"]])
    assert [r.return_value for r in runs] == [1, 2, 3]
    # Hydra: H, then J and H per job (7 calls); here H, J once, H after the last job.
    assert _files(logging_restored) == ["H", "same.log", "H"]


def test_a_job_whose_logging_differs_gets_its_own(tmp_path, logging_restored):
    _launch(tmp_path, [["log=a"], ["log=a"], ["log=b"], ["log=a"]])
    # The resolved file name is the key: b is applied, then a again (hydra logging in between).
    assert _files(logging_restored) == ["H", "a.log", "H", "b.log", "H", "a.log", "H"]


def test_logging_a_task_changed_is_applied_again(tmp_path, logging_restored):
    extra = logging.NullHandler()

    def task(cfg: DictConfig) -> int:
        if cfg.x == 1:
            logging.getLogger().addHandler(extra)  # the next job's configure_log would drop it
        return 0

    try:
        _launch(tmp_path, [["x=1"], ["x=2"], ["x=3"]], task)
    finally:
        logging.getLogger().removeHandler(extra)
    assert _files(logging_restored) == ["H", "same.log", "H", "same.log", "H"]


def test_a_batch_runs_with_the_collector_tuned_and_puts_it_back(tmp_path, logging_restored):
    import gc

    from rag_bench import heap

    before = gc.get_threshold(), gc.get_freeze_count()
    seen = []

    def task(cfg: DictConfig) -> int:
        seen.append((gc.get_threshold(), gc.get_freeze_count(), gc.isenabled()))
        if cfg.x == 2:
            raise RuntimeError("a failing job")  # the collector is put back all the same
        return 0

    runs = _launch(tmp_path, [["x=1"], ["x=2"]], task)
    assert [r.status for r in runs] == [JobStatus.COMPLETED, JobStatus.FAILED]
    assert all(t[0] >= heap.YOUNG_THRESHOLD and t[1:] == before[0][1:] and frozen > 0 and enabled
               for t, frozen, enabled in seen)
    assert (gc.get_threshold(), gc.get_freeze_count()) == before


def test_a_batch_parses_each_interpolation_once_and_puts_the_parser_back(tmp_path, logging_restored):
    from omegaconf import _utils, base, grammar_parser
    from omegaconf.errors import GrammarParseError

    seen = []

    def task(cfg: DictConfig) -> int:
        node = OmegaConf.create({"a": 1, "b": "${a}-${a}"})
        seen.append([node.b for _ in range(3)])
        for _ in range(2):
            with pytest.raises(GrammarParseError):  # still raised, every time
                OmegaConf.create({"bad": "${a"})
        seen.append(base.parse.cache_info().hits)  # type: ignore[attr-defined]
        return 0

    _launch(tmp_path, [["x=1"], ["x=2"]], task)
    assert seen[0] == seen[2] == ["1-1"] * 3 and seen[3] > seen[1] >= 2
    assert base.parse is grammar_parser.parse and _utils.parse is grammar_parser.parse


def test_a_jobs_hydra_cfg_is_copied_when_first_read(tmp_path, logging_restored):
    ret = _launch(tmp_path, [["x=5", "hydra.output_subdir=null"]])[0]  # (.hydra/hydra.yaml would read it)
    assert ret._hydra_node is not None  # not copied yet
    copy = ret.hydra_cfg
    assert ret._hydra_node is None and ret.hydra_cfg is copy and copy.hydra._get_parent() is copy
    assert list(copy.hydra.overrides.task) == ["x=5"] and OmegaConf.is_readonly(copy.hydra)


def test_a_job_that_fails_to_compose_leaves_hydras_logging_in_force(tmp_path, logging_restored):
    from hydra.errors import ConfigCompositionException

    with pytest.raises(ConfigCompositionException):
        _launch(tmp_path, [["x=1"], ["x=2"], ["nokey=1"], ["x=4"]])
    # BasicLauncher: the hydra logging is in force when a job's composition raises, so here too.
    assert _files(logging_restored) == ["H", "same.log", "H"]


def test_rag_bench_is_the_default_launcher_and_the_others_compose():
    loader = ConfigLoaderImpl(create_config_search_path(str(CONF_DIR)))
    targets = {name: loader.load_configuration("config", [f"hydra/launcher={name}"] if name else [],
                                               RunMode.MULTIRUN).hydra.launcher._target_
               for name in ("", "basic", "joblib", "submitit_local")}
    assert targets[""] == launcher.RagBenchLauncherConf._target_
    assert targets["basic"] == "hydra._internal.core_plugins.basic_launcher.BasicLauncher"
    assert targets["joblib"].endswith("JoblibLauncher") and targets["submitit_local"].endswith("LocalLauncher")


def test_the_real_logging_goes_to_each_jobs_file(tmp_path):
    """Without the stand-in: configure_log really runs, each job's records land in its file."""
    root = logging.getLogger()
    saved = root.handlers[:], root.level

    def task(cfg: DictConfig) -> str:
        logging.getLogger("rag_bench.test").info("job %s", cfg.x)
        return [h.baseFilename for h in root.handlers if isinstance(h, logging.FileHandler)][0]

    try:
        runs = _launch(tmp_path, [["x=1", "log=a"], ["x=2", "log=a"], ["x=3", "log=b"]], task)
    finally:
        for h in root.handlers[:]:
            h.close()
        root.handlers[:], _ = saved
        root.setLevel(saved[1])
    out = tmp_path / "out"
    assert [Path(r.return_value).name for r in runs] == ["a.log", "a.log", "b.log"]
    assert re.findall(r"job \d", (out / "a.log").read_text()) == ["job 1", "job 2"]
    assert re.findall(r"job \d", (out / "b.log").read_text()) == ["job 3"]


# -- through Hydra: a tiny app, and rag-bench run -------------------------------------------


APP = '''
import json, os
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.experimental.callback import Callback
from omegaconf import OmegaConf


def dump(name, data):
    Path(os.environ["DUMP"], name).write_text(json.dumps(data, indent=1, sort_keys=True, default=str))


class Returns(Callback):
    def on_job_start(self, config, **kwargs):
        dump(f"start-{config.hydra.job.num}.json", {"hydra": HydraConfig.get()._get_parent() is config,
             "output_dir": config.hydra.runtime.output_dir})

    def on_job_end(self, config, job_return, **kwargs):
        value = job_return._return_value
        dump(f"return-{config.hydra.job.num}.json", {
            "status": job_return.status.name, "value": repr(value), "overrides": job_return.overrides,
            "working_dir": job_return.working_dir, "task_name": job_return.task_name,
            "cfg": OmegaConf.to_container(job_return.cfg), "hydra_cfg": OmegaConf.to_container(job_return.hydra_cfg),
            "hydra_cfg_parent": job_return.hydra_cfg.hydra._get_parent() is job_return.hydra_cfg})


@hydra.main(version_base="1.3", config_path="conf", config_name="app")
def main(cfg):
    hc = HydraConfig.get()
    logging_ = __import__("logging")
    logging_.getLogger("app").info("task x=%s", cfg.x)
    dump(f"task-{hc.job.num}.json", {
        "cfg": OmegaConf.to_container(cfg), "hydra": OmegaConf.to_container(hc), "output_dir": hc.runtime.output_dir,
        "id": hc.job.id, "num": hc.job.num, "choices": dict(hc.runtime.choices), "cwd": os.getcwd(),
        "env": os.environ.get("APP_ENV"), "readonly": hc._get_flag("readonly"), "struct": hc._get_flag("struct"),
        "type": OmegaConf.get_type(HydraConfig.instance().cfg, "hydra").__name__,
        "resolved": OmegaConf.to_container(hc.job, resolve=True)})
    if cfg.x == 3:
        raise ValueError("x is 3")
    return cfg.x * 10


if __name__ == "__main__":
    main()
'''

APP_CONFIG = """\
defaults:
  - _self_
x: 1
hydra:
  callbacks:
    returns:
      _target_: app.Returns
"""


def _app(tmp_path: Path, launcher_name: str, *overrides: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    app = tmp_path / "app"
    if not app.exists():
        (app / "conf").mkdir(parents=True)
        (app / "app.py").write_text(APP)
        (app / "conf" / "app.yaml").write_text(APP_CONFIG)
    root = tmp_path / launcher_name
    dump = root / "dump"
    dump.mkdir(parents=True)
    # Hydra's short error report, whatever this worker's environment holds: rag-bench run, called
    # in process by other tests, sets HYDRA_FULL_ERROR=1 (the full trace names each run_job's module).
    env = {**{k: v for k, v in os.environ.items() if k != "HYDRA_FULL_ERROR"}, "DUMP": str(dump),
           "PYTHONPATH": str(app)}
    done = subprocess.run([sys.executable, str(app / "app.py"), "-m", "x=1,2,3", f"hydra/launcher={launcher_name}",
                           f"hydra.sweep.dir={root / 'sweep'}", *overrides], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    return done, root


STAMP = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}")


def _normal(text: str, root: Path) -> str:
    """Without timestamps, the run's own folder and the launcher's name."""
    text = STAMP.sub("<time>", text.replace(str(root), "<root>"))
    text = text.replace("hydra_plugins.rag_bench_sweeper.rag_bench_launcher.RagBenchLauncher",
                        "hydra._internal.core_plugins.basic_launcher.BasicLauncher")
    return re.sub(r"(hydra/launcher\W{1,4})rag_bench", r"\1basic", text)


def _outputs(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): _normal(p.read_text(), root) for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("overrides", [
    (),  # a folder per job, Hydra's default logging: a log file per job
    ("hydra.job.chdir=true", "+hydra.job.env_set.APP_ENV=n${hydra.job.num}", "hydra.verbose=[app]"),
    ("hydra.sweep.subdir=.", "hydra.output_subdir=null"),  # one folder: the same job logging for all
], ids=["per-job", "chdir-env-verbose", "one-folder"])
def test_a_multirun_is_what_the_basic_launcher_gives(tmp_path, overrides):
    basic, basic_root = _app(tmp_path, "basic", *overrides)
    ours, our_root = _app(tmp_path, "rag_bench", *overrides)
    assert basic.returncode == ours.returncode == 1  # x=3 fails: Hydra raises it after the batch
    assert "ValueError: x is 3" in ours.stderr
    assert _normal(ours.stderr, our_root) == _normal(basic.stderr, basic_root)
    mine, theirs = _outputs(our_root), _outputs(basic_root)
    assert len([k for k in mine if k.startswith("dump/return-")]) == 3
    if overrides[:1] == ("hydra.sweep.subdir=.",):
        # Between two jobs of the same logging the launcher's '#N' line goes through the job
        # logging: on the console in the job's format, and in the shared log file.
        lines = [ln for ln in _normal(ours.stdout, our_root).splitlines() if "\t#" not in ln]
        assert lines == [ln for ln in _normal(basic.stdout, basic_root).splitlines() if "\t#" not in ln]
        log = "sweep/app.log"
        assert [ln for ln in mine.pop(log).splitlines() if "\t#" not in ln] == theirs.pop(log).splitlines()
    else:
        assert _normal(ours.stdout, our_root) == _normal(basic.stdout, basic_root)
    assert mine == theirs
    task = json.loads(mine["dump/task-1.json"])
    assert task["id"] == "1" and task["num"] == 1 and task["readonly"] is True and task["type"] == "HydraConf"
    assert json.loads(mine["dump/return-2.json"])["status"] == "FAILED"
    assert json.loads(mine["dump/start-0.json"])["hydra"] is True


def test_a_rag_bench_sweep_is_what_the_basic_launcher_gives(tmp_path):
    results = {}
    for name in ("basic", "rag_bench"):
        out = tmp_path / name
        env = {**{k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}, "TQDM_DISABLE": "1"}
        done = subprocess.run([str(BIN / "rag-bench"), "run", "-m", "chunker=fixed,section", "pipeline.k=3,5",
                               f"hydra/launcher={name}", f"dataset.path={TINY}", f"output.root={out}", "tracking=none",
                               "generator=none"], env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        cells = {p.parent.name: p.read_text().replace(str(out), "<out>") for p in (out / "default").glob("*/config.yaml")}
        log = re.sub(r"^\[[^]]*\]", "", (out / "default" / ".hydra" / "rag_bench.log").read_text(), flags=re.M)
        log = re.sub(r"sweep='?[0-9a-f]{16}'?", "sweep=<id>", log)  # the two commands are two sweeps
        # what the sweep spent on its background process (rag_bench.tracking.background.wait_line): only
        # our launcher hands cells to one
        log = re.sub(r"^ ?\[rag_bench\.tracking\.background\]\[INFO\] finishing cells in the background: .*\n", "",
                     log, flags=re.M) if name == "rag_bench" else log
        results[name] = (cells, done.stdout.replace(str(out), "<out>"), log.replace(str(out), "<out>"))
    assert len(results["basic"][0]) == 4
    assert results["rag_bench"] == results["basic"]
