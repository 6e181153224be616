"""The grid of a cluster sweep as jobs grouped by shared work (issue 30): one place for the plan.

A cell's expensive prefix is its dataset x chunker x embedder x index: chunking the corpus,
embedding the chunks, building the index. Cells that share it (they differ in the retriever, k,
the generator, eval settings) go into ONE job, whose cells run one after the other in one process
and share :class:`~rag_bench.memo.SharedWork` as a local sweep does, so no two jobs chunk, embed or
index the same thing. ``hydra.launcher.max_jobs`` (``--max-jobs N``) caps the array: groups are
then merged (never split), each into the job with the fewest cells so far.

Only cells without DONE are planned (success is the cell's DONE, never the scheduler's word); the
plan is printed before submission and written beside submitit's job folders
(``<experiment>/.submitit/<array id>.plan.json``) so ``rag-bench status`` knows which job holds
which cell, including cells a killed job never reached.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag_bench.components import SWEEP_ORDER
from rag_bench.runner.sweeper import stage_rank

# Stages of the shared prefix (up to and including the index): the overrides that name them label a job.
PREFIX_STAGES = ("dataset", "chunker", "embedder", "index")
PLAN_SUFFIX = ".plan.json"
READ_LIMIT = 16 << 20  # bytes of one job log or plan that status reads (its tail, for a log)
START = "rag-bench job: cell {cid} starting"     # printed by a job before each cell (status reads it)
FAILED = "rag-bench job: cell {cid} failed"      # printed to stderr with the traceback


@dataclass(frozen=True)
class PlannedCell:
    """One cell of the grid as the launcher sees it."""

    index: int                    # position in the launcher's batch (Hydra's job number - first)
    overrides: tuple[str, ...]
    cell_id: str
    prefix: str                   # the shared-work key: dataset x chunker x embedder x index
    texts: frozenset[str] | None  # distinct texts its prefix embeds (None: no embedder, or not countable)


@dataclass(frozen=True)
class PlannedJob:
    cells: tuple[PlannedCell, ...]

    @property
    def prefixes(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(c.prefix for c in self.cells))

    @property
    def texts(self) -> int | None:
        """Distinct texts this job embeds (chunks of its chunkings and the questions), None if unknown."""
        sets = [c.texts for c in self.cells]
        if any(s is None for s in sets):
            return None if all(s is None for s in sets) else -1
        return len(frozenset().union(*sets))  # type: ignore[arg-type]


def label(overrides: Sequence[str]) -> str:
    """The overrides of a cell that choose its shared prefix (dataset, chunker, embedder, index).

    >>> label(["chunker=fixed", "pipeline.k=3", "embedder=minilm", "retriever=dense"])
    'chunker=fixed embedder=minilm'
    >>> label(["pipeline.k=3"])
    '(defaults)'
    """
    last = SWEEP_ORDER.index(PREFIX_STAGES[-1])
    chosen = [o for o in overrides if "=" in o and stage_rank(o.split("=", 1)[0]) <= last
              and not o.lstrip("+~").startswith("hydra")]
    return " ".join(chosen) or "(defaults)"


def group(cells: Sequence[PlannedCell], max_jobs: int | None = None) -> list[PlannedJob]:
    """One job per shared prefix, in grid order; with ``max_jobs``, groups merged into that many
    jobs (largest group first, each into the job with the fewest cells; a group is never split).

    >>> cs = [PlannedCell(i, (), f"c{i}", p, None) for i, p in enumerate("aabbbc")]
    >>> [[c.cell_id for c in j.cells] for j in group(cs)]
    [['c0', 'c1'], ['c2', 'c3', 'c4'], ['c5']]
    >>> [[c.cell_id for c in j.cells] for j in group(cs, max_jobs=2)]
    [['c0', 'c1', 'c5'], ['c2', 'c3', 'c4']]
    """
    if max_jobs is not None and max_jobs < 1:
        raise ValueError(f"max_jobs must be >= 1, got {max_jobs}")
    groups: dict[str, list[PlannedCell]] = {}
    for c in cells:
        groups.setdefault(c.prefix, []).append(c)
    bins = list(groups.values())
    if max_jobs is not None and len(bins) > max_jobs:
        merged: list[list[PlannedCell]] = [[] for _ in range(max_jobs)]
        for g in sorted(bins, key=len, reverse=True):  # stable: equal sizes keep grid order
            min(merged, key=len).extend(g)
        bins = [sorted(b, key=lambda c: c.index) for b in merged if b]
        bins.sort(key=lambda b: b[0].index)
    return [PlannedJob(tuple(b)) for b in bins]


def describe(jobs: Sequence[PlannedJob], done: int, labels: dict[str, str]) -> str:
    """The plan as printed before submission: jobs, cells per job, distinct texts to embed per job."""
    cells = sum(len(j.cells) for j in jobs)
    lines = [f"cluster plan: {cells} cell(s) to run in {len(jobs)} job(s); {done} cell(s) already done, not submitted"]
    for i, j in enumerate(jobs):
        texts = j.texts
        what = "no embedder" if texts is None else "some counted in the job" if texts < 0 else f"{texts}"
        lines.append(f"  job {i}: {len(j.cells)} cell(s), {len(j.prefixes)} shared prefix(es), "
                     f"distinct texts to embed: {what} -- " + "; ".join(labels[p] for p in j.prefixes))
    known = [c.texts for j in jobs for c in j.cells if c.texts is not None]
    if known:
        lines.append(f"  distinct texts to embed in all: {len(frozenset().union(*known))} (a text several jobs "
                     "share, e.g. a question, is embedded by the first; jobs running at once may each embed it "
                     "unless `rag-bench embed` ran first)")
    return "\n".join(lines)


def write_plan(folder: Path, array_id: str, task_ids: Sequence[str], jobs: Sequence[PlannedJob],
               labels: dict[str, str]) -> Path:
    """``<folder>/<array id>.plan.json``: which task holds which cells (read by ``rag-bench status``)."""
    folder.mkdir(parents=True, exist_ok=True)
    data = {"array": array_id, "jobs": [
        {"job_id": tid, "cells": [{"cell_id": c.cell_id, "prefix": labels[c.prefix], "overrides": list(c.overrides)}
                                  for c in j.cells]} for tid, j in zip(task_ids, jobs)]}
    path = folder / f"{array_id}{PLAN_SUFFIX}"
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data, indent=1))
    tmp.replace(path)
    return path


def read_plans(folder: Path) -> dict[str, tuple[str, str]]:
    """cell id -> (job id, prefix label) of the latest plan that holds it (plans of older arrays first)."""
    out: dict[str, tuple[str, str]] = {}
    plans = sorted(folder.glob(f"*{PLAN_SUFFIX}"), key=lambda p: _number(p.name[: -len(PLAN_SUFFIX)]))
    for path in plans:
        try:
            data: Any = json.loads(read_regular(path, tail=False))
            for job in data["jobs"]:
                for cell in job["cells"]:
                    if re.fullmatch(r"[0-9a-f]{12}", str(cell["cell_id"])):  # a cell id, never a path
                        out[str(cell["cell_id"])] = (str(job["job_id"]), str(cell.get("prefix", "")))
        except (OSError, ValueError, KeyError, TypeError):
            continue  # a damaged plan only loses the job names of its cells
    return out


def read_regular(path: Path, limit: int = READ_LIMIT, *, tail: bool = True) -> str:
    """The text of ``path`` if it is a regular file: its last ``limit`` bytes (``tail``) or its first;
    "" for anything else. The files under ``.submitit`` are named by whoever can write there: a FIFO
    named like a log would block ``open`` forever and a device would never end, so the file is
    opened without blocking and without following a link, and read only when fstat says regular."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError:
        return ""
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return ""
        if tail and st.st_size > limit:
            f.seek(st.st_size - limit)
        return f.read(limit).decode("utf-8", errors="replace")


def _number(text: str) -> int:
    return int(text) if text.isdigit() else -1
