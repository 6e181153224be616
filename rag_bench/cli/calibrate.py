"""``rag-bench calibrate``: agreement of the answer measures with people's labels (kappa with CI) and
PPI-corrected cell means."""

from __future__ import annotations

import argparse
import json
import sys

from rag_bench.cli.common import exit2_on_error, fail, load_cells_of, say
from rag_bench.cli.table import Command


def run(argv: list[str]) -> int:
    """``rag-bench calibrate`` with the arguments ``argv``; its exit code."""
    from rag_bench.calibration.calibrate import as_json, calibrate, format_text
    from rag_bench.calibration.labels import load_labels
    from rag_bench.decision.decide import names_of

    p = argparse.ArgumentParser(prog="rag-bench calibrate", description="How well each automatic answer measure "
                                "(correct under each answer_match, the refusal measure, the faithfulness proxy, "
                                "citation support, judged measures) agrees with people's labels: n, base rates, "
                                "confusion matrix, Cohen's kappa (quadratically weighted and Spearman for grades) "
                                "with a bootstrap CI, the two labellers' own kappa, and each cell's PPI-corrected "
                                "mean beside its raw mean.", epilog="labels format: docs/labels.md")
    p.add_argument("target", help="experiment folder or cell folder (or MLflow run id)")
    p.add_argument("--labels", required=True, help="labels.jsonl (rag-bench label writes it; docs/labels.md)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    p.add_argument("--json", action="store_true", help="print JSON instead of the tables")
    a = p.parse_args(argv)
    if a.seed < 0:  # numpy's generators take non-negative seeds only
        return fail(f"--seed must be a non-negative integer, got {a.seed} -- fix: e.g. --seed 0")

    def calibrate_cells() -> int:
        labels = load_labels(a.labels)
        cells = load_cells_of(a.target, "calibrate")
        if not cells:
            return fail(f"{a.target}: no finished cells (folders with DONE) -- fix: run `rag-bench run` first")
        results = calibrate(cells, names_of(cells), labels, seed=a.seed)
        if not any(r.n for r in results):
            say(f"warning: no label of {a.labels} names an answer of these cells (question id and answer text)",
                  file=sys.stderr)
        say(json.dumps({"labels": str(a.labels), "measures": as_json(results)}, indent=2) if a.json
              else format_text(results))
        return 0

    return exit2_on_error(calibrate_cells)


COMMAND = Command("calibrate", "EXPERIMENT|CELL --labels FILE [--json]",
                  "agreement of the answer measures with people's labels (kappa with CI) and PPI-corrected cell means", run)
