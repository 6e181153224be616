"""rag-bench status on a sweep's files (the layout submitit writes: <experiment>/.submitit/<job>/
<job>_0_log.out/.err, and the launcher's <array>.plan.json), without a scheduler: a finished job
names its cell, a cancelled one is a failure with its log path and last error lines; in a grouped
job the cell it was computing is failed and the ones it never reached are missing; a missing folder
is exit 2."""

from __future__ import annotations

from pathlib import Path

from rag_bench.cli import main
from rag_bench.cluster.jobs import START, PlannedCell, PlannedJob, write_plan
from rag_bench.cluster.status import format_status, sweep_status


def _job(root: Path, job: str, out: str, err: str = "") -> None:
    d = root / ".submitit" / job
    d.mkdir(parents=True)
    (d / f"{job}_0_log.out").write_text(out)
    (d / f"{job}_0_log.err").write_text(err)


def test_status_names_failed_job_log(tmp_path, capsys):
    exp = tmp_path / "grid"
    (exp / "9949f318c5c3").mkdir(parents=True)
    (exp / "9949f318c5c3" / "DONE").write_text("{}")
    (exp / "268cd3c90b7e").mkdir()  # started, never finished
    (exp / ".submitit" / "5").mkdir(parents=True)  # the array's own folder: no task, not a job
    _job(exp, "5_0", "submitit INFO - Starting\ncell 9949f318c5c3 done: fixed k=3 | hit@5=1.000\n"
         "submitit INFO - Job completed successfully\n")
    _job(exp, "5_1", "submitit INFO - Starting\n",
         "srun: got SIGCONT\nslurmstepd-vm: error: *** JOB 6 ON vm CANCELLED AT 2026-12-03T07:32:39 ***\n")
    jobs, cells = sweep_status(exp)
    assert [(j.job_id, j.state, j.cells) for j in jobs] == [("5_0", "done", ("9949f318c5c3",)),
                                                           ("5_1", "failed", ())]
    assert [(c.cell_id, c.state, c.job_id) for c in cells] == [("268cd3c90b7e", "missing", ""),
                                                               ("9949f318c5c3", "done", "5_0")]
    text = format_status(jobs, cells)
    assert f"failed job 5_1: log {exp / '.submitit/5_1/5_1_0_log.err'}" in text and "CANCELLED AT" in text
    assert main(["status", str(exp)]) == 0 and "1 done, 1 failed" in capsys.readouterr().out
    assert main(["status", str(tmp_path / "nope")]) == 2


def test_grouped_job_cancelled_mid_cell(tmp_path):
    exp = tmp_path / "grid"
    a, b, c, d = "aaaaaaaaaaa1", "bbbbbbbbbbb2", "ccccccccccc3", "ddddddddddd4"
    jobs = [PlannedJob(tuple(PlannedCell(i, (f"k={i}",), cid, "p", None) for i, cid in enumerate(cells)))
            for cells in ((a, b, c), (d,))]
    write_plan(exp / ".submitit", "7", ["7_0", "7_1"], jobs, {"p": "chunker=fixed"})
    (exp / a).mkdir()
    (exp / a / "DONE").write_text("{}")
    _job(exp, "7_0", f"{START.format(cid=a)} | k=0\ncell {a} done: fixed\n{START.format(cid=b)} | k=1\n",
         "slurmstepd: error: *** JOB 9 ON vm CANCELLED AT 2026-12-03T07:32:39 ***\n")
    _job(exp, "7_1", f"{START.format(cid=d)} | k=3\n", f"rag-bench job: cell {d} failed: ConfigError: bad\nTraceback\n")
    (exp / ".submitit" / "7_1" / "7_1_0_log.out").write_text(
        f"{START.format(cid=d)} | k=3\nsubmitit INFO - Job completed successfully\n")
    jobs_, cells = sweep_status(exp)
    assert [(j.job_id, j.state) for j in jobs_] == [("7_0", "failed"), ("7_1", "failed")]
    assert [(x.cell_id, x.state, x.job_id, x.group) for x in cells] == [
        (a, "done", "7_0", "chunker=fixed"), (b, "failed", "7_0", "chunker=fixed"),
        (c, "missing", "7_0", "chunker=fixed"), (d, "failed", "7_1", "chunker=fixed")]
    text = format_status(jobs_, cells)
    assert "cells: 1 done, 2 failed, 1 missing" in text, text
    assert f"cell {b} failed   job 7_0 log {exp / '.submitit/7_0/7_0_0_log.err'}" in text, text
    assert f"failed job 7_1: log {exp / '.submitit/7_1/7_1_0_log.err'}" in text and "ConfigError: bad" in text
