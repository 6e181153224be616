"""``rag-bench traces``: write the MLflow traces a sweep left out (it traces a sample of each cell's
questions, ``tracking.trace_sample``), for one cell or every finished cell of an experiment."""

from __future__ import annotations

import argparse

from rag_bench.cli.common import fail, say
from rag_bench.cli.table import Command
from rag_bench.errors import RagBenchError


def run(argv: list[str]) -> int:
    """``rag-bench traces`` with the arguments ``argv``; its exit code."""
    from rag_bench.cells import check_folder, experiment_cells, load_cell
    from rag_bench.tracking.mlflow_tracker import MlflowTracker

    p = argparse.ArgumentParser(prog="rag-bench traces", description="Write every question's MLflow trace of a "
                                "cell (or of each finished cell of an experiment folder) that its run lacks: a "
                                "sweep traces a sample of each cell's questions (tracking.trace_sample). Traces "
                                "already there are kept, incomplete ones (a writer killed mid-way) replaced, so "
                                "running it twice writes nothing the second time.")
    p.add_argument("folder", help="a cell folder or an experiment folder")
    p.add_argument("--tracking-uri", help="default: the one the cell was logged to (its DONE), else "
                                          "$MLFLOW_TRACKING_URI, else <experiments root>/mlflow.db")
    a = p.parse_args(argv)
    try:
        kind = check_folder(a.folder, "cell or experiment", "traces").kind
        cells = [load_cell(a.folder, records=False)] if kind == "cell" else experiment_cells(a.folder, records=False)
        trackers: dict[tuple[str | None, str], MlflowTracker] = {}
        total_written = total_kept = 0
        for cell in cells:
            uri = a.tracking_uri or cell.done.get("tracking_uri") or None
            experiment = str(cell.done.get("mlflow_experiment") or cell.path.parent.name)
            tracker = trackers.get((uri, experiment))
            if tracker is None:
                tracker = trackers[(uri, experiment)] = MlflowTracker(uri=uri, background=False)
                tracker.bind(output_root=cell.path.parent.parent, experiment=experiment,
                             sweep_id=f"traces-{experiment}")
                tracker.check()
            run_id = str(cell.done.get("mlflow_run_id") or "") or None
            written, kept = tracker.complete_traces(cell.cell_id, cell.path, run_id if not a.tracking_uri else None)
            total_written, total_kept = total_written + written, total_kept + kept
            say(f"cell {cell.cell_id}: {written} trace(s) written, {kept} already there ({tracker.uri})")
    except RagBenchError as exc:
        return fail(exc)
    say(f"traces: {len(cells)} cell(s), {total_written} trace(s) written, {total_kept} already there")
    return 0


COMMAND = Command("traces", "CELL_OR_EXPERIMENT_DIR", "write the MLflow traces a sweep's sample left out", run)
