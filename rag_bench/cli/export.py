"""``rag-bench export``: a cell's results as OUTPUTS lines, a ragas EvaluationDataset or SQuAD 2.0
predictions."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rag_bench.cli.common import PICK_HELP, experiment_cells_of, fail, output_file, pick_cell, say, write_output
from rag_bench.cli.table import Command
from rag_bench.errors import RagBenchError
from rag_bench.untrusted import visible

FORMATS = {"outputs": "OUTPUTS JSON lines", "ragas": "ragas EvaluationDataset JSON lines",
           "squad": "SQuAD 2.0 predictions JSON"}


def run(argv: list[str]) -> int:
    """``rag-bench export`` with the arguments ``argv``; its exit code."""
    from rag_bench.adapters.external import export_outputs
    from rag_bench.cells import check_folder
    from rag_bench.decision.decide import cell_name
    from rag_bench.tracking.download import load_cell_or_run

    p = argparse.ArgumentParser(
        prog="rag-bench export", description="Write a cell's per-question results: as OUTPUTS JSON lines (the format "
        "`rag-bench evaluate` reads), as a ragas EvaluationDataset, or as SQuAD 2.0 predictions. A line on standard "
        "error (standard output with --out) says what was written.",
        epilog="examples: rag-bench export experiments/demo --cell best --out best.jsonl; rag-bench export "
        "experiments/squad/<id> --format squad --out pred.json && rag-bench score-answers gold.json pred.json")
    p.add_argument("cell", metavar="CELL|EXPERIMENT", help="cell folder or MLflow run id, or an experiment folder with "
                   "--cell")
    p.add_argument("--cell", dest="pick", metavar="best|baseline|NAME", help="with an experiment folder: the cell to "
                   "export: " + PICK_HELP)
    p.add_argument("--format", choices=list(FORMATS), default="outputs",
                   help="outputs: rag-bench evaluate's format; ragas: an EvaluationDataset as JSON lines "
                   "(user_input, retrieved_contexts, response, reference); squad: {question id: answer text} with \"\" "
                   "for a refusal, the text the cell's squad_exact/squad_f1 scored (citation markers stripped), which "
                   "rag-bench score-answers and SQuAD 2.0's official script read beside a SQuAD-layout gold file")
    p.add_argument("--out", help="file to write (default: standard output)")
    a = p.parse_args(argv)
    try:
        out = output_file(a.out, "--out") if a.out else None  # before any work: nothing half-done
        if a.pick is None:
            check_folder(a.cell, "cell", "export", experiment_fix="add --cell best (or --cell baseline, or --cell "
                         "NAME as the leaderboard prints it)")
            cell, picked = load_cell_or_run(a.cell), ""
        else:
            check_folder(a.cell, "experiment", "export --cell")
            cell, why = pick_cell(experiment_cells_of(a.cell), a.pick, "--cell", a.cell)
            picked = f", picked by --cell {a.pick}" + (f": {why}" if why else "")
        notes: list[str] = []
        if a.format == "ragas":
            from rag_bench.adapters.external import export_ragas
            from rag_bench.data.loader import load_dataset

            path = (cell.config.get("dataset") or {}).get("path")
            dataset = load_dataset(path) if path and Path(path).is_dir() else None
            lines = export_ragas(cell.records, dataset)
            text = "".join(visible(json.dumps(line, ensure_ascii=False)) + "\n" for line in lines)  # same JSON, escaped
            count = f"{len(lines)} lines"
        elif a.format == "squad":
            text, count, notes = _squad(cell)
        elif "chunk_spans" not in cell.records:  # a refusal with its fix, no fallback: only a cell of format 0
            # lacks them (every ranking since is graded with its spans: evaluation/grade.py), and where a
            # passage lay cannot be upgraded into an old cell -- the cell is run again
            return fail(f"{cell.path}: records.parquet has no chunk_spans (written before export existed) -- fix: "
                         "re-run the cell")
        else:
            lines = export_outputs(cell.records)
            text = "".join(visible(json.dumps(line, ensure_ascii=False)) + "\n" for line in lines)
            count = f"{len(lines)} lines"
        what = f"export: {count} ({FORMATS[a.format]}) of cell {cell_name(cell)} ({cell.cell_id}){picked}"
    except RagBenchError as exc:
        return fail(exc)
    if out is None:
        sys.stdout.write(text)
        sys.stdout.flush()
        say(what + " on standard output", file=sys.stderr)
    else:
        try:
            write_output(out, text, "--out")
        except RagBenchError as exc:
            return fail(exc)
        say(f"{what} -> {out}")
    for note in notes:
        say(f"note: {note}", file=sys.stderr)
    return 0


def _squad(cell) -> tuple[str, str, list[str]]:  # type: ignore[no-untyped-def]
    """The SQuAD predictions file's text, its count and what a SQuAD scorer will score otherwise."""
    from rag_bench.adapters.external import export_squad
    from rag_bench.errors import DataError, Problem

    try:
        preds, other = export_squad(cell.records)
    except ValueError as exc:
        raise DataError(Problem(str(cell.path), 0, "--format squad", str(exc), "export a cell that generated answers "
                                "(--format outputs exports the rankings)")) from exc
    notes = []
    if other["broke_contract"]:
        notes.append(f"{len(other['broke_contract'])} answer(s) broke the answer contract (e.g. {other['broke_contract'][0]}):"
                     " the cell scored them 0, a SQuAD scorer scores their text")
    if other["failed"]:
        notes.append(f"{len(other['failed'])} generator call(s) failed (e.g. {other['failed'][0]}): written \"\", "
                     "while the cell's figures leave them out")
    refusals = sum(v == "" for v in preds.values())
    # As SQuAD's own files: one JSON object; ids and answers kept as they are (control characters escaped).
    text = visible(json.dumps(preds, ensure_ascii=False, indent=2)) + "\n"
    return text, f"{len(preds)} answers, {refusals} of them \"\" (no answer)", notes


COMMAND = Command("export", "CELL|EXPERIMENT [--cell NAME] [--format outputs|ragas|squad] [--out FILE]",
                  "a cell's results as OUTPUTS lines, a ragas EvaluationDataset or SQuAD 2.0 predictions", run)
