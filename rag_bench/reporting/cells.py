"""Read finished cells (folders, or MLflow run ids whose artifacts are the cell folder).

Only finished work is read: a folder must hold ``DONE`` (written last, after the MLflow run's
artifacts were logged). A cell named by MLflow run id is read when the run's status is FINISHED;
its downloaded artifacts lack ``DONE`` (the run was logged before DONE was written), so the
download is marked done here, with the run id, once that status has been checked.
"""

from __future__ import annotations

import json
import math
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
_MISSING = object()


@dataclass(frozen=True)
class Cell:
    """One finished cell as stored: config, aggregates, per-question records."""

    cell_id: str
    path: Path
    config: dict[str, Any]
    metrics: dict[str, Any]
    records: pd.DataFrame
    done: dict[str, Any]

    def _raw(self, key: str) -> Any:
        section, _, name = key.partition("/")
        block = self.metrics.get(section) if isinstance(self.metrics, dict) else None
        return block.get(name, _MISSING) if isinstance(block, dict) else _MISSING

    def metric(self, key: str) -> float | None:
        """Aggregate by ``section/name`` (e.g. ``retrieval/hit@5``); None when absent or not a finite
        number (a dict such as ``by_tag/..``, a list such as ``ci/..``, text, a bool, null, NaN)."""
        value = self._raw(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            return None
        return float(value)

    def metric_problem(self, key: str) -> str:
        """Why :meth:`metric` gives None for ``key`` (for messages); empty when it gives a number."""
        value = self._raw(key)
        if value is _MISSING:
            return f"{key} is not in metrics.json"
        if self.metric(key) is not None:
            return ""
        kind = {dict: "a mapping", list: "a list", str: "text", bool: "a bool", type(None): "null"}.get(
            type(value), "not finite" if isinstance(value, float) else type(value).__name__)
        return (f"{key} in metrics.json is {kind}, not a number -- fix: name an aggregate such as "
                "retrieval/hit@5 (by_tag, ci and n hold groups of values)")

    @property
    def dataset_fingerprint(self) -> str | None:
        """The dataset's content fingerprint the cell was computed on (None for cells without one)."""
        cfg = self.config.get("dataset") if isinstance(self.config, dict) else None
        fp = (cfg.get("fingerprint") if isinstance(cfg, dict) else None) or (
            self.metrics.get("dataset_fingerprint") if isinstance(self.metrics, dict) else None)
        return str(fp) if fp else None

    @property
    def label(self) -> str:
        """Short human label: chunker/retriever/reranker names and the cell id."""
        names = [str((self.config.get(g) or {}).get("name", "")) if isinstance(self.config.get(g), dict) else ""
                 for g in ("chunker", "retriever", "reranker")]
        return f"{'/'.join(n for n in names if n and n != 'none')} [{self.cell_id}]"


def check_same_dataset(reference: Cell, other: Cell, *, fix: str = "compare cells of the same dataset version") -> None:
    """Refuse two cells computed on different datasets (content fingerprints differ)."""
    fa, fb = reference.dataset_fingerprint, other.dataset_fingerprint
    if fa and fb and fa != fb:
        raise DataError(Problem(str(other.path), 0, "dataset_fingerprint",
                                f"the two cells were computed on different datasets: {reference.path} has "
                                f"fingerprint {fa}, {other.path} has {fb}", fix))


def read_done(path: Path) -> dict[str, Any]:
    """DONE's content: tracking info as JSON (older cells hold plain text)."""
    with open(path / "DONE", "rb") as fh:
        text = fh.read(1 << 16).decode("utf-8", errors="replace").strip()
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return {}
    return data if isinstance(data, dict) else {}


def load_cell(ref: str | Path, *, tracking_uri: str | None = None) -> Cell:
    """A cell folder with DONE, or an MLflow run id whose run FINISHED (its artifacts are downloaded)."""
    path = Path(ref)
    if not path.exists() and _RUN_ID.match(str(ref)):
        path = _download(str(ref), tracking_uri)
    if not path.is_dir():
        raise DataError(Problem(str(ref), 0, "cell", "no such cell folder or MLflow run id",
                                "pass experiments/<experiment>/<cell_id> or a 32-character run id"))
    if not (path / "DONE").is_file():
        raise DataError(Problem(str(path), 0, "DONE", "cell is not finished (no DONE marker): its results may be "
                                "partial", "re-run the sweep command; unfinished cells are redone"))
    missing = [f for f in ("config.yaml", "metrics.json", "records.parquet") if not (path / f).is_file()]
    if missing:
        raise DataError(Problem(str(path), 0, missing[0], f"cell folder lacks {', '.join(missing)}",
                                "re-run the cell (delete the folder first)"))
    config = _read(path / "config.yaml", lambda t: yaml.safe_load(t) or {}, dict)
    metrics = _read(path / "metrics.json", json.loads, dict)
    try:
        records = pd.read_parquet(path / "records.parquet")
    except Exception as exc:  # pyarrow raises several types for a truncated or foreign file
        raise DataError(Problem(str(path / "records.parquet"), 0, "records", f"unreadable parquet ({exc})",
                                "re-run the cell (delete the folder first)")) from exc
    return Cell(path.name, path, config, metrics, records, read_done(path))


def _read(file: Path, parse: Any, kind: type) -> Any:
    """Parse one small cell file; any problem is a DataError naming the file (and line when known)."""
    try:
        value = parse(file.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError, yaml.YAMLError, RecursionError) as exc:
        line = getattr(exc, "lineno", 0) or getattr(getattr(exc, "problem_mark", None), "line", -1) + 1
        raise DataError(Problem(str(file), line, file.name, f"unreadable ({str(exc).splitlines()[0][:200]})",
                                "re-run the cell (delete the folder first)")) from exc
    if not isinstance(value, kind):
        raise DataError(Problem(str(file), 1, file.name, f"must hold a mapping, got {type(value).__name__}",
                                "re-run the cell (delete the folder first)"))
    return value


def _download(run_id: str, tracking_uri: str | None) -> Path:
    """Download a FINISHED run's artifacts (the cell folder) and mark the copy done."""
    from mlflow.tracking import MlflowClient

    uri = tracking_uri or os.environ.get("MLFLOW_TRACKING_URI") or "sqlite:///experiments/mlflow.db"
    client = MlflowClient(tracking_uri=uri)
    try:
        run = client.get_run(run_id)
    except Exception as exc:  # MlflowException for unknown ids, connection errors
        raise DataError(Problem(run_id, 0, "run_id", f"MLflow run not found at {uri}: {exc}",
                                "set MLFLOW_TRACKING_URI to the server that holds the run")) from exc
    if run.info.status != "FINISHED":
        raise DataError(Problem(run_id, 0, "status", f"MLflow run is {run.info.status}, not FINISHED: the cell is "
                                "unfinished or failed", "re-run the sweep command; unfinished cells are redone"))
    name = re.sub(r"[^\w.-]", "_", str(run.data.tags.get("cell_id") or run_id)).strip(".") or run_id
    dest = Path(tempfile.mkdtemp(prefix="rag_bench_cell_")) / name  # a tag never leads outside the temp folder
    dest.mkdir(parents=True)
    client.download_artifacts(run_id, "", str(dest))
    if not (dest / "DONE").exists():
        info = {"cell_id": dest.name, "mlflow_run_id": run_id, "tracking_uri": uri, "source": "mlflow"}
        (dest / "DONE").write_text(json.dumps(info, sort_keys=True) + "\n", encoding="utf-8")
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
