"""``rag-bench gate``: release gate: exit 0 pass, 1 fail, 2 cannot evaluate."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from rag_bench.cli.common import PICK_HELP, PICKS, exit2_on_error, experiment_cells_of, pick_cell, say
from rag_bench.cli.table import Command

_RUN_ID = re.compile(r"^[0-9a-f]{32}$")
EXPERIMENT_FIX = "add --cell best (or --cell baseline, or --cell NAME as the leaderboard prints it)"


def run(argv: list[str]) -> int:
    """``rag-bench gate`` with the arguments ``argv``; its exit code."""
    from rag_bench.cells import check_folder, check_same_dataset, folder_kind
    from rag_bench.errors import ConfigError
    from rag_bench.reporting.gate import (
        check_junit_target,
        evaluate_gate,
        exit_code,
        junit_xml,
        load_policy,
        markdown,
        write_junit,
    )
    from rag_bench.tracking.download import load_cell_or_run

    p = argparse.ArgumentParser(
        prog="rag-bench gate", description="Check a cell against a release policy (absolute thresholds; regression "
        "rules against a baseline). Exit 0 pass, 1 fail, 2 cannot evaluate. The cell is a cell folder, an MLflow run "
        "id, or one cell of an experiment folder picked with --cell (cell ids are content hashes: a CI job gates "
        "`experiments/<name> --cell best` instead of globbing the folder).",
        epilog="policy format: conf/gate/release.yaml. Examples: rag-bench gate experiments/demo --cell best --policy "
        "conf/gate/release.yaml --junit reports/gate.xml; rag-bench gate experiments/demo --cell 'section hybrid "
        "rr=none k=5' --baseline baseline --policy conf/gate/release.yaml; rag-bench gate <run id> --policy ... "
        "(a CI recipe: examples/ci/)")
    p.add_argument("target", metavar="CELL|EXPERIMENT", help="a cell folder, an MLflow run id, or an experiment folder "
                   "(with --cell)")
    p.add_argument("--cell", metavar="best|baseline|NAME", help="with an experiment folder: the cell to gate: "
                   + PICK_HELP)
    p.add_argument("--policy", required=True, help="policy YAML, e.g. conf/gate/release.yaml")
    p.add_argument("--baseline", help="cell to check regressions against: a cell folder or run id; with an experiment "
                   "folder also best, baseline, a cell id or a name of its cells")
    p.add_argument("--junit", help="also write JUnit XML here (one test per rule; each carries its value, limit and "
                   "CI in <properties> and <system-out>)")
    p.add_argument("--tracking-uri", help="MLflow URI for run ids (default $MLFLOW_TRACKING_URI)")
    a = p.parse_args(argv)

    def gate() -> int:
        # Nothing (no JUnit file) is written unless every input was read and the policy is valid.
        policy = load_policy(a.policy)
        picked = ""
        if a.cell is None:
            check_folder(a.target, "cell", "gate", experiment_fix=EXPERIMENT_FIX)
            cell = load_cell_or_run(a.target, tracking_uri=a.tracking_uri)
            cells: list = []
        else:
            if folder_kind(a.target).kind == "cell" or _RUN_ID.match(a.target):
                raise ConfigError(f"--cell {a.cell!r} picks a cell of an experiment folder, and {a.target} is one cell "
                                  f"-- fix: drop --cell to gate it, or pass its experiment folder"
                                  + (f" ({Path(a.target).parent})" if Path(a.target).exists() else ""))
            check_folder(a.target, "experiment", "gate --cell")
            cells = experiment_cells_of(a.target)
            cell, why = pick_cell(cells, a.cell, "--cell", a.target)
            picked = f"--cell {a.cell}" + (f": {why}" if why else "")
        baseline, base_why = None, ""
        if a.baseline and cells and (a.baseline in PICKS or not (Path(a.baseline).exists() or _RUN_ID.match(a.baseline))):
            baseline, base_why = pick_cell(cells, a.baseline, "--baseline", a.target)
        elif a.baseline:
            check_folder(a.baseline, "cell", "gate --baseline")
            baseline = load_cell_or_run(a.baseline, tracking_uri=a.tracking_uri)
        if baseline is not None:
            check_same_dataset(baseline, cell, fix="pass a --baseline evaluated on the same dataset version (re-run "
                               "the baseline's configuration on this dataset)")
            if base_why and baseline.cell_id == cell.cell_id:  # (named by their roles, they can be one cell)
                others = [c for c in cells if c.cell_id != cell.cell_id]
                hint = ""
                if others:  # suggest another cell, never the gated one (issue 52: it suggested the best itself)
                    from rag_bench.decision import decide

                    names = decide.names_of(cells)
                    other = decide.rank(others, decide.primary_measure(cells), names)[0]
                    hint = f" -- fix: name another cell, e.g. --baseline {names[other.cell_id]!r}"
                say(f"note: --baseline {a.baseline} is the gated cell itself ({cell.cell_id}; {base_why}): no "
                    f"regression can show{hint}", file=sys.stderr)
        keep = [Path(a.policy), cell.path] + ([baseline.path] if baseline is not None else [])
        junit = check_junit_target(a.junit, keep) if a.junit else None  # before evaluating: nothing half-done
        results = evaluate_gate(cell, policy, baseline)
        properties = {"policy": str(a.policy), "picked": picked,
                      "baseline_picked": f"--baseline {a.baseline}: {base_why}" if base_why else ""}
        summary = markdown(cell, results, baseline, picked=picked)
        if junit is not None:
            write_junit(junit, junit_xml(results, cell=cell, baseline=baseline, properties=properties))
        say(summary)
        for r in results:
            if r.status == "error":
                say(f"error: cannot evaluate rule {r.name!r}: {r.detail}", file=sys.stderr)
        return exit_code(results)

    # Exit 1 is a verdict: anything that goes wrong before the verdict exits 2, never 1 or a traceback
    # (a bug or an input nobody foresaw included: still "cannot evaluate", in one line).
    return exit2_on_error(gate, also=Exception, what="gate could not evaluate",
                           fix="check the cell, baseline and policy files")


COMMAND = Command("gate", "CELL|EXPERIMENT --policy FILE [--cell best|baseline|NAME] [--baseline CELL] [--junit FILE]",
                  "release gate: exit 0 pass, 1 fail, 2 cannot evaluate", run)
