"""``rag-bench gate``: release gate: exit 0 pass, 1 fail, 2 cannot evaluate."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rag_bench.cli.common import exit2_on_error, say
from rag_bench.cli.table import Command


def run(argv: list[str]) -> int:
    """``rag-bench gate`` with the arguments ``argv``; its exit code."""
    from rag_bench.cells import check_same_dataset
    from rag_bench.reporting.gate import (
        check_junit_target,
        evaluate_gate,
        exit_code,
        junit_xml,
        load_policy,
        markdown,
        write_junit,
    )
    from rag_bench.tracking.download import load_cell

    p = argparse.ArgumentParser(prog="rag-bench gate", description="Check a cell against a release policy "
                                "(absolute thresholds; regression rules against a baseline). Exit 0 pass, "
                                "1 fail, 2 cannot evaluate.", epilog="policy format: conf/gate/release.yaml")
    p.add_argument("cell", help="cell folder or MLflow run id")
    p.add_argument("--policy", required=True, help="policy YAML, e.g. conf/gate/release.yaml")
    p.add_argument("--baseline", help="cell folder or run id to check regressions against")
    p.add_argument("--junit", help="also write JUnit XML here (one test per rule)")
    p.add_argument("--tracking-uri", help="MLflow URI for run ids (default $MLFLOW_TRACKING_URI)")
    a = p.parse_args(argv)

    def gate() -> int:
        # Nothing (no JUnit file) is written unless every input was read and the policy is valid.
        policy = load_policy(a.policy)
        cell = load_cell(a.cell, tracking_uri=a.tracking_uri)
        baseline = load_cell(a.baseline, tracking_uri=a.tracking_uri) if a.baseline else None
        if baseline is not None:
            check_same_dataset(baseline, cell, fix="pass a --baseline evaluated on the same dataset version (re-run "
                               "the baseline's configuration on this dataset)")
        keep = [Path(a.policy), cell.path] + ([baseline.path] if baseline is not None else [])
        junit = check_junit_target(a.junit, keep) if a.junit else None  # before evaluating: nothing half-done
        results = evaluate_gate(cell, policy, baseline)
        summary = markdown(cell, results, baseline)
        if junit is not None:
            write_junit(junit, junit_xml(results))
        say(summary)
        for r in results:
            if r.status == "error":
                say(f"error: cannot evaluate rule {r.name!r}: {r.detail}", file=sys.stderr)
        return exit_code(results)

    # Exit 1 is a verdict: anything that goes wrong before the verdict exits 2, never 1 or a traceback
    # (a bug or an input nobody foresaw included: still "cannot evaluate", in one line).
    return exit2_on_error(gate, also=Exception, what="gate could not evaluate",
                           fix="check the cell, baseline and policy files")


COMMAND = Command("gate", "CELL --policy FILE [--baseline CELL] [--junit FILE]",
                  "release gate: exit 0 pass, 1 fail, 2 cannot evaluate", run)
