"""The grouping of a cluster sweep into jobs (rag_bench/cluster/jobs.py) and --max-jobs, without a
scheduler: one job per shared prefix in grid order; a cap merges whole groups, largest first, into
the job with the fewest cells; a bad --max-jobs is exit 2 before anything is submitted."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from rag_bench.cluster.jobs import PlannedCell, describe, group, read_plans, write_plan
from rag_bench.cluster.preset import with_cluster_launcher

BIN = Path(sys.executable).parent


def _cells(prefixes: str, texts: dict[str, frozenset[str] | None] | None = None) -> list[PlannedCell]:
    return [PlannedCell(i, (f"k={i}",), f"{i:012x}", p, (texts or {}).get(p)) for i, p in enumerate(prefixes)]


def test_one_job_per_prefix_and_cap_merges_whole_groups():
    cells = _cells("aabbbbcd")
    assert [len(j.cells) for j in group(cells)] == [2, 4, 1, 1]
    capped = group(cells, max_jobs=2)
    assert sorted(len(j.cells) for j in capped) == [4, 4]
    # every group in exactly one job (a split group would name its prefix in two), cells in grid order
    assert {p for j in capped for p in j.prefixes} == set("abcd") and sum(len(j.prefixes) for j in capped) == 4
    assert all([c.index for c in j.cells] == sorted(c.index for c in j.cells) for j in capped)
    assert [len(j.cells) for j in group(cells, max_jobs=1)] == [8]
    assert [len(j.cells) for j in group(cells, max_jobs=10)] == [2, 4, 1, 1]


def test_plan_counts_distinct_texts_and_round_trips(tmp_path):
    texts = {"a": frozenset({"d\0x", "q\0q1"}), "b": frozenset({"d\0y", "q\0q1"}), "c": None}
    jobs = group(_cells("aabc", texts))
    text = describe(jobs, 3, {"a": "chunker=fixed", "b": "chunker=section", "c": "retriever=bm25"})
    assert text.splitlines()[0] == "cluster plan: 4 cell(s) to run in 3 job(s); 3 cell(s) already done, not submitted"
    assert "job 0: 2 cell(s), 1 shared prefix(es), distinct texts to embed: 2 -- chunker=fixed" in text
    assert "job 2: 1 cell(s), 1 shared prefix(es), distinct texts to embed: no embedder" in text
    assert "distinct texts to embed in all: 3 " in text  # the shared question once
    write_plan(tmp_path, "41", ["41_0", "41_1", "41_2"], jobs, {"a": "A", "b": "B", "c": "C"})
    write_plan(tmp_path, "42", ["42_0"], group(_cells("a")), {"a": "A2"})  # a later re-run holds cell 0
    (tmp_path / "43.plan.json").write_text('{"jobs": [{"job_id": "43_0", "cells": [{"cell_id": "../../etc"}]}]}')
    plans = read_plans(tmp_path)
    assert "../../etc" not in plans  # a cell id, never a path
    assert plans[f"{0:012x}"] == ("42_0", "A2") and plans[f"{3:012x}"] == ("41_2", "C")


def test_max_jobs_flag_becomes_the_launcher_key_and_bad_values_exit_2(tmp_path):
    assert with_cluster_launcher(["-m", "+cluster=slurm", "--max-jobs", "3", "chunker=fixed,section"]) == [
        "-m", "+cluster=slurm", "hydra/launcher=slurm", "chunker=fixed,section", "hydra.launcher.max_jobs=3"]
    for bad in ("0", "x"):
        done = subprocess.run([str(BIN / "rag-bench"), "run", "-m", "--max-jobs", bad, "+cluster=slurm",
                               "chunker=fixed,section", f"output.root={tmp_path}", "tracking=none"],
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 2, done.stderr[-2000:]
        assert "max_jobs" in done.stderr and "Traceback" not in done.stderr, done.stderr[-2000:]
        assert not list(tmp_path.rglob("*.plan.json")) and not list(tmp_path.rglob("DONE"))
