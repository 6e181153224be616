"""``rag-bench export``: a cell's results as OUTPUTS lines or a ragas EvaluationDataset."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rag_bench.cli.common import fail, output_file, write_output
from rag_bench.cli.table import Command
from rag_bench.errors import RagBenchError
from rag_bench.untrusted import visible


def run(argv: list[str]) -> int:
    """``rag-bench export`` with the arguments ``argv``; its exit code."""
    from rag_bench.adapters.external import export_outputs
    from rag_bench.tracking.download import load_cell

    p = argparse.ArgumentParser(prog="rag-bench export", description="Write a cell's per-question results as "
                                "OUTPUTS JSON lines (the format `rag-bench evaluate` reads).")
    p.add_argument("cell", help="cell folder or MLflow run id")
    p.add_argument("--format", choices=["outputs", "ragas"], default="outputs",
                   help="outputs: rag-bench evaluate's format; ragas: an EvaluationDataset as JSON lines "
                   "(user_input, retrieved_contexts, response, reference)")
    p.add_argument("--out", help="file to write (default: standard output)")
    a = p.parse_args(argv)
    try:
        out = output_file(a.out, "--out") if a.out else None  # before any work: nothing half-done
        cell = load_cell(a.cell)
        if a.format == "ragas":
            from rag_bench.adapters.external import export_ragas
            from rag_bench.data.loader import load_dataset

            path = (cell.config.get("dataset") or {}).get("path")
            dataset = load_dataset(path) if path and Path(path).is_dir() else None
            lines = export_ragas(cell.records, dataset)
        elif "chunk_spans" not in cell.records:
            return fail(f"{cell.path}: records.parquet has no chunk_spans (written before export existed) -- fix: "
                         "re-run the cell")
        else:
            lines = export_outputs(cell.records)
    except RagBenchError as exc:
        return fail(exc)
    text = "".join(visible(json.dumps(line, ensure_ascii=False)) + "\n" for line in lines)  # same JSON, escaped
    if out is None:
        sys.stdout.write(text)
        return 0
    try:
        write_output(out, text, "--out")
    except RagBenchError as exc:
        return fail(exc)
    return 0


COMMAND = Command("export", "CELL [--format F] [--out]",
                  "a cell's results as OUTPUTS lines or a ragas EvaluationDataset", run)
