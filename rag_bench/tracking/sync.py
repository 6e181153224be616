"""``rag-bench sync``: upload finished cells that are not in MLflow yet (after an outage, or cells
run with ``tracking=none``), without duplicates: a cell whose run already exists FINISHED in the
target experiment is skipped."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from rag_bench.reporting.cells import read_done
from rag_bench.runner.cell import _atomic_write, flat_metrics
from rag_bench.tracking.mlflow_tracker import MlflowTracker


def _flatten(prefix: str, node: Any, out: dict[str, Any]) -> dict[str, Any]:
    if isinstance(node, dict):
        for k, v in node.items():
            _flatten(f"{prefix}.{k}" if prefix else str(k), v, out)
    else:
        out[prefix] = node
    return out


def sync_experiment(experiment_dir: str | Path, *, tracking_uri: str | None = None) -> dict[str, int]:
    """Log every DONE cell of the folder whose run is missing; returns counts."""
    exp = Path(experiment_dir)
    tracker = MlflowTracker(uri=tracking_uri)
    tracker.bind(output_root=exp.parent, experiment=exp.name, sweep_id=f"sync-{exp.name}")
    tracker.check()
    client = tracker._get_client()
    exp_id = tracker._experiment_id()
    counts = {"uploaded": 0, "already_tracked": 0}
    for done in sorted(exp.glob("*/DONE")):
        cell = done.parent
        existing = client.search_runs([exp_id], filter_string=f"tags.cell_id = '{cell.name}' and "
                                                            "attributes.status = 'FINISHED'")
        if existing:
            counts["already_tracked"] += 1
            continue
        config = yaml.safe_load((cell / "config.yaml").read_text(encoding="utf-8")) or {}
        metrics = json.loads((cell / "metrics.json").read_text(encoding="utf-8"))
        tags = {"dataset_fingerprint": str(metrics.get("dataset_fingerprint", "")), "synced": "true",
                **{g: str((config.get(g) or {}).get("name", "")) for g in ("chunker", "retriever", "generator")}}
        run_id = tracker.log_cell(cell_id=cell.name, cell_dir=cell, params=_flatten("", config, {}),
                                  metrics=flat_metrics(metrics), tags=tags)
        info = {**read_done(cell), "mlflow_run_id": run_id, **tracker.describe()}
        _atomic_write(done, json.dumps(info, sort_keys=True) + "\n")
        counts["uploaded"] += 1
    tracker.finish_sweep(ok=True)
    return counts

