"""``rag-bench compare``: paired statistics + per-question differences (--json); compare
EXPERIMENT_DIR [A B]: two of its cells by name (default: its baseline against its best cell)."""

from __future__ import annotations

import argparse
import json
import re
import shlex
import sys
from pathlib import Path

from rag_bench.cli.common import PICK_HELP, exit2_on_error, experiment_cells_of, fail, pick_cell, say
from rag_bench.cli.table import Command

_RUN_ID = re.compile(r"^[0-9a-f]{32}$")
USAGE = ("rag-bench compare CELL_A CELL_B [options]\n"
         "       rag-bench compare EXPERIMENT_DIR [A B] [options]")


def run(argv: list[str]) -> int:
    """``rag-bench compare`` with the arguments ``argv``; its exit code."""
    from rag_bench.cells import check_folder, folder_kind, json_ready
    from rag_bench.reporting.compare import compare_cells, format_compare
    from rag_bench.tracking.download import load_cell_or_run

    p = argparse.ArgumentParser(
        prog="rag-bench compare", usage=USAGE, description="Paired comparison of two cells over the same questions: "
        "by default the main measure of every stage (retrieval, evidence, answer correct/EM/F1, citation, refusals, "
        "latency, tokens), difference B - A with a paired bootstrap CI, a paired randomisation-test p-value "
        "(Holm-corrected over those measures), a one-line verdict and the questions whose answer flipped. "
        "CELL_A CELL_B: two cell folders or MLflow run ids. EXPERIMENT_DIR A B: two cells of one experiment folder, "
        "each named as the leaderboard prints it, by id, or as best or baseline. EXPERIMENT_DIR alone: its baseline "
        "(the defaults cell, or --baseline) against its best cell by the primary measure.",
        epilog="examples: rag-bench compare experiments/demo 'section bm25 rr=none k=5' 'fixed dense rr=none k=3'; "
        "rag-bench compare experiments/demo baseline best; rag-bench compare experiments/demo/<id> <run id>")
    p.add_argument("refs", nargs="+", metavar="CELL_A CELL_B | EXPERIMENT_DIR [A B]",
                   help="two cells (folders or run ids); or an experiment folder, alone or with two of its cells: "
                   + PICK_HELP)
    p.add_argument("-m", "--metric", action="append", help="measure (repeatable) as the gate names it, e.g. "
                   "generation/correct, retrieval/ndcg@10, latency/retrieve_ms, cost/tokens, or a records column "
                   "such as hit@5; default: the main measure of each stage")
    p.add_argument("--baseline", help="with an experiment folder alone: the baseline cell (id, name or folder; default: "
                   "the cell at the config's defaults on every swept axis)")
    p.add_argument("--flip-metric", help="measure whose right/wrong flips are listed (default: the answer when both "
                   "cells generated, else hit@<pipeline.k>)")
    p.add_argument("--resamples", type=int, default=2000, help="bootstrap resamples (default 2000)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--alpha", type=float, default=0.05)
    p.add_argument("--json", action="store_true", help="print JSON instead of the table")
    p.add_argument("--tracking-uri", help="MLflow URI for run ids (default $MLFLOW_TRACKING_URI)")
    a = p.parse_args(argv)
    refs = a.refs
    if len(refs) > 3:
        return fail(f"compare takes two cells, or an experiment folder and two of its cells; got {len(refs)} arguments "
                    f"({', '.join(map(repr, refs))}) -- fix: quote a cell name that holds spaces, e.g. "
                    "'section bm25 rr=none k=5'")
    first = folder_kind(refs[0]).kind
    verdicts: list = []  # compare EXPERIMENT_DIR alone: the experiment's verdict, for --json

    def pair() -> tuple:
        if len(refs) == 1:  # the experiment's baseline against its best cell
            if first == "cell":
                raise _usage(f"{refs[0]} is a cell folder: compare takes two cells, or an experiment folder -- fix: "
                             f"rag-bench compare {refs[0]} CELL_B, or rag-bench compare {Path(refs[0]).parent} (its "
                             "baseline against its best cell)")
            check_folder(refs[0], "experiment", "compare")
            from rag_bench.decision.decide import default_pair
            from rag_bench.decision.verdict import of_experiment

            found = of_experiment(refs[0], baseline=a.baseline)  # the experiment's verdict, as every view says it
            verdicts.append(found)
            if not a.json:
                say("\n".join(found.lines()) + "\n")
            return default_pair(refs[0], a.baseline)
        if a.baseline:
            raise _usage(f"--baseline picks the baseline of `compare EXPERIMENT_DIR` alone; here the cells are named "
                         f"({' and '.join(map(repr, refs[-2:]))}) -- fix: drop --baseline")
        if len(refs) == 3:
            check_folder(refs[0], "experiment", "compare EXPERIMENT_DIR A B")
            cells = experiment_cells_of(refs[0])
            (ca, why_a), (cb, why_b) = (pick_cell(cells, r, label, refs[0]) for r, label in zip(refs[1:], "AB"))
            if ca.cell_id == cb.cell_id:
                raise _usage(f"{refs[1]!r} and {refs[2]!r} name the same cell ({ca.cell_id}) -- fix: name two cells")
            from rag_bench.decision.decide import names_of

            names = names_of(cells)
            note = "; ".join(f"{label} = {names[c.cell_id]} ({c.cell_id})" + (f", {why}" if why else "")
                             for label, c, why in (("A", ca, why_a), ("B", cb, why_b)))
            return ca, cb, note
        if first == "experiment":
            raise _usage(f"{refs[0]} is an experiment folder: compare takes two of its cells after it, or none -- fix: "
                         f"rag-bench compare {refs[0]} A B (names as the leaderboard prints them, ids, best or "
                         f"baseline), or rag-bench compare {refs[0]} (its baseline against its best cell)")
        for ref, other in ((refs[0], refs[1]), (refs[1], refs[0])):
            if folder_kind(ref).kind == "missing" and not _RUN_ID.match(ref) and folder_kind(other).kind == "cell":
                exp = Path(other).parent
                raise _usage(f"{ref!r} is no cell folder or MLflow run id (a cell's name or id is read within its "
                             f"experiment folder) -- fix: rag-bench compare {exp} A B, e.g. rag-bench compare {exp} "
                             f"{Path(other).name} {shlex.quote(ref)}")
        for ref in refs:
            check_folder(ref, "cell", "compare CELL_A CELL_B", experiment_fix=f"name the cells after the folder: "
                         f"rag-bench compare {ref} A B")
        return load_cell_or_run(refs[0], tracking_uri=a.tracking_uri), load_cell_or_run(refs[1], tracking_uri=a.tracking_uri), ""

    def body() -> int:
        ca, cb, note = pair()
        if note:
            say(note, file=sys.stderr)
        result = compare_cells(ca, cb, metrics=a.metric, n_resamples=a.resamples, seed=a.seed, alpha=a.alpha,
                               flip_metric=a.flip_metric, primary=verdicts[0].measure if verdicts else None)
        if a.json and verdicts:
            result = {"experiment_verdict": verdicts[0].as_dict(), **result}
        say(json.dumps(json_ready(result), indent=2, default=str, allow_nan=False) if a.json  # null, never NaN
            else format_compare(result))
        return 0

    return exit2_on_error(body)


def _usage(message: str) -> Exception:
    from rag_bench.errors import ConfigError

    return ConfigError(message)


COMMAND = Command("compare", "CELL_A CELL_B | EXPERIMENT_DIR [A B | --baseline CELL]",
                  "paired statistics + per-question differences (--json); an experiment folder with two of its cells "
                  "by name, or alone: its baseline (the defaults cell, or --baseline CELL) against its best cell", run)
