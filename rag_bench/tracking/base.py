"""Tracker protocol: where a cell's results are logged besides its folder, and what a cell's run
holds (the same whether it is logged live or uploaded later by ``sync``)."""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from rag_bench import naming
from rag_bench.components import STAGES, Null, optional, stage_names
from rag_bench.evaluation import measures

# metrics.json sections that are not tracked as metrics: intervals, sizes and nested tables stay
# in metrics.json (an artifact of the run) -- MLflow's metric list keeps the measures and the
# failure tallies (``failures/<label>``, columns of the experiment's ranked view: tracking.view).
UNTRACKED = ("ci", "n", "counts", "conditional", "methods", "by_tag", "warnings", "findings")
# The question fields of a dataset, as the schema of its MLflow input.
QUESTION_SCHEMA = {"mlflow_colspec": [
    {"name": "qid", "type": "string"}, {"name": "question", "type": "string"},
    {"name": "answerable", "type": "boolean"}, {"name": "evidence", "type": "string"},
    {"name": "facts", "type": "string"}, {"name": "answers", "type": "string"},
    {"name": "asker", "type": "string"}, {"name": "tags", "type": "string"}]}
# Per-question columns of the run's questions table (scalars only; records.parquet has the rest).
TABLE_COLUMNS = ("qid", "question", "answerable", "failure", "answer")


@dataclass(frozen=True)
class DatasetInfo:
    """What ``mlflow.log_input`` records of the dataset a cell was computed on: its name, the
    content fingerprint as digest, the folder it was read from, the question fields as schema and
    counts as profile."""

    name: str
    digest: str
    source: str
    schema: dict[str, Any]
    profile: dict[str, Any]


def dataset_info(config: Mapping[str, Any], metrics: Mapping[str, Any], name: str) -> DatasetInfo:
    """The dataset of a stored cell: ``config`` (dataset.path resolved), its metrics' counts."""
    counts = metrics.get("counts", {}) if isinstance(metrics.get("counts"), dict) else {}
    ds = config.get("dataset") if isinstance(config.get("dataset"), Mapping) else {}
    fingerprint = str(metrics.get("dataset_fingerprint") or (ds or {}).get("fingerprint") or "")
    profile = {k: counts[k] for k in ("questions", "answerable", "unanswerable", "documents") if k in counts}
    return DatasetInfo(name=name or "dataset", digest=fingerprint, source=str((ds or {}).get("path") or ""),
                       schema=QUESTION_SCHEMA, profile=profile)


# A question tag in a metric name: MLflow names allow few characters (and "/" and "." are our
# separators), so a tag keeps its name only when it is made of these, is short, and does not look
# like a name with a digest suffix; any other gets one (tag_metric_name).
_CLEAN_TAG = re.compile(r"[A-Za-z0-9_-]{1,64}")
_DIGEST_SUFFIX = re.compile(r".*-[0-9a-f]{8}")


def tag_metric_name(tag: str) -> str:
    """A question tag as it appears in MLflow metric names (``tag.<name>.<measure>``): the tag
    itself when it is a clean name (letters, digits, ``_``, ``-``; at most 64 characters); else
    its characters outside those replaced by ``_``, cut to 64, then ``-`` and the first 8 hex
    digits of the tag's SHA-256. Deterministic, and one name per tag: a clean name never ends in
    such a suffix (a tag that looks like one gets its own), so ``x y``, ``x_y`` and ``x<y`` --
    once all ``x_y`` -- stay three metrics.

    >>> tag_metric_name("paraphrase"), tag_metric_name("x y"), tag_metric_name("x<y")
    ('paraphrase', 'x_y-887fcea6', 'x_y-5264b2ba')
    """
    if _CLEAN_TAG.fullmatch(tag) and not _DIGEST_SUFFIX.fullmatch(tag):
        return tag
    safe = re.sub(r"[^A-Za-z0-9_-]", "_", tag)[:64]
    return f"{safe}-{hashlib.sha256(tag.encode('utf-8', 'surrogatepass')).hexdigest()[:8]}"


def tracked_metrics(metrics: Mapping[str, Any]) -> dict[str, float]:
    """The numbers a cell's run logs as metrics: every measure of every stage section (retrieval,
    document, evidence, generation, citation, abstention, security, ann, judge), latency and cost,
    the failure tallies as ``failures/<label>`` (how many questions each stage lost), and each
    tag's measures as ``tag/<tag>/<measure>`` (the tag named by :func:`tag_metric_name`). CIs, n
    and counts are not metrics: they are in metrics.json, an artifact of the same run.

    >>> tracked_metrics({"retrieval": {"hit@5": 0.5}, "ci": {"retrieval/hit@5": [0.4, 0.6]},
    ...                  "counts": {"chunks": 3}, "failures": {"ranking": 2},
    ...                  "by_tag": {"lexical": {"hit@5": 1.0, "n": 2}}})
    {'retrieval/hit@5': 0.5, 'failures/ranking': 2.0, 'tag/lexical/hit@5': 1.0}
    """
    out: dict[str, float] = {}

    def number(v: Any) -> bool:
        return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)

    for section, values in metrics.items():
        if section in UNTRACKED or not isinstance(values, dict):
            continue
        for key, v in values.items():
            if number(v):
                out[f"{section}/{key}"] = float(v)
    for tag, values in (metrics.get("by_tag") or {}).items():
        if isinstance(values, dict):
            name = tag_metric_name(str(tag))
            for key, v in values.items():
                if key != "n" and number(v):
                    out[f"tag/{name}/{key}"] = float(v)
    return out


def cell_tags(config: Mapping[str, Any], *, dataset_fingerprint: str, dataset: str,
              **extra: str) -> dict[str, str]:
    """The tags of a cell's run, the same whether it is logged live or uploaded by ``sync``: the
    dataset, each stage's option name, and ``extra`` (``git_sha``, ``synced``). The commit also
    goes in MLflow's own ``mlflow.source.git.commit``, which its UI shows."""
    tags = {"dataset_fingerprint": dataset_fingerprint, "dataset": dataset, **stage_names(config, STAGES), **extra}
    if extra.get("git_sha") and extra["git_sha"] != "unknown":
        tags["mlflow.source.git.commit"] = extra["git_sha"]
    return tags


def run_name(config: Mapping[str, Any], axes: Sequence[str]) -> str:
    """A cell's MLflow run name: its values on the sweep's axes (:mod:`rag_bench.naming`), the
    label the report and the leaderboard give it; its stage names when nothing is swept."""
    return (naming.label(config, axes) if axes else "") or naming.fallback(config)


def questions_table(records: Any) -> Any:
    """The per-question table of a run: id, question, label, answer and each ranking measure."""
    cols = [c for c in TABLE_COLUMNS if c in records.columns]
    cols += [m.name for m in measures.TAG if m.name in records.columns and m.name not in cols]
    table = records[cols].copy()
    if "answer" in table:
        table["answer"] = table["answer"].map(lambda a: a if a is None else str(a)[:500])
    return table


class Tracker(Protocol):
    """Logs one run per cell, nested under one parent run per sweep."""

    def bind(self, *, output_root: Path, experiment: str, sweep_id: str, parent_run: str | None = None) -> None:
        """Tell the tracker where results live and which sweep the cell belongs to."""
        ...

    def check(self) -> None:
        """Raise TrackingError before any work when the backend cannot be reached."""
        ...

    def log_cell(self, *, cell_id: str, cell_dir: Path, params: dict[str, Any], metrics: dict[str, float],
                 tags: dict[str, str], run_name: str | None = None, dataset: DatasetInfo | None = None,
                 table: Any = None) -> str | None:
        """Create the cell's run, log params/metrics/tags/dataset/artifacts and the per-question
        ``table``, finish it; return its id."""
        ...

    def finish_sweep(self, ok: bool) -> None:
        """Close the sweep's parent run (FINISHED or FAILED)."""
        ...

    def describe(self) -> dict[str, str | None]:
        """Where results went (stored in the cell's DONE), e.g. tracking URI and parent run id."""
        ...

    @optional
    def background_job(self, log_cell: dict[str, Any], done: dict[str, Any]) -> Any:
        """The :class:`~rag_bench.tracking.background.LogJob` logging a cell (``log_cell``: the
        arguments of :meth:`log_cell`) and writing its DONE (``done``) in the sweep's background
        process; default: None, the tracker logs in the calling process."""
        return None


class NullTracker(Null):
    """``tracking=none``: results live only in the cell folders."""

    def bind(self, *, output_root: Path, experiment: str, sweep_id: str, parent_run: str | None = None) -> None:
        """Nothing to bind."""

    def check(self) -> None:
        """Always reachable."""

    def log_cell(self, *, cell_id: str, cell_dir: Path, params: dict[str, Any], metrics: dict[str, float],
                 tags: dict[str, str], run_name: str | None = None, dataset: DatasetInfo | None = None,
                 table: Any = None) -> str | None:
        """Log nothing."""
        return None

    def finish_sweep(self, ok: bool) -> None:
        """Nothing to close."""

    def describe(self) -> dict[str, str | None]:
        """No tracking."""
        return {"tracking": "none"}
