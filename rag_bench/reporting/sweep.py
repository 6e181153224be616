"""What a sweep shows when it ends: the experiment's leaderboard and the table of where questions
were lost on the console, and the sweep's parent MLflow runs filled with the leaderboard and the
best cell (:mod:`rag_bench.decision.decide`'s rule, ties said). The Hydra callback of a sweep
(``hydra.callbacks``): the runner's lifecycle (:class:`rag_bench.runner.callbacks.SweepCallbacks`)
with the report at its end, before the parent runs close -- the runner knows nothing of reporting."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omegaconf import DictConfig

from rag_bench.runner.callbacks import SweepCallbacks
from rag_bench.untrusted import visible

if TYPE_CHECKING:  # the callback is loaded with every sweep: the reporting stack only when it reports
    from rag_bench.decision.verdict import Verdict


def _summarize(cells: Any, axes: tuple[str, ...], key: str | None, problem: str, found: Verdict | None = None) -> None:
    """The sweep's parent MLflow run: the leaderboard as a table, the primary measure ``key`` that
    ranked it, the best cell's measures and name, the sweep's axes (when this process opened one),
    and the verdict (``found``) as its description and params. ``key`` None: no cell has the
    primary measure (``problem`` says so): the cells and that note, no best cell."""
    from rag_bench.reporting.leaderboard import ALL_COLUMNS, leaderboard_table, tie_line
    from rag_bench.tracking.mlflow_tracker import summarize_sweeps

    if key is None:
        summarize_sweeps(cells[["label", "cell"]], {}, {"sweep.axes": ",".join(axes) or "none",
                                                        "sweep.cells": len(cells)},
                         f"{len(cells)} cells; no best cell: {problem}", problem=problem)
        return
    table = leaderboard_table(cells, sort_by=key, columns=ALL_COLUMNS)
    best = table.iloc[0]
    # ANN figures describe an approximate index against flat: logged only when one was swept.
    approximate = "index" in table and any(_index_name(v) not in ("", "flat") for v in table["index"])
    metrics = {f"best/{c}": float(best[c]) for c in table.columns if "/" in c and best[c] == best[c]
               and (approximate or not c.startswith("ann/"))}
    if key in table and best[key] == best[key]:
        metrics["primary"] = float(best[key])
    tie = tie_line(cells, key)
    params = {"sweep.axes": ",".join(axes) or "none", "sweep.cells": len(table), "best.cell": best["cell"],
              "best.label": best["label"], "sweep.sort_by": key, "sweep.primary": key}
    if found is not None:
        params.update({"verdict.not_worse": len(found.close), "verdict.baseline":
                       found.versus.name if found.versus else found.baseline_note[:250]})
        if found.versus is not None:
            metrics.update({"verdict/vs_baseline_diff": found.versus.diff, "verdict/vs_baseline_p": found.versus.p})
        note = "\n\n".join(found.lines())
    else:
        note = (f"{len(table)} cells; primary measure {key}; best: {best['label']} ({best['cell']}) "
                f"{best.get(key, float('nan')):.3f}{'; ' + tie if tie else ''}")
    summarize_sweeps(table, metrics, params, note, key=key)  # key: each cell's run gets rank, primary, CI


def summarize_experiment(experiment_dir: str | Path, axes: tuple[str, ...] = ()) -> None:
    """What a sweep's end logs to MLflow, for an experiment folder's finished cells under the parent
    run this process has open (``rag-bench sync``): the leaderboard, the verdict as the parent's
    description, and each cell run's rank, primary measure and CI with the experiment's view."""
    cells, read = _read(experiment_dir)
    if cells.empty:
        return
    key, problem, found = _decide(read, cells)
    _summarize(cells, axes, None if problem else key, problem, found)


def _read(experiment_dir: str | Path) -> tuple[Any, list[Any]]:
    """The leaderboard frame of an experiment folder and its finished cells, each cell read once for
    both (the verdict reads the same cells: a 180-cell sweep's end read every config.yaml twice)."""
    from rag_bench.cells import experiment_cells
    from rag_bench.reporting.leaderboard import load_cells

    read = experiment_cells(experiment_dir, records=False) if Path(experiment_dir).is_dir() else []
    return load_cells(experiment_dir, found=read), read


def _decide(read: list[Any], cells: Any) -> tuple[str | None, str, Verdict | None]:
    """The primary measure of ``cells`` (a leaderboard frame) and the verdict on them (``read``: the
    experiment's finished cells, the frame's one dataset version among them, as
    :func:`rag_bench.decision.verdict.of_experiment` takes them); or, when they cannot be ranked,
    None and why (said, never ranked by another measure)."""
    from rag_bench.cells import one_dataset
    from rag_bench.decision.verdict import verdict
    from rag_bench.errors import RagBenchError
    from rag_bench.reporting.leaderboard import primary

    try:
        key = primary(cells)
        return key, "", verdict(one_dataset(read)[0], key=key)
    except RagBenchError as exc:
        return None, str(exc), None


def _index_name(value: Any) -> str:
    """An index column's value (the stage's config, or its option name) as its option name."""
    return str(value.get("name", "")) if isinstance(value, dict) else str(value or "")


class SweepReport(SweepCallbacks):
    """The sweep's lifecycle, and at its end (or a single run's) the leaderboard printed and the
    sweep's parent runs filled -- then closed by the lifecycle."""

    def _end(self, config: DictConfig | None = None) -> None:
        if config is not None:
            self._report(config)
        super()._end(config)

    def _report(self, config: DictConfig) -> None:
        from rag_bench.cells import read_cell
        from rag_bench.errors import RagBenchError
        from rag_bench.reporting.leaderboard import (
            best_first,
            format_failures,
            format_leaderboard,
            format_tags,
            terminal_width,
        )
        from rag_bench.runner.callbacks import axes_of

        exp_dir = Path(config.output.root) / str(config.experiment.name)
        cells, read = _read(exp_dir)
        if cells.empty:
            return
        key, problem, found = _decide(read, cells)
        if not problem:
            try:
                ranked = format_leaderboard(cells, sort_by=key, verdict=found,  # refuses measures that differ
                                            width=terminal_width(), said=False)  # said last, below
            except RagBenchError as exc:  # said, never ranked by another measure
                problem = str(exc)
        if not self._failed:
            _summarize(cells, axes_of(config), None if problem else key, problem, found)
        if problem:
            print(visible(f"\nLeaderboard: {exp_dir} ({len(cells)} cells) not ranked\nerror: {problem}"),
                  file=sys.stderr, flush=True)
            return
        width = terminal_width()
        print("\n" + "\n".join(_wrapped([f"Leaderboard: {exp_dir} ({len(cells)} cells)"], width)) + "\n",
              file=sys.stdout)
        print(visible(ranked), file=sys.stdout, flush=True)
        failures = format_failures(cells, sort_by=key)
        if failures:
            shown = min(10, len(cells))
            failures = "\n".join(_wrapped(failures.splitlines(), width))  # its legend line
            print(visible(f"\nWhere questions were lost (first failing stage; top {shown} cells):\n\n{failures}"),
                  file=sys.stdout, flush=True)
        best = best_first(cells, key).iloc[0] if key is not None and key in cells.columns else cells.iloc[0]
        tags = format_tags(read_cell(exp_dir / str(best["cell"]), records=False).metrics, width=width)
        if tags:
            head = _wrapped([f"By question tag, best cell {best['label']} (95 % CI; a/r/c: questions expecting answer/"
                             "refuse/clarify; failures: first failing stage):"], width)
            print(visible("\n" + "\n".join(head) + f"\n\n{tags}"), file=sys.stdout, flush=True)
        footer = [f"Failures, drill-down, charts: rag-bench report {exp_dir}",
                  f"Library output (model loading, MLflow, Hydra): {exp_dir / '.hydra' / 'rag_bench.log'}"]
        print("\n" + "\n".join(_wrapped(footer, width)), file=sys.stdout, flush=True)
        if found is not None:  # the closing lines: what the sweep decides, each wrapped to the width
            print(visible("\n" + "\n".join(_wrapped(found.lines(), width))), file=sys.stdout, flush=True)


def _wrapped(lines: list[str], width: int) -> list[str]:
    """``lines`` each wrapped at spaces to ``width`` characters (the sweep's console: no line wider
    than the terminal, or 120 characters in a file, pipe or CI log), their continuations indented."""
    import textwrap

    return [line if len(line) <= width else
            textwrap.fill(line, width, subsequent_indent="  ", break_long_words=False, break_on_hyphens=False)
            for line in lines]
