"""``rag-bench report``: HTML report with charts into reports/<experiment>/."""

from __future__ import annotations

import argparse

from rag_bench.cli.common import fail, say
from rag_bench.cli.table import Command
from rag_bench.errors import RagBenchError


def run(argv: list[str]) -> int:
    """``rag-bench report`` with the arguments ``argv``; its exit code."""
    from rag_bench.cells import check_folder
    from rag_bench.evaluation import measures
    from rag_bench.reporting.report import render_report

    p = argparse.ArgumentParser(prog="rag-bench report", description="Render an experiment's cells as one static "
                                "folder (reports/<experiment>/index.html) that opens from disk without a server: a "
                                "sortable, filterable leaderboard with CIs, which axis matters (main effects, an "
                                "interaction heatmap), the quality-vs-cost Pareto front, per-tag results, failure "
                                "attribution and a per-question drill-down. Also logged to the sweep's MLflow "
                                "parent run.")
    p.add_argument("experiment_dir", help="e.g. experiments/demo")
    p.add_argument("--out", default="reports", help="output root (default reports/)")
    p.add_argument("--metric", default=None, help="measure that ranks cells (section/name; default: "
                   f"generation/correct when the cells generated answers, else {measures.PRIMARY.key})")
    p.add_argument("--baseline", help="cell (id, name or folder) to compare the best cell against (default: the cell "
                   "at the config's defaults on every swept axis)")
    p.add_argument("--top", type=int, default=20, help="cells drawn in the per-cell charts (default 20; the "
                   "table always lists every cell)")
    p.add_argument("--pair", help="two swept axes for the interaction heatmap, e.g. chunker,retriever (default: the "
                   "two that move the metric most)")
    p.add_argument("--no-mlflow", action="store_true", help="do not log the report to MLflow")
    p.add_argument("--fingerprint", help="dataset version (fingerprint or a prefix of it) whose cells are reported "
                   "when the folder holds cells of several; default: the version of the cell finished last")
    p.add_argument("--labels", help="people's labels (docs/labels.md) for the section 'Can we trust the automatic "
                   "answer measures?' (default: labels.jsonl beside the dataset, when there is one)")
    a = p.parse_args(argv)
    pair = tuple(x.strip() for x in a.pair.split(",")) if a.pair else None
    if pair is not None and len(pair) != 2:
        return fail(f"--pair {a.pair!r}: give two axes separated by a comma, e.g. --pair chunker,retriever")
    try:
        check_folder(a.experiment_dir, "experiment", "report")  # a cell, an output root, ...: say which
        index = render_report(a.experiment_dir, out_root=a.out, metric=a.metric, baseline=a.baseline,
                              log_to_mlflow=not a.no_mlflow, top=a.top, pair=pair,  # type: ignore[arg-type]
                              fingerprint=a.fingerprint, labels_file=a.labels)
    except RagBenchError as exc:
        return fail(exc)
    say(f"report: {index}")
    return 0


COMMAND = Command("report", "EXPERIMENT_DIR", "HTML report with charts into reports/<experiment>/", run)
