"""``rag-bench status``: a cluster sweep's jobs and cells: done/running/failed, failed jobs' logs."""

from __future__ import annotations

import argparse

from rag_bench.cli.common import fail, say
from rag_bench.cli.table import Command
from rag_bench.errors import RagBenchError


def run(argv: list[str]) -> int:
    """``rag-bench status`` with the arguments ``argv``; its exit code."""
    from rag_bench.cells import check_folder
    from rag_bench.cluster.status import format_status, sweep_status

    p = argparse.ArgumentParser(prog="rag-bench status", description="A (cluster) sweep's jobs and cells: done, "
                                "running, pending, failed, unfinished; the log and last error lines of every failed "
                                "job. Success is a cell's DONE, not the scheduler's word.")
    p.add_argument("experiment_dir", help="<output.root>/<experiment.name>")
    a = p.parse_args(argv)
    try:
        check_folder(a.experiment_dir, "experiment", "status", finished=False)  # a cell, an output root, ...: say which
        say(format_status(*sweep_status(a.experiment_dir)))
    except RagBenchError as exc:
        return fail(exc)
    return 0


COMMAND = Command("status", "EXPERIMENT_DIR",
                  "a cluster sweep's jobs and cells: done/running/failed, failed jobs' logs", run)
