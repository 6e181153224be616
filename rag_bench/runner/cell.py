"""The cell folder (ARCHITECTURE §5): written to a temporary folder, renamed, DONE last.

A folder without DONE is unfinished work: it is removed and recomputed on the next run. DONE is
written through a temporary file and ``os.replace``, so it exists either whole or not at all.

Two processes computing the same cell at once: writing the folder, tracking it and writing DONE
happen under the cell's lock (``cell_lock``), and the one that gets the lock second finds DONE and
keeps the finished cell instead of replacing it.
"""

from __future__ import annotations

import json
import math
import os
import shutil
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from rag_bench.locking import file_lock
from rag_bench.runner.pipeline import CellResult

FILES = ("config.yaml", "metrics.json", "records.parquet", "run.trec", "qrels.trec")


def is_done(cell_dir: Path) -> bool:
    """True when the cell finished (DONE marker present)."""
    return (cell_dir / "DONE").is_file()


def cell_lock(cell_dir: Path) -> AbstractContextManager[None]:
    """Exclusive lock (across processes) on the cell folder: hold it from writing the folder to
    writing DONE, and check ``is_done`` once it is held. Its file, ``.<cell>.lock`` beside the
    folder, is removed on release."""
    return file_lock(cell_dir.with_name(f".{cell_dir.name}.lock"))


def _clean(obj: Any) -> Any:
    # JSON has no NaN: undefined aggregates are written as null.
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    return obj


def _atomic_write(path: Path, data: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def write_cell(cell_dir: Path, cfg: DictConfig, result: CellResult) -> None:
    """Write every file of the cell except DONE; replaces any unfinished folder of the same cell.

    Call it holding ``cell_lock(cell_dir)``, after checking the cell is not DONE."""
    cell_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = cell_dir.with_name(f".{cell_dir.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        (tmp / "config.yaml").write_text(OmegaConf.to_yaml(cfg, resolve=True), encoding="utf-8")
        (tmp / "metrics.json").write_text(json.dumps(_clean(result.metrics), indent=2, sort_keys=True) + "\n",
                                          encoding="utf-8")
        result.records.to_parquet(tmp / "records.parquet", index=False)
        (tmp / "run.trec").write_text(result.run_trec, encoding="utf-8")
        (tmp / "qrels.trec").write_text(result.qrels_trec, encoding="utf-8")
        cols = [c for c in ("qid", "question", "answerable", "tags", "failure", "first_relevant_rank", "answer",
                            "citations", "generation_error", "parse_error") if c in result.records]
        result.records[cols].to_csv(tmp / "failures.csv", index=False)
        if cell_dir.exists():
            shutil.rmtree(cell_dir)
        os.replace(tmp, cell_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def mark_done(cell_dir: Path, info: dict[str, Any] | None = None) -> None:
    """Write DONE atomically: the last step of a cell. ``info`` (e.g. the MLflow run id) is its JSON body."""
    _atomic_write(cell_dir / "DONE", json.dumps(info or {}, sort_keys=True) + "\n")


def discard(cell_dir: Path) -> None:
    """Remove an unfinished cell folder (no DONE) so it is never read as a result; a folder that
    another process is writing (it holds the cell's lock) is left to that process."""
    if not cell_dir.exists():
        return
    with cell_lock(cell_dir):
        if not is_done(cell_dir):
            shutil.rmtree(cell_dir, ignore_errors=True)


def flat_metrics(metrics: dict[str, Any]) -> dict[str, float]:
    """``{"retrieval/hit@5": 0.8, ..., "ci/retrieval/hit@5/lo": ..}`` — numbers only."""
    out: dict[str, float] = {}
    for section, values in metrics.items():
        if not isinstance(values, dict):
            continue
        for key, v in values.items():
            if section == "ci":
                if isinstance(v, list) and all(isinstance(x, (int, float)) and math.isfinite(x) for x in v):
                    out[f"ci/{key}/lo"], out[f"ci/{key}/hi"] = float(v[0]), float(v[1])
            elif isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
                out[f"{section}/{key}"] = float(v)
    return out
