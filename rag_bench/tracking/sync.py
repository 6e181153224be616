"""``rag-bench sync``: upload finished cells that are not in MLflow yet (after an outage, or cells
run with ``tracking=none``), without duplicates: a cell whose run already exists FINISHED in the
target experiment is skipped. A synced run gets the same params and tags as one logged live
(plus ``synced=true``; its ``git_sha`` is the one recorded in DONE, when there is one). Run
names are the labels of the experiment's cells (the parameters that vary between them)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from rag_bench import naming
from rag_bench.cells import atomic_write, experiment_cells
from rag_bench.tracking.base import cell_tags, dataset_info, questions_table, tracked_metrics
from rag_bench.tracking.mlflow_tracker import MlflowTracker


def sync_experiment(experiment_dir: str | Path, *, tracking_uri: str | None = None,
                    summarize: Callable[[Path], None] | None = None) -> dict[str, int]:
    """Log every DONE cell of the folder whose run is missing; returns counts. ``summarize``: called
    with the folder before the sync's parent run closes, when a cell was uploaded (the CLI fills the
    parent and ranks the cell runs as a sweep's end does)."""
    exp = Path(experiment_dir)
    cells = experiment_cells(exp, records=False)
    tracker = MlflowTracker(uri=tracking_uri)
    tracker.bind(output_root=exp.parent, experiment=exp.name, sweep_id=f"sync-{exp.name}")
    tracker.check()
    counts = {"uploaded": 0, "already_tracked": 0}
    names = dict(zip((c.cell_id for c in cells), naming.labels([c.config for c in cells], [c.cell_id for c in cells])))
    for cell in cells:
        if tracker.finished_run(cell.cell_id):
            counts["already_tracked"] += 1
            continue
        extra = {"synced": "true", **({"git_sha": str(cell.done["git_sha"])} if cell.done.get("git_sha") else {})}
        name = str(cell.done.get("dataset") or "")
        tags = cell_tags(cell.config, dataset_fingerprint=cell.dataset_fingerprint or "", dataset=name, **extra)
        run_id = tracker.log_cell(cell_id=cell.cell_id, cell_dir=cell.path, params=naming.flat_params(cell.config),
                                  metrics=tracked_metrics(cell.metrics), tags=tags, run_name=names[cell.cell_id],
                                  dataset=dataset_info(cell.config, cell.metrics, name),
                                  table=questions_table(cell.records))
        info = {**cell.done, "mlflow_run_id": run_id, **tracker.describe()}
        atomic_write(cell.path / "DONE", json.dumps(info, sort_keys=True) + "\n")
        counts["uploaded"] += 1
    if summarize is not None and counts["uploaded"]:
        summarize(exp)
    tracker.finish_sweep(ok=True)
    return counts
