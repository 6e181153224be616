"""The SLURM launcher of ``+cluster=slurm`` (``hydra/launcher=rag_bench_slurm``): Hydra's submitit
SLURM launcher, except that it submits jobs grouped by shared work and only the missing cells.

``launch`` composes every cell of the batch (as the job will), computes its cell id and leaves
out the cells that have DONE; the rest are grouped by :mod:`rag_bench.cluster.jobs` (one job per
dataset x chunker x embedder x index, capped by ``max_jobs``), the plan is printed, and the jobs
go to SLURM as one array. Each array task runs its cells one after the other in one process
(Hydra's ``run_job`` per cell, as submitit's launcher does for its single cell), so they share the
process's :class:`~rag_bench.memo.SharedWork`; a failing cell does not stop the others, and its
traceback is written to the task's stderr log (Hydra's own launcher keeps it in the pickled result
only, Hydra #2100). The class lives in ``hydra_plugins.rag_bench_sweeper.rag_bench_slurm``.
"""

from __future__ import annotations

import logging
import sys
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn, JobStatus
from hydra_plugins.hydra_submitit_launcher.config import BaseQueueConf, SlurmQueueConf
from hydra_plugins.hydra_submitit_launcher.submitit_launcher import SlurmLauncher
from omegaconf import DictConfig, OmegaConf, open_dict

from rag_bench.cluster.jobs import FAILED, START, PlannedCell, PlannedJob, describe, group, label, write_plan
from rag_bench.runner.grid import uses_embedder

log = logging.getLogger(__name__)


@dataclass
class RagBenchSlurmConf(SlurmQueueConf):
    """submitit's SLURM settings, plus ``max_jobs``: the most array tasks (groups merged to fit)."""

    _target_: str = "hydra_plugins.rag_bench_sweeper.rag_bench_slurm.RagBenchSlurmLauncher"
    max_jobs: int | None = None


class _Planner:
    """Cell ids, shared-work keys and distinct texts of composed cells (datasets and chunkings once)."""

    def __init__(self) -> None:
        self.texts: dict[str, frozenset[str] | None] = {}
        self.datasets: dict[tuple[str, str], Any] = {}  # loaded (and hashed) once per plan, not per cell

    def cell(self, index: int, overrides: Sequence[str], cfg: DictConfig) -> tuple[PlannedCell, bool]:
        from rag_bench.cells import is_done
        from rag_bench.data.loader import load_dataset
        from rag_bench.runner.config import cell_id, dataset_path

        task = cfg.copy()
        with open_dict(task):
            task.pop("hydra", None)
        where = (str(dataset_path(task)), str(task.dataset.split))
        if where not in self.datasets:
            self.datasets[where] = load_dataset(where[0], split=where[1])
        dataset = self.datasets[where]
        cid = cell_id(task, dataset.fingerprint)
        node = {g: OmegaConf.to_container(task[g], resolve=True) for g in ("chunker", "embedder", "index") if g in task}
        archived = bool(task.pipeline.include_archived)  # which chunks are indexed: part of the shared work
        prefix = repr((dataset.fingerprint, str(task.dataset.split), archived, sorted(node.items())))
        if prefix not in self.texts:
            self.texts[prefix] = self._texts(task, dataset) if uses_embedder(task) else None
        done = is_done(Path(str(task.output.root)) / str(task.experiment.name) / cid)
        return PlannedCell(index, tuple(overrides), cid, prefix, self.texts[prefix]), done

    @staticmethod
    def _texts(cfg: DictConfig, dataset: Any) -> frozenset[str] | None:
        """The chunk texts and questions this prefix embeds; None when chunking needs the embedder
        itself (a semantic chunker: counting would load the model here)."""
        from rag_bench.runner.config import build, wants

        if wants(cfg.chunker, "chunker", "embedder"):
            return None
        chunks = build(cfg.chunker, "chunker").chunk(list(dataset.documents.values()))
        archived = bool(cfg.pipeline.include_archived)
        return frozenset([f"d\0{c.text}" for c in chunks
                          if not c.is_parent and (archived or not dataset.documents[c.doc_id].archived)]
                         + [f"q\0{q.question}" for q in dataset.questions])


class GroupedSlurmLauncher(SlurmLauncher):
    """submitit's SLURM launcher with one array task per group of cells sharing work."""

    def __init__(self, max_jobs: int | None = None, **params: Any) -> None:
        super().__init__(**params)
        if max_jobs is not None and int(max_jobs) < 1:
            from rag_bench.errors import ConfigError

            raise ConfigError(f"hydra.launcher.max_jobs={max_jobs}: must be >= 1 -- fix: --max-jobs N with N >= 1, "
                              "or leave it out (one job per chunker x embedder x index)")
        self.max_jobs = None if max_jobs is None else int(max_jobs)

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        assert self.config is not None and self.hydra_context is not None
        from rag_bench.runner.callbacks import context_of
        from rag_bench.runner.sweeper import record_progress

        planner = _Planner()
        cells: list[PlannedCell] = []
        done: list[PlannedCell] = []
        sweep = None
        for i, overrides in enumerate(job_overrides):
            cfg = self.hydra_context.config_loader.load_sweep_config(self.config, list(overrides))
            cell, is_done = planner.cell(i, overrides, cfg)
            (done if is_done else cells).append(cell)
            sweep = sweep or context_of(cfg)
        labels = {c.prefix: label(c.overrides) for c in [*cells, *done]}
        jobs = group(cells, self.max_jobs)
        print(describe(jobs, len(done), labels), flush=True)
        results: dict[int, JobReturn] = {}
        for c in done:  # success is the cell's DONE: nothing to submit for it
            if sweep is not None:
                record_progress(sweep, "done", c.cell_id)
            results[c.index] = JobReturn(overrides=list(c.overrides), status=JobStatus.COMPLETED,
                                         task_name=str(self.config.hydra.job.name))
        if jobs:
            for c, r in zip([c for j in jobs for c in j.cells], self._submit(jobs, labels, initial_job_idx)):
                results[c.index] = r
        return [results[i] for i in range(len(job_overrides))]

    def _submit(self, jobs: list[PlannedJob], labels: dict[str, str], first: int) -> list[JobReturn]:
        import submitit

        from rag_bench.cluster.request import check_request, wait_until_started

        assert self.config is not None
        params = dict(self.params)
        check_request(params.get("partition"), params.get("cpus_per_task"), params.get("mem_gb"))
        executor = submitit.AutoExecutor(cluster="slurm", folder=params.pop("submitit_folder"),
                                         slurm_max_num_timeout=params.pop("max_num_timeout", 0))
        base = set(OmegaConf.structured(BaseQueueConf).keys())
        executor.update_parameters(**{k if k in base else f"slurm_{k}": v for k, v in params.items()})
        sweep_dir = Path(str(self.config.hydra.sweep.dir))
        sweep_dir.mkdir(parents=True, exist_ok=True)
        state = Singleton.get_state()
        tasks = [[(list(c.overrides), first + c.index, c.cell_id) for c in j.cells] for j in jobs]
        submitted = executor.map_array(self.run_group, tasks, [state] * len(tasks))
        array = submitted[0].job_id.split("_")[0]
        plan = write_plan(Path(str(self.params["submitit_folder"])).parent, array, [j.job_id for j in submitted], jobs, labels)
        print(f"cluster plan: submitted {len(submitted)} job(s) as array {array} (plan: {plan})", flush=True)
        wait_until_started(array)
        return [r for j in submitted for r in j.results()[0]]

    def run_group(self, cells: list[tuple[list[str], int, str]], singleton_state: dict[type, Singleton]) -> list[JobReturn]:
        """The body of one array task: its cells in this process, one after the other."""
        out = []
        for overrides, number, cid in cells:
            print(START.format(cid=cid), "|", " ".join(overrides), flush=True)
            ret = self(overrides, "hydra.sweep.dir", number, f"job_id_for_{number}", singleton_state)
            if ret.status == JobStatus.FAILED:
                exc = ret._return_value
                print(FAILED.format(cid=cid) + f": {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
                traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
                sys.stderr.flush()
            out.append(ret)
        return out
