"""``rag-bench label``: a static page to label a cell's answers by key; downloads labels.jsonl."""

from __future__ import annotations

import argparse
from pathlib import Path

from rag_bench.cli.common import exit2_on_error, fail, say
from rag_bench.cli.table import Command


def run(argv: list[str]) -> int:
    """``rag-bench label`` with the arguments ``argv``; its exit code."""
    from rag_bench.calibration.labels import Sample, load_labels
    from rag_bench.decision.decide import cell_name
    from rag_bench.reporting import label_page
    from rag_bench.tracking.download import load_cell_or_run

    p = argparse.ArgumentParser(prog="rag-bench label", description="Write a static page (opens from disk) to "
                                "label a sample of a cell's answers for correct and faithfulness by key; its "
                                "'download labels.jsonl' saves them for rag-bench calibrate and the gate.",
                                epilog="labels format: docs/labels.md")
    p.add_argument("cell", help="cell folder or MLflow run id")
    p.add_argument("--n", type=int, default=50, help="questions to sample (default 50)")
    p.add_argument("--seed", type=int, default=0, help="sampling seed")
    p.add_argument("--stratify", help="a records column (e.g. correct): one answer with it >= 0.5, one below, one "
                   "undefined, in turn, so every kind gets labelled (not a uniform sample: calibrate's PPI "
                   "mean assumes one)")
    p.add_argument("--labels", help="a labels.jsonl saved before: the page starts with it and continues")
    p.add_argument("--out", help="page to write (default reports/label-<cell_id>.html)")
    p.add_argument("--scale", type=int, default=1, help="1: yes/no labels (default); G (2-9): grades 0..G by "
                   "digit key, saved with \"scale\": G (calibrate then reports weighted kappa and Spearman)")
    a = p.parse_args(argv)
    if a.n < 1:
        return fail(f"--n must be at least 1, got {a.n} -- fix: e.g. --n 50")
    if not 1 <= a.scale <= label_page.MAX_SCALE:
        return fail(f"--scale must be 1 (yes/no) to {label_page.MAX_SCALE} (grades typed as one digit), "
                     f"got {a.scale} -- fix: e.g. --scale 4 for grades 0-4")

    def write_label_page() -> int:
        existing = load_labels(a.labels) if a.labels else []
        cell = load_cell_or_run(a.cell)
        rows = label_page.sample(cell.records, a.n, a.seed, a.stratify)
        shown = label_page.items(cell, rows, label_page.references(cell))
        out = Path(a.out or f"reports/label-{cell.cell_id}.html")
        if out.is_dir():
            return fail(f"--out {out}: is a folder -- fix: name a file, e.g. {out / 'label.html'}")
        label_page.write_page(out, label_page.render(cell.cell_id, cell_name(cell), shown, existing, a.scale,
                                                     Sample(cell.cell_id, a.seed, a.stratify)))
        say(f"{len(shown)} answers to label: {out} (open it in a browser; keys y/n, then 'download labels.jsonl')")
        return 0

    return exit2_on_error(write_label_page, also=OSError, what="cannot write the page", fix="pass a writable --out")


COMMAND = Command("label", "CELL [--n 50] [--seed S] [--stratify MEASURE] [--labels FILE] [--out FILE] [--scale G]",
                  "a static page to label a cell's answers by key; downloads labels.jsonl", run)
