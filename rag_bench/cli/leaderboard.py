"""``rag-bench leaderboard``: table of the finished cells (--format table|csv|json|markdown, --columns, --tag TAG)."""

from __future__ import annotations

import argparse
from typing import Any

from rag_bench.cli.common import fail, say
from rag_bench.cli.table import Command
from rag_bench.errors import RagBenchError


def run(argv: list[str]) -> int:
    """``rag-bench leaderboard`` with the arguments ``argv``; its exit code."""
    from rag_bench.cells import check_folder
    from rag_bench.decision.verdict import of_experiment
    from rag_bench.evaluation import measures
    from rag_bench.reporting.leaderboard import (
        FORMATS,
        format_leaderboard,
        load_cells,
        primary,
        question_tags,
        resolve_columns,
        tag_columns,
        terminal_width,
    )

    p = argparse.ArgumentParser(prog="rag-bench leaderboard", description="Print the finished cells of an "
                                "experiment folder, best first. Cells are named by the parameters that vary "
                                "between them (the labels of the report and of the MLflow runs).")
    p.add_argument("experiment_dir")
    p.add_argument("--sort-by", default=None, help="measure as section/name (default: the experiment's primary "
                   f"measure, experiment.primary; auto: answer/correct_all when a model answered, answer/context_all when the "
                   f"generator is a stand-in such as extractive, else {measures.PRIMARY.key}); lower-is-better measures "
                   "sort ascending; ties go to the cheaper cell")
    p.add_argument("--tag", help="show metrics on the questions with this tag only (e.g. paraphrase, exact_id), "
                   f"ranked by their {measures.PRIMARY.name} (or --sort-by NAME, a per-tag measure such as correct); "
                   "the table's first line says which")
    p.add_argument("--format", default="table", choices=FORMATS, help="table (default, aligned text), csv or "
                   "json (full precision, for scripts), markdown (for a pull request)")
    p.add_argument("--columns", help="comma-separated measures (section/name or name, e.g. ndcg@10,correct), or "
                   "'all'; default: the main measure of each stage")
    p.add_argument("--baseline", help="the cell the best is compared with in the verdict (id, name or folder; "
                   "default: the cell at the config's defaults on every swept axis)")
    p.add_argument("--fingerprint", help="dataset version (fingerprint or a prefix of it) whose cells are shown when "
                   "the folder holds cells of several; default: the version of the cell finished last")
    a = p.parse_args(argv)
    try:  # a cell that cannot be read (or an unknown --fingerprint): exit 2, as report and gate do
        check_folder(a.experiment_dir, "experiment", "leaderboard")  # a cell, an output root, ...: say which
        cells = load_cells(a.experiment_dir, fingerprint=a.fingerprint)
    except RagBenchError as exc:
        return fail(exc)
    if cells.empty:
        return fail(f"{a.experiment_dir}: no finished cells (folders with DONE) -- fix: run `rag-bench run` first")
    if a.tag:
        cols = tag_columns(cells, a.tag)
        if not cols:
            return fail(f"--tag {a.tag!r}: no such question tag -- fix: one of {question_tags(cells)}")
        # Per-tag means hold only some measures: the one that ranks is said on the first line, and
        # --sort-by names one of them.
        names = [c.rpartition("/")[2] for c in cols]
        wanted = (a.sort_by or measures.PRIMARY.name).rpartition("/")[2]
        if wanted not in names:
            return fail(f"--sort-by {a.sort_by!r}: questions tagged {a.tag!r} have no per-tag {wanted} -- fix: one of "
                        f"{', '.join(names)}")
        if a.format == "table":
            n = int(cells[f"tag:{a.tag}/n"].max())
            say(f"questions tagged {a.tag!r} (n={n}), ranked by {wanted} on them"
                + ("" if a.sort_by else _not_primary(cells, wanted, names)))
        say(format_leaderboard(cells, sort_by=f"tag:{a.tag}/{wanted}", columns=cols, fmt=a.format))
        return 0
    try:
        columns = resolve_columns(cells, a.columns)
        # a measure these cells lack was once ignored silently (the table sorted by its first column)
        sort_by = resolve_columns(cells, [a.sort_by])[0] if a.sort_by else None
        found = of_experiment(a.experiment_dir, fingerprint=a.fingerprint, key=sort_by or primary(cells),
                              baseline=a.baseline)
        table = format_leaderboard(cells, sort_by=sort_by, columns=columns, fmt=a.format, verdict=found,
                                   width=terminal_width())
    except ValueError as exc:
        return fail(str(exc).replace("--columns", "--sort-by", 1) if a.sort_by and a.sort_by in str(exc) else exc)
    except RagBenchError as exc:  # experiment.primary names a measure no cell has; measures that differ
        return fail(exc)
    say(table)
    return 0


def _not_primary(cells: Any, ranked_by: str, per_tag: list[str]) -> str:
    """What the first line of a --tag table adds when it ranks by another measure than the
    experiment's primary one (the whole table's): the primary, and how to rank by it if the tag has it."""
    from rag_bench.reporting.leaderboard import primary

    try:
        key = primary(cells)
    except RagBenchError:
        return ""
    name = key.rpartition("/")[2]
    if name == ranked_by:
        return ""
    return (f", not by the experiment's primary measure {key}"
            + (f" (--sort-by {name} ranks by it)" if name in per_tag else " (it has no per-tag value)"))


COMMAND = Command("leaderboard", "EXPERIMENT_DIR",
                  "table of the finished cells (--format table|csv|json|markdown, --columns, --tag TAG)", run)
