"""`rag-bench status EXPERIMENT`: what a cluster sweep has done, from the files it leaves.

Success is a cell's DONE, never the scheduler's word (submitit has reported failed jobs as
COMPLETED, Hydra #1928). A job is read from its submitit folder
(``<experiment>/.submitit/<job id>/``: ``*_log.out``, ``*_log.err``) and, while the scheduler
still knows it, from ``squeue``; the cell it ran is named by the cell's own summary line in the log.
Nothing here unpickles the job files (they may come from another machine).

The plan the launcher writes (``<experiment>/.submitit/<array id>.plan.json``,
:mod:`rag_bench.cluster.jobs`) names the cells of every job, so a cell is: done (DONE), running or
pending (its job is), failed (its job started it and ended without its DONE, or logged its error),
or missing (nothing is computing it and no job started it: run the same command again), or pruned
(a halving sweep dropped it after a round: docs/search.md).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from rag_bench.cluster.jobs import FAILED, START, read_plans, read_regular
from rag_bench.errors import OutputError

CELL_DONE = re.compile(r"^cell ([0-9a-f]{12}) done:", re.M)
CELL_START = re.compile("^" + re.escape(START).replace(re.escape("{cid}"), "([0-9a-f]{12})"), re.M)
CELL_FAILED = re.compile("^" + re.escape(FAILED).replace(re.escape("{cid}"), "([0-9a-f]{12})"), re.M)
SUBMITIT_OK = "Job completed successfully"
TAIL_LINES = 8


@dataclass(frozen=True)
class JobStatus:
    job_id: str
    state: str            # done | running | pending | failed | unknown
    scheduler: str        # the scheduler's state, or "" when it no longer lists the job
    cells: tuple[str, ...]  # cell ids the job finished (from its log)
    log: Path             # stderr log (the error, when there is one)
    error_tail: str       # last lines of the error log for a failed job
    started: tuple[str, ...] = ()  # cell ids the job started (from its log)
    failed: tuple[str, ...] = ()   # cell ids whose error the job logged


@dataclass(frozen=True)
class CellStatus:
    cell_id: str
    state: str            # done | running | pending | failed | missing | pruned (search=halving)
    job_id: str           # the job that holds it (finished, runs or ran it), or ""
    group: str = ""       # the overrides of its shared prefix (from the plan)


def _scheduler_states(job_ids: list[str]) -> dict[str, str]:
    """job id -> state, for the jobs squeue still lists ({} without squeue)."""
    if not job_ids or shutil.which("squeue") is None:
        return {}
    out = subprocess.run(["squeue", "-h", "-t", "all", "-o", "%i %T"], capture_output=True, text=True, timeout=30)
    if out.returncode != 0:
        return {}
    states = dict(line.split(None, 1) for line in out.stdout.splitlines() if len(line.split()) == 2)
    return {j: states[j] for j in job_ids if j in states}


def _tail(path: Path, n: int = TAIL_LINES) -> str:
    lines = [ln for ln in read_regular(path).splitlines() if ln.strip()]
    return "\n".join(lines[-n:])


def _job(folder: Path, scheduler: str) -> JobStatus:
    job_id = folder.name
    outs = sorted(p for p in folder.glob("*_log.out") if p.is_file() and not p.is_symlink())
    errs = sorted(p for p in folder.glob("*_log.err") if p.is_file() and not p.is_symlink())
    text = "".join(read_regular(p) for p in outs)
    cells = tuple(dict.fromkeys(CELL_DONE.findall(text)))
    started = tuple(dict.fromkeys(CELL_START.findall(text)))
    failed = tuple(dict.fromkeys(CELL_FAILED.findall("".join(read_regular(p) for p in errs))))
    log = errs[-1] if errs else folder / f"{job_id}_0_log.err"
    if scheduler in ("PENDING", "CONFIGURING"):
        state = "pending"
    elif scheduler in ("RUNNING", "COMPLETING"):
        state = "running"
    elif SUBMITIT_OK in text and cells and not failed:
        state = "done"
    elif outs or errs or scheduler:
        state = "failed"  # ended without finishing its cell: cancelled, timed out, node lost, error
    else:
        state = "unknown"
    return JobStatus(job_id, state, scheduler, cells, log, _tail(log) if state == "failed" else "", started, failed)


def sweep_status(experiment_dir: str | Path) -> tuple[list[JobStatus], list[CellStatus]]:
    """The jobs of the sweep in ``experiment_dir`` and its cell folders, each with its state."""
    root = Path(experiment_dir)
    if not root.is_dir():
        raise OutputError(f"{root}: no such experiment folder -- fix: give <output.root>/<experiment.name>")
    folders = sorted((p for p in (root / ".submitit").glob("*") if p.is_dir()), key=lambda p: _job_key(p.name))
    states = _scheduler_states([p.name for p in folders])
    jobs = [_job(p, states.get(p.name, "")) for p in folders]
    jobs = [j for j in jobs if j.state != "unknown"]  # an array's own folder holds no task's logs
    plans = read_plans(root / ".submitit")
    folders_ = {p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith(".") and p.name != "cache"
                and ((p / "DONE").exists() or (p / "config.yaml").exists() or re.fullmatch(r"[0-9a-f]{12}", p.name))}
    cells = [_cell(c, root, jobs, plans) for c in sorted(folders_ | set(plans))]
    return jobs, cells


def _cell(cid: str, root: Path, jobs: list[JobStatus], plans: dict[str, tuple[str, str]]) -> CellStatus:
    """A cell's state from its DONE, the job the plan gives it (or whose log names it) and that job's state."""
    planned, group = plans.get(cid, ("", ""))
    named = [j for j in jobs if cid in j.cells or cid in j.started or cid in j.failed]
    job = next((j for j in jobs if j.job_id == planned), named[-1] if named else None)
    if (root / cid / "DONE").exists():
        done_by = next((j.job_id for j in jobs if cid in j.cells), planned)
        return CellStatus(cid, "done", done_by, group)
    if _pruned(root / cid):
        return CellStatus(cid, "pruned", planned, group)
    if job is None:
        return CellStatus(cid, "missing", planned, group)
    if job.state in ("running", "pending") and cid not in job.failed:
        return CellStatus(cid, job.state, job.job_id, group)
    state = "failed" if cid in job.started or cid in job.failed else "missing"
    return CellStatus(cid, state, job.job_id, group)


def _pruned(folder: Path) -> bool:
    """Whether a cell folder holds a cell a halving sweep pruned (docs/search.md): its round's
    results (PARTIAL) with a ``search`` block in metrics.json. The same command prunes it again."""
    from rag_bench.runner.rounds import PARTIAL

    if not (folder / PARTIAL).is_file():
        return False
    try:
        return "search" in json.loads((folder / "metrics.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False


def _job_key(name: str) -> tuple[int, ...]:
    return tuple(int(x) if x.isdigit() else 0 for x in re.split(r"[_.]", name))


def format_status(jobs: list[JobStatus], cells: list[CellStatus], names: dict[str, str] | None = None) -> str:
    """Counts, one line per job, one per cell, and every failed job's log with its last lines.
    ``names``: cell id -> the cell's name (its values on the swept axes), shown beside its id."""
    lines = []
    count = {s: sum(j.state == s for j in jobs) for s in ("done", "running", "pending", "failed", "unknown")}
    lines.append("jobs: " + ", ".join(f"{n} {s}" for s, n in count.items() if n) if jobs else "jobs: none submitted")
    states = {s: sum(c.state == s for c in cells) for s in ("done", "running", "pending", "failed", "missing",
                                                            "pruned")}
    lines.append("cells: " + ", ".join(f"{n} {s}" for s, n in states.items() if n or s == "done")
                 + ("; failed and missing cells are run by the same command again" if states["failed"] +
                    states["missing"] else "")
                 + ("; pruned: dropped by search=halving, their round's results kept (metrics.json search)"
                    if states["pruned"] else ""))
    for j in jobs:
        lines.append(f"  job {j.job_id:<12} {j.state:<8} {j.scheduler or '-':<11} cells done {','.join(j.cells) or '-'}")
    logs = {j.job_id: j.log for j in jobs}
    for c in cells:
        where = f" log {logs[c.job_id]}" if c.state == "failed" and c.job_id in logs else ""
        name = (names or {}).get(c.cell_id)
        lines.append(f"  cell {c.cell_id} {c.state:<8} job {c.job_id or '-'}{where}" + (f"  {name}" if name else "")
                     + (f"  ({c.group})" if c.group else ""))
    for j in jobs:
        if j.state == "failed":
            lines.append(f"failed job {j.job_id}: log {j.log}")
            lines.extend("    " + ln for ln in (j.error_tail or "(the log is empty)").splitlines())
    return "\n".join(lines)
