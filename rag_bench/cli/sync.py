"""``rag-bench sync``: upload finished cells to MLflow after an outage (no duplicates)."""

from __future__ import annotations

import argparse

from rag_bench.cli.common import fail, say
from rag_bench.cli.table import Command
from rag_bench.errors import RagBenchError


def run(argv: list[str]) -> int:
    """``rag-bench sync`` with the arguments ``argv``; its exit code."""
    from rag_bench.cells import check_folder
    from rag_bench.reporting.sweep import summarize_experiment
    from rag_bench.tracking.sync import sync_experiment

    p = argparse.ArgumentParser(prog="rag-bench sync", description="Upload an experiment's finished cells to "
                                "MLflow (after a tracking outage or tracking=none). Cells already tracked are "
                                "skipped, so running it twice adds nothing. The sync's parent run gets the "
                                "leaderboard and the verdict, and each cell run its rank and primary measure, as "
                                "at a sweep's end.")
    p.add_argument("experiment_dir")
    p.add_argument("--tracking-uri", help="default: $MLFLOW_TRACKING_URI, else <experiments root>/mlflow.db")
    a = p.parse_args(argv)
    try:
        check_folder(a.experiment_dir, "experiment", "sync")  # a cell, an output root, ...: say which
        # the uploaded cells ranked in MLflow as a sweep's end ranks them (the view, the verdict)
        counts = sync_experiment(a.experiment_dir, tracking_uri=a.tracking_uri, summarize=summarize_experiment)
    except RagBenchError as exc:
        return fail(exc)
    say(f"sync: {counts['uploaded']} cell(s) uploaded, {counts['already_tracked']} already tracked")
    return 0


COMMAND = Command("sync", "EXPERIMENT_DIR", "upload finished cells to MLflow after an outage (no duplicates)", run)
