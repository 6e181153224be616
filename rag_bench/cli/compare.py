"""``rag-bench compare``: paired statistics + per-question differences (--json); compare
EXPERIMENT_DIR: its baseline against its best cell."""

from __future__ import annotations

import argparse
import json
import sys

from rag_bench.cli.common import fail, say
from rag_bench.cli.table import Command
from rag_bench.errors import RagBenchError


def run(argv: list[str]) -> int:
    """``rag-bench compare`` with the arguments ``argv``; its exit code."""
    from rag_bench.reporting.compare import compare_cells, format_compare
    from rag_bench.tracking.download import load_cell

    p = argparse.ArgumentParser(prog="rag-bench compare", description="Paired comparison of two cells over the "
                                "same questions: by default the main measure of every stage (retrieval, evidence, "
                                "answer correct/EM/F1, citation, refusals, latency, tokens), difference B - A with a "
                                "paired bootstrap CI, a paired randomisation-test p-value (Holm-corrected over those "
                                "measures), a one-line verdict and the questions whose answer flipped. Given an "
                                "experiment folder instead: its baseline (the defaults cell, or --baseline) against "
                                "its best cell by the primary measure.")
    p.add_argument("cell_a", help="cell folder or MLflow run id (the reference, A); or an experiment folder")
    p.add_argument("cell_b", nargs="?", help="cell folder or MLflow run id (B); omitted with an experiment folder")
    p.add_argument("-m", "--metric", action="append", help="measure (repeatable) as the gate names it, e.g. "
                   "generation/correct, retrieval/ndcg@10, latency/retrieve_ms, cost/tokens, or a records column "
                   "such as hit@5; default: the main measure of each stage")
    p.add_argument("--baseline", help="with an experiment folder: the baseline cell (id, name or folder; default: the "
                   "cell at the config's defaults on every swept axis)")
    p.add_argument("--flip-metric", help="measure whose right/wrong flips are listed (default: the answer when both "
                   "cells generated, else hit@<pipeline.k>)")
    p.add_argument("--resamples", type=int, default=2000, help="bootstrap resamples (default 2000)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--alpha", type=float, default=0.05)
    p.add_argument("--json", action="store_true", help="print JSON instead of the table")
    p.add_argument("--tracking-uri", help="MLflow URI for run ids (default $MLFLOW_TRACKING_URI)")
    a = p.parse_args(argv)
    try:
        if a.cell_b is None:
            from rag_bench.reporting.decide import default_pair
            from rag_bench.reporting.verdict import of_experiment

            found = of_experiment(a.cell_a, baseline=a.baseline)  # the experiment's verdict, as every view says it
            if not a.json:
                say("\n".join(found.lines()) + "\n")
            ca, cb, note = default_pair(a.cell_a, a.baseline)
            say(note, file=sys.stderr)
        else:
            ca, cb = load_cell(a.cell_a, tracking_uri=a.tracking_uri), load_cell(a.cell_b, tracking_uri=a.tracking_uri)
        result = compare_cells(ca, cb, metrics=a.metric, n_resamples=a.resamples, seed=a.seed, alpha=a.alpha,
                               flip_metric=a.flip_metric)
    except RagBenchError as exc:
        return fail(exc)
    if a.json and a.cell_b is None:
        result = {"experiment_verdict": found.as_dict(), **result}
    say(json.dumps(result, indent=2, default=str) if a.json else format_compare(result))
    return 0


COMMAND = Command("compare", "CELL_A CELL_B",
                  "paired statistics + per-question differences (--json); compare EXPERIMENT_DIR: its baseline "
                  "against its best cell", run)
