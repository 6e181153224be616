"""Whether a SLURM request can ever run: checked against the partition before submitting, and
watched while its jobs wait.

SLURM accepts a job that asks more CPUs per task than any node of its partition has and leaves it
PENDING for ever (``Reason=PartitionConfig``); submitit then waits with nothing but its accounting
warnings. So before an array is submitted, the request (``hydra.launcher.cpus_per_task``,
``mem_gb``, ``partition``) is compared with the partition's nodes as ``sinfo`` lists them: when no
node can hold one task the command stops (exit 2) naming the largest node and the settings that
fit. While the array waits to start, ``squeue``'s pending reason is read: a reason that cannot
change without an administrator (:data:`NEVER`) cancels the array and stops the command; any other
reason is printed once (a long wait is then visible, with the command that ends it). Without
``sinfo``/``squeue`` (not on a SLURM login node) both checks are skipped.
"""

from __future__ import annotations

import logging
import shutil
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rag_bench.errors import ConfigError

log = logging.getLogger(__name__)

# Pending reasons a job keeps until the partition or the account is changed by an administrator.
NEVER = {
    "PartitionConfig": "the request exceeds what the partition's nodes or limits allow",
    "PartitionNodeLimit": "the request needs more nodes than the partition allows",
    "PartitionTimeLimit": "the time limit exceeds the partition's",
    "BadConstraints": "the constraints cannot be met by any node",
    "InvalidAccount": "the account is not valid",
    "InvalidQOS": "the QOS is not valid",
}
FIX = ("fix: ask what a node holds, e.g. +cluster=slurm hydra.launcher.cpus_per_task=N hydra.launcher.mem_gb=G "
       "hydra.launcher.timeout_min=T, or choose another partition with hydra.launcher.partition=NAME "
       "(`sinfo -N -o '%P %c %m %l'` lists them)")


@dataclass(frozen=True)
class Node:
    """One node of one partition, as ``sinfo -N`` lists it."""

    partition: str
    default: bool   # the cluster's default partition
    name: str
    cpus: int
    mem_mb: int


def _run(cmd: Sequence[str]) -> str | None:
    """``cmd``'s output, or None when SLURM's tools are absent or fail."""
    if shutil.which(cmd[0]) is None:
        return None
    try:
        out = subprocess.run(list(cmd), capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout if out.returncode == 0 else None


def nodes() -> list[Node] | None:
    """Every node of every partition (None without ``sinfo``)."""
    out = _run(["sinfo", "-h", "-N", "-o", "%P|%N|%c|%m"])
    if out is None:
        return None
    found = []
    for line in out.splitlines():
        parts = line.strip().split("|")
        if len(parts) != 4:
            continue
        partition, name, cpus, mem = parts
        try:
            found.append(Node(partition.rstrip("*"), partition.endswith("*"), name, int(cpus.rstrip("+")),
                              int(mem.rstrip("+"))))
        except ValueError:
            continue
    return found


def check_request(partition: str | None, cpus: int | None, mem_gb: float | None) -> None:
    """Raise :class:`ConfigError` when no node of ``partition`` (None: the default one) has
    ``cpus`` CPUs and ``mem_gb`` GiB (SLURM's ``--mem=<n>G``), or the partition does not exist."""
    listed = nodes()
    if not listed:
        log.debug("no sinfo here: the SLURM request is not checked before submission")
        return
    mine = [n for n in listed if (n.partition == partition if partition else n.default)]
    if not mine:
        names = sorted({n.partition for n in listed})
        if partition:
            raise ConfigError(f"SLURM has no partition {partition!r} (it has {', '.join(names)}) -- fix: "
                              f"hydra.launcher.partition={names[0]}, or one of the others")
        return  # no default partition: sbatch itself refuses the job, naming why
    need_cpus, need_mb = int(cpus or 1), int((mem_gb or 0) * 1024)
    if any(n.cpus >= need_cpus and n.mem_mb >= need_mb for n in mine):
        return
    name = mine[0].partition
    big_cpus, big_mb = max(n.cpus for n in mine), max(n.mem_mb for n in mine)
    fit = [f"hydra.launcher.cpus_per_task={min(need_cpus, big_cpus)}"]
    if need_mb:
        fit.append(f"hydra.launcher.mem_gb={max(1, min(int(mem_gb or 0), big_mb // 1024))}")
    raise ConfigError(f"SLURM partition {name!r} has no node for one task: its largest node has {big_cpus} CPUs "
                      f"and {big_mb} MB; the request asks {need_cpus} CPUs" + (f" and {need_mb} MB" if need_mb else "")
                      + " per task (the job would wait for ever, Reason=PartitionConfig) -- fix: +cluster=slurm "
                      + " ".join(fit) + " (or hydra.launcher.partition=<a partition with bigger nodes>)")


def pending(array_id: str) -> list[tuple[str, str, str]] | None:
    """(task id, state, reason) of the array's tasks squeue still lists; None without squeue."""
    out = _run(["squeue", "-h", "-j", array_id, "-o", "%i|%T|%r"])
    if out is None:
        return None
    return [tuple(line.strip().split("|", 2)) for line in out.splitlines() if line.count("|") >= 2]  # type: ignore[misc]


def wait_until_started(array_id: str, *, poll_s: float = 5.0, report: Callable[[str], None] = print) -> None:
    """Return once a task of the array runs (or the array is gone from squeue); cancel the array
    and raise :class:`ConfigError` when every task waits for a reason in :data:`NEVER`."""
    said = ""
    while True:
        tasks = pending(array_id)
        if not tasks or any(state != "PENDING" for _, state, _ in tasks):
            return
        reasons = sorted({reason for _, _, reason in tasks})
        never = [r for r in reasons if r.split(",")[0] in NEVER]
        if never and len(never) == len(reasons):
            _run(["scancel", array_id])
            why = never[0].split(",")[0]
            raise ConfigError(f"SLURM array job {array_id} can never start: pending with Reason={never[0]} ({NEVER[why]}); "
                              f"it was cancelled -- {FIX}")
        now = ", ".join(reasons)
        if now != said and now not in ("None", "Priority", "Resources"):
            report(f"cluster: array job {array_id} pending ({now}); waiting -- stop with: scancel {array_id}")
        said = now
        time.sleep(poll_s)
