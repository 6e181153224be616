"""Read finished cells (folders, or MLflow run ids whose artifacts are the cell folder)."""

from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from rag_bench.errors import DataError, Problem

_RUN_ID = re.compile(r"^[0-9a-f]{32}$")
PER_QUESTION_METRIC = re.compile(r"^(?:(?:hit|precision|recall|mrr|ndcg|evidence_recall|complete)@\d+|mrr|ndcg|map)$")


@dataclass(frozen=True)
class Cell:
    """One finished cell as stored: config, aggregates, per-question records."""

    cell_id: str
    path: Path
    config: dict[str, Any]
    metrics: dict[str, Any]
    records: pd.DataFrame
    done: dict[str, Any]

    def metric(self, key: str) -> float | None:
        """Aggregate by ``section/name`` (e.g. ``retrieval/hit@5``), None when absent."""
        section, _, name = key.partition("/")
        value = self.metrics.get(section, {}).get(name)
        return None if value is None else float(value)

    @property
    def label(self) -> str:
        """Short human label: chunker/retriever/reranker names and the cell id."""
        names = [str((self.config.get(g) or {}).get("name", "")) for g in ("chunker", "retriever", "reranker")]
        return f"{'/'.join(n for n in names if n and n != 'none')} [{self.cell_id}]"


def read_done(path: Path) -> dict[str, Any]:
    """DONE's content: tracking info as JSON (older cells hold plain text)."""
    text = (path / "DONE").read_text(encoding="utf-8").strip()
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return {}
    return data if isinstance(data, dict) else {}


def load_cell(ref: str | Path, *, tracking_uri: str | None = None) -> Cell:
    """A cell folder with DONE, or an MLflow run id (its artifacts are downloaded)."""
    path = Path(ref)
    if not path.exists() and _RUN_ID.match(str(ref)):
        path = _download(str(ref), tracking_uri)
    if not path.is_dir():
        raise DataError(Problem(str(ref), 0, "cell", "no such cell folder or MLflow run id",
                                "pass experiments/<experiment>/<cell_id> or a 32-character run id"))
    if not (path / "DONE").exists() and not (path / "metrics.json").exists():
        raise DataError(Problem(str(path), 0, "DONE", "cell is not finished (no DONE marker)",
                                "re-run the sweep command; unfinished cells are redone"))
    missing = [f for f in ("config.yaml", "metrics.json", "records.parquet") if not (path / f).exists()]
    if missing:
        raise DataError(Problem(str(path), 0, missing[0], f"cell folder lacks {', '.join(missing)}",
                                "re-run the cell (delete the folder first)"))
    config = yaml.safe_load((path / "config.yaml").read_text(encoding="utf-8")) or {}
    metrics = json.loads((path / "metrics.json").read_text(encoding="utf-8"))
    records = pd.read_parquet(path / "records.parquet")
    done = read_done(path) if (path / "DONE").exists() else {}
    return Cell(path.name, path, config, metrics, records, done)


def _download(run_id: str, tracking_uri: str | None) -> Path:
    from mlflow.tracking import MlflowClient

    uri = tracking_uri or os.environ.get("MLFLOW_TRACKING_URI") or "sqlite:///experiments/mlflow.db"
    client = MlflowClient(tracking_uri=uri)
    try:
        run = client.get_run(run_id)
    except Exception as exc:  # MlflowException for unknown ids, connection errors
        raise DataError(Problem(run_id, 0, "run_id", f"MLflow run not found at {uri}: {exc}",
                                "set MLFLOW_TRACKING_URI to the server that holds the run")) from exc
    dest = Path(tempfile.mkdtemp(prefix="rag_bench_cell_")) / run.data.tags.get("cell_id", run_id)
    dest.mkdir(parents=True)
    client.download_artifacts(run_id, "", str(dest))
    return dest


def experiment_cells(experiment_dir: str | Path) -> list[Cell]:
    """Every finished cell of an experiment folder, in folder order."""
    root = Path(experiment_dir)
    if not root.is_dir():
        raise DataError(Problem(str(root), 0, "", "experiment folder does not exist",
                                "pass experiments/<experiment.name> after running a sweep"))
    return [load_cell(p.parent) for p in sorted(root.glob("*/DONE"))]


def question_metrics(cell: Cell) -> list[str]:
    """Per-question metric columns present in the cell's records."""
    return [c for c in cell.records.columns if PER_QUESTION_METRIC.match(c)]
