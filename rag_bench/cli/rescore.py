"""``rag-bench rescore CELL eval.X=Y ...``: score a cell again under other ``eval.*`` settings from
the run it stored (its :data:`~rag_bench.evaluation.run_io.FILE`), without running the pipeline:
a new cell folder beside it (the cell id of those settings), the same run."""

from __future__ import annotations

import argparse
import difflib
import sys
import textwrap
from pathlib import Path
from typing import Any

from rag_bench.cli.common import fail, say
from rag_bench.cli.table import Command
from rag_bench.errors import ConfigError, RagBenchError


def run(argv: list[str]) -> int:
    """``rag-bench rescore`` with the arguments ``argv``; its exit code."""
    p = argparse.ArgumentParser(
        prog="rag-bench rescore", description=textwrap.fill(
            "Score a finished cell again under other eval.* settings from the run it stored (question-runs.jsonl: its "
            "rankings, contexts, answers, judgements), without running the pipeline: the result is a new cell folder "
            "beside it, the cell a run with those settings would make.", 100),
        epilog="examples:\n  rag-bench rescore experiments/default/0123456789ab eval.gain=exponential eval.ks=[1,3,10]\n"
        "  rag-bench rescore experiments/default/0123456789ab eval.gain=exponential --experiment default-exp-gain",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("cell", help="a finished cell folder (experiments/<experiment>/<cell_id>)")
    p.add_argument("overrides", nargs="*", default=[], help="eval.* settings, e.g. eval.gain=exponential")
    p.add_argument("--experiment", metavar="NAME", help="the experiment folder (beside the cell's) to write the new "
                   "cell to (default: the cell's own; leaderboard and report refuse to rank a measure across cells "
                   "scored with different settings of it)")
    a = p.parse_args(argv)
    try:
        cell_dir, fresh = rescore(Path(a.cell), a.overrides, a.experiment)
    except RagBenchError as exc:
        return fail(exc)
    say(f"wrote {cell_dir}" if fresh else f"{cell_dir}: rescored with these settings before (nothing written)")
    if fresh and a.experiment is None:
        say(f"note: {cell_dir.parent} now holds cells scored with other {', '.join(o.partition('=')[0] for o in a.overrides)}"
            ": leaderboard, report and compare refuse to rank a measure that setting changes across them -- to keep "
            "the rescored cells apart, rescore with --experiment NAME", file=sys.stderr, wrap=True)
    return 0


def rescore(cell: Path, overrides: list[str], experiment: str | None = None) -> tuple[Path, bool]:
    """The cell folder of ``cell``'s stored run scored with ``overrides`` (``eval.*`` only), in the
    experiment folder ``experiment`` beside the cell's (default: the cell's own), and whether it
    was written now (not: a rescore with these settings was done before); a :class:`ConfigError` naming
    the override or file and the fix otherwise."""
    from omegaconf import OmegaConf

    from rag_bench.cells import is_done, load_cell
    from rag_bench.evaluation import run_io
    from rag_bench.evaluation.evaluation import Evaluation
    from rag_bench.runner.config import cell_id, validate
    from rag_bench.runner.main import cell_folder, finish

    for override in overrides:
        _form(override)
    if not cell.is_dir():  # other cell commands also take an MLflow run id: rescore needs the folder's stored run
        from rag_bench.cells import FolderError, folder_problem
        from rag_bench.errors import Problem

        said = folder_problem(cell, "cell", "rescore") or Problem(str(cell), 0, "missing", "is no cell folder",
                                                                  "pass experiments/<experiment>/<cell_id>")
        raise FolderError(Problem(said.file, said.line, said.field, said.message.replace(" (or an MLflow run id)", ""),
                                  said.hint.replace(" (or an MLflow run id)", "") + "; rescore reads the run the cell "
                                  "folder stored (question-runs.jsonl): an MLflow run id is not enough"))
    found = load_cell(cell, records=False)  # a finished cell (DONE), else what the folder is instead
    if not overrides:
        raise ConfigError(f"{cell}: no eval.* setting to change -- fix: name one, e.g. rag-bench rescore {cell} "
                          "eval.gain=exponential")
    cfg = OmegaConf.create(found.config)
    for override in overrides:
        _check(override, found.config.get("eval") or {})
    with_eval = OmegaConf.merge(cfg, OmegaConf.from_dotlist(overrides))
    # beside the cell it rescores, wherever that folder is now
    with_eval.output.root = str(cell.resolve().parent.parent)
    with_eval.experiment.name = experiment or cell.resolve().parent.name
    validate(with_eval)  # type: ignore[arg-type]
    stored = run_io.load_or_refuse(cell / run_io.FILE)
    if stored.dataset.fingerprint != found.dataset_fingerprint:
        raise ConfigError(f"{cell / run_io.FILE}: its dataset fingerprint {stored.dataset.fingerprint} is not the "
                          f"cell's {found.dataset_fingerprint} (metrics.json) -- fix: run the cell again")
    ids = run_io.withheld((cell / run_io.FILE).read_text(encoding="utf-8"))
    if ids:  # documents with access rights: their text is in no cell file, only in the dataset
        from rag_bench.runner.main import load_dataset_of

        dataset = load_dataset_of(with_eval)  # type: ignore[arg-type]
        if dataset.fingerprint != stored.dataset.fingerprint:
            raise ConfigError(f"{cell / run_io.FILE}: the texts of its {len(ids)} documents with access rights are "
                              f"not stored in the cell, and the dataset at {with_eval.dataset.path} is another "
                              f"version (fingerprint {dataset.fingerprint}, the cell's {stored.dataset.fingerprint}) "
                              "-- fix: run the cell again on the dataset as it is now")
        stored = run_io.restore(stored, ids, dataset)
    new_id = cell_id(with_eval, stored.dataset.fingerprint)  # type: ignore[arg-type]
    if new_id == found.cell_id:  # the settings it already has: nothing to score again
        raise ConfigError(f"{' '.join(overrides)}: the cell's own settings, so the rescored cell is this one "
                          f"({found.cell_id}) -- fix: change a setting, e.g. eval.gain=exponential")
    before = is_done(cell_folder(with_eval, new_id))  # type: ignore[arg-type]
    evaluation = Evaluation.from_config(with_eval)  # type: ignore[arg-type]
    return finish(with_eval, stored.dataset, new_id,  # type: ignore[arg-type]
                  lambda cid: run_io.stored(evaluation.evaluate(stored, cid), stored), timed=False), not before


def _form(override: str) -> None:
    """``override`` reads ``eval.<key>=<value>`` (checked before the cell is read: a typo is said first)."""
    key, eq, _ = override.partition("=")
    name = key.removeprefix("eval.")
    if not eq and key.startswith("eval.") and "." not in name:
        raise ConfigError(f"{override!r} has no value -- fix: {key}=VALUE, e.g. eval.gain=exponential")
    if not eq or not key.startswith("eval.") or "." in name:
        raise ConfigError(f"rescore changes eval.* settings only, got {override!r}: anything else changes the run "
                          "-- fix: rag-bench run with that override (the pipeline runs again)")


def _check(override: str, eval_node: dict[str, Any]) -> None:
    """``override`` is ``eval.<key>=<value>`` of a key the cell's config has."""
    _form(override)
    key = override.partition("=")[0]
    name = key.removeprefix("eval.")
    if name not in eval_node:
        near = difflib.get_close_matches(name, list(eval_node), n=1)
        raise ConfigError(f"{key} is not a setting of the cell's eval -- fix: one of "
                          f"{', '.join(sorted(eval_node))}" + (f" (did you mean eval.{near[0]}?)" if near else ""))

COMMAND = Command("rescore", "CELL eval.X=Y ...",
                  "score a cell again under other eval.* settings from its stored run (no pipeline)", run)
