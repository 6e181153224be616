"""What MLflow's UI shows of an experiment once its cells are ranked (the sweep's end).

MLflow 3's UI opens an experiment on the tab the browser's GenAI / Model training switch picks
(GenAI: the Overview; Model training: the Runs table), not on anything the experiment holds, and
its Runs table nests child runs under their parent, collapsed -- unless a child is an evaluation
run (``mlflow.runType = evaluation``), whose parent it expands. It shows metrics as logged, has no
per-column display format, and opens a saved view from the experiment tag
``mlflow.sharedViewState.<id>`` when the address holds ``viewStateShareKey=<id>``. So, after the
leaderboard is decided (:func:`rag_bench.decision.decide.primary_measure`, known only once every
cell is in), :func:`publish` writes:

- on each ranked cell's run: ``rank`` (1 = best), ``primary`` (the primary measure's value) and
  ``primary.ci_lo`` / ``primary.ci_hi`` (its 95% CI), rounded to :data:`DIGITS` decimals for the
  table (the exact values stay in the run's measure metrics and metrics.json); the tags
  ``rag_bench.primary`` (which measure ``primary`` is), ``rag_bench.ranking`` (the ranking it
  belongs to) and ``mlflow.runType = evaluation`` (its sweep's parent opens expanded);
- on the experiment: the saved view ``rag_bench`` (the ranked cells only, best first, with rank,
  primary, its CI and the failure counts some cell has as columns -- the labels that lose a
  question, not ``correct`` or ``correct_refusal``), the primary-metric tag, and a
  description (``mlflow.note.content``, shown on the experiment's page) that names the ranking and
  links to the view -- never replacing a description someone else wrote.

Publishing the same ranking again writes nothing.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Sequence
from typing import Any

from rag_bench.failure_labels import NOT_LOST, in_attribution_order
from rag_bench.tracking.batches import log_batches

RANK = "rank"
PRIMARY = "primary"
CI_LO = "primary.ci_lo"
CI_HI = "primary.ci_hi"
FAILURE_PREFIX = "failures."  # the cell's failure tallies (tracking.base.tracked_metrics)
PRIMARY_TAG = "rag_bench.primary"
RANKING_TAG = "rag_bench.ranking"
RUN_TYPE_TAG = "mlflow.runType"
EVALUATION = "evaluation"
PRIMARY_METRIC_TAG = "mlflow.experiment.primaryMetric.name"
NOTE_TAG = "mlflow.note.content"
VIEW_TAG_PREFIX = "mlflow.sharedViewState."
VIEW_ID = "rag_bench"
LINK_TEXT = "Open the cells, best first"
MARK = "**rag_bench**"  # how a description rag_bench wrote starts (one it may replace)
DIGITS = 3


def display(value: float) -> float:
    """A value as the cells' table shows it: rounded to :data:`DIGITS` decimals.

    >>> display(0.123456)
    0.123
    """
    return round(float(value), DIGITS)


def _number(value: Any) -> float | None:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def _column(name: str) -> str:
    return f"metrics.`{name}`"


def view_link(exp_id: str) -> str:
    """The address (in MLflow's UI, relative to its root) of the experiment's saved view, on the
    Runs tab whatever the browser's GenAI / Model training switch says."""
    return f"#/experiments/{exp_id}/runs?workflowType=machine_learning&viewStateShareKey={VIEW_ID}"


def _labels(rows: Sequence[dict[str, Any]], key: str) -> tuple[dict[str, dict[str, float]], str]:
    """Each ranked cell's metrics and tags-to-be (by cell id), and the ranking's id."""
    wanted: dict[str, dict[str, float]] = {}
    for rank, row in enumerate(rows, start=1):
        metrics = {RANK: float(rank)}
        for name, column in ((PRIMARY, key), (CI_LO, "ci_lo"), (CI_HI, "ci_hi")):
            v = _number(row.get(column))
            if v is not None:
                metrics[name] = display(v)
        wanted[str(row["cell"])] = metrics
    ranking = hashlib.sha256(json.dumps([key, list(wanted.items())], sort_keys=True).encode()).hexdigest()[:12]
    return wanted, ranking


def _note(rows: Sequence[dict[str, Any]], key: str | None, exp_id: str, problem: str | None) -> str:
    if key is None or not rows:
        return f"{MARK}: {len(rows)} cells, not ranked (`{problem or 'no primary measure'}`)."
    best = rows[0]
    value = _number(best.get(key))
    lo, hi = _number(best.get("ci_lo")), _number(best.get("ci_hi"))
    shown = "" if value is None else f" {value:.3f}"
    if lo is not None and hi is not None:
        shown += f" (95% CI {lo:.3f}-{hi:.3f})"
    # The link first: MLflow shows the description's first lines only until it is expanded.
    return (f"{MARK}: [{LINK_TEXT}]({view_link(exp_id)}) -- {len(rows)} cells ranked by `{key}`; best: "
            f"`{best['label']}`{shown}. The view's columns: rank, `{PRIMARY}` ({key}) with its 95% CI, the "
            "failure counts by stage; the per-question traces are on the Traces tab.")


def _view(key: str, ranking: str, failures: list[str], created: int) -> str:
    """The saved view's tag value: MLflow's envelope (name, createdAt, state as JSON text)."""
    columns = [_column(RANK), _column(PRIMARY), _column(CI_LO), _column(CI_HI),
               *(_column(FAILURE_PREFIX + f) for f in failures)]
    state = {
        "searchFilter": f"tags.`{RANKING_TAG}` = '{ranking}'",
        "orderByKey": _column(RANK),
        "orderByAsc": True,
        "startTime": "ALL",
        "lifecycleFilter": "Active",
        "datasetsFilter": [],
        "selectedColumns": columns,
        "columnOrder": columns,  # the UI lists selected metrics by name (failures.* before primary) otherwise
        "runsExpanded": {},
    }
    return json.dumps({"name": f"Cells by {key} (rag_bench)", "createdAt": created, "updatedAt": created,
                       "state": json.dumps(state)})


def publish(client: Any, exp_id: str, rows: Sequence[dict[str, Any]], key: str | None, *,
            problem: str | None = None) -> dict[str, int]:
    """Label the runs of the ranked cells ``rows`` (leaderboard rows, best first: ``cell``,
    ``label``, ``key``'s value, ``ci_lo``, ``ci_hi``) in experiment ``exp_id`` and write the
    experiment's view and description (see the module docstring). ``key`` None: the cells are not
    ranked (``problem`` says why): no view, a description saying so. Returns how many cell runs
    were ``labelled`` now and how many were ``already`` labelled so."""
    from mlflow.entities import Metric, RunTag


    exp = client.get_experiment(exp_id)
    tags: dict[str, str] = dict(exp.tags)
    counts = {"labelled": 0, "already": 0}
    wanted: dict[str, dict[str, float]] = {}
    failures: list[str] = []
    ranking = ""
    if key is not None and rows:
        wanted, ranking = _labels(rows, key)
        runs = client.search_runs([exp_id], filter_string="tags.`rag_bench.role` = 'cell'", max_results=50000)
        by_cell = {r.data.tags.get("cell_id"): r for r in runs}
        now = int(time.time() * 1000)
        counted: list[str] = []
        for cell, metrics in wanted.items():
            run = by_cell.get(cell)
            if run is None:  # a cell whose run is not in this store (tracking=none when it ran)
                continue
            counted += [m[len(FAILURE_PREFIX):] for m, v in run.data.metrics.items()  # losses, not outcomes
                        if m.startswith(FAILURE_PREFIX) and v and m[len(FAILURE_PREFIX):] not in NOT_LOST]
            run_tags = {PRIMARY_TAG: key, RANKING_TAG: ranking, RUN_TYPE_TAG: EVALUATION}
            if all(run.data.metrics.get(m) == v for m, v in metrics.items()) and \
                    all(run.data.tags.get(t) == v for t, v in run_tags.items()):
                counts["already"] += 1
                continue
            log_batches(client, run.info.run_id, [Metric(m, v, now, 0) for m, v in metrics.items()], [],
                         [RunTag(t, v) for t, v in run_tags.items()])
            counts["labelled"] += 1
        failures = in_attribution_order(counted)
    view_tag = VIEW_TAG_PREFIX + VIEW_ID
    if key is not None and rows:
        old = tags.get(view_tag)
        created = int(time.time() * 1000)
        if old:
            try:
                created = int(json.loads(old)["createdAt"])
            except (ValueError, KeyError, TypeError):
                pass
        value = _view(key, ranking, failures, created)
        if old is None or json.loads(old)["state"] != json.loads(value)["state"]:
            client.set_experiment_tag(exp_id, view_tag, value)
        if tags.get(PRIMARY_METRIC_TAG) != PRIMARY:
            client.set_experiment_tag(exp_id, PRIMARY_METRIC_TAG, PRIMARY)
    elif view_tag in tags:
        client.delete_experiment_tag(exp_id, view_tag)
    note = _note(rows, key, exp_id, problem)
    mine = tags.get(NOTE_TAG) is None or tags[NOTE_TAG].startswith(MARK)
    if mine and tags.get(NOTE_TAG) != note:
        client.set_experiment_tag(exp_id, NOTE_TAG, note)
    return counts
