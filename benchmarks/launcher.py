"""Per-job cost of the launcher itself: Hydra's basic launcher vs rag_bench's, side by side.

N jobs (default 40) of the real rag_bench config (``pipeline.k`` swept), each composed once up
front by Hydra's config loader, are launched by ``BasicLauncher.launch`` (``run_job`` per job,
``configure_log(hydra_logging)`` after each) and by ``RagBenchLauncher.launch`` with a no-op task
and no callbacks, so only the launcher's own work is timed: copies of the config, HydraConfig,
output folder, logging. Each launcher gets fresh pickled copies of the same composed configs.
Best of ``--repeat`` runs; the figures are s/job.

    python benchmarks/launcher.py            # 40 jobs, best of 5
    python benchmarks/launcher.py --jobs 60 --repeat 3
"""

from __future__ import annotations

import argparse
import logging
import pickle
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hydra._internal.callbacks import Callbacks  # noqa: E402
from hydra._internal.config_loader_impl import ConfigLoaderImpl  # noqa: E402
from hydra._internal.core_plugins.basic_launcher import BasicLauncher  # noqa: E402
from hydra._internal.utils import create_config_search_path  # noqa: E402
from hydra.core.hydra_config import HydraConfig  # noqa: E402
from hydra.types import HydraContext, RunMode  # noqa: E402
from omegaconf import DictConfig  # noqa: E402

from hydra_plugins.rag_bench_sweeper.rag_bench_launcher import RagBenchLauncher  # noqa: E402
from rag_bench.runner.config import CONF_DIR, register_configs  # noqa: E402


class Composed:
    """A config loader that hands out copies of configs composed beforehand, in order."""

    def __init__(self, configs: list[bytes]) -> None:
        self.configs, self.next = configs, 0

    def load_sweep_config(self, master: DictConfig, overrides: list[str]) -> DictConfig:
        config: DictConfig = pickle.loads(self.configs[self.next])
        self.next += 1
        return config


def noop(cfg: DictConfig) -> int:
    return 0


def timed(launcher_cls: Any, master: DictConfig, jobs: list[list[str]], frozen: list[bytes]) -> float:
    configs = [pickle.loads(b) for b in frozen]  # unpickled before the clock starts
    loader = Composed([pickle.dumps(c) for c in configs])
    launcher = launcher_cls()
    launcher.setup(hydra_context=HydraContext(config_loader=loader, callbacks=Callbacks(None)),  # type: ignore[arg-type]
                   task_function=noop, config=master)
    # Composition is excluded: the loader's unpickling is timed apart and subtracted.
    start = time.perf_counter()
    for b in loader.configs:
        pickle.loads(b)
    unpickle = time.perf_counter() - start
    start = time.perf_counter()
    runs = launcher.launch(jobs, initial_job_idx=0)
    elapsed = time.perf_counter() - start - unpickle
    assert len(runs) == len(jobs) and all(r.return_value == 0 for r in runs)
    return elapsed / len(jobs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=40)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    register_configs()
    out = tempfile.mkdtemp(prefix="rag_bench-launcher-")
    loader = ConfigLoaderImpl(create_config_search_path(str(CONF_DIR)))
    master = loader.load_configuration("config", [f"output.root={out}", "tracking=none"], RunMode.MULTIRUN)
    HydraConfig.instance().set_config(master)
    jobs = [[f"pipeline.k={k + 1}", f"output.root={out}", "tracking=none"] for k in range(args.jobs)]
    frozen = []
    for i, job in enumerate(jobs):
        config = loader.load_sweep_config(master, job)
        frozen.append(pickle.dumps(config))
    best = {"basic": float("inf"), "rag_bench": float("inf")}
    for _ in range(args.repeat):
        for name, cls in (("basic", BasicLauncher), ("rag_bench", RagBenchLauncher)):
            best[name] = min(best[name], timed(cls, master, jobs, frozen))
    logging.shutdown()
    shutil.rmtree(out, ignore_errors=True)
    print(f"{args.jobs} jobs of the rag_bench config, no-op task, best of {args.repeat}:")
    print(f"  basic      {best['basic']:.4f} s/job")
    print(f"  rag_bench  {best['rag_bench']:.4f} s/job")
    print(f"  ratio      {best['basic'] / best['rag_bench']:.2f}x")


if __name__ == "__main__":
    main()
