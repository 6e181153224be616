"""``rag-bench status``: a cluster sweep's jobs and cells: done/running/failed, failed jobs' logs."""

from __future__ import annotations

import argparse
from pathlib import Path

from rag_bench.cli.common import fail, say
from rag_bench.cli.table import Command
from rag_bench.errors import RagBenchError


def run(argv: list[str]) -> int:
    """``rag-bench status`` with the arguments ``argv``; its exit code."""
    from rag_bench.cells import check_folder
    from rag_bench.cluster.status import format_status, sweep_status

    p = argparse.ArgumentParser(prog="rag-bench status", description="A (cluster) sweep's jobs and cells: done, "
                                "running, pending, failed, unfinished; the log and last error lines of every failed "
                                "job. Success is a cell's DONE, not the scheduler's word.")
    p.add_argument("experiment_dir", help="<output.root>/<experiment.name>; each cell is listed by id and name (its "
                   "values on the swept axes, as the leaderboard names it)")
    a = p.parse_args(argv)
    try:
        check_folder(a.experiment_dir, "experiment", "status", finished=False)  # a cell, an output root, ...: say which
        jobs, cells = sweep_status(a.experiment_dir)
        say(format_status(jobs, cells, cell_names(Path(a.experiment_dir))))
    except RagBenchError as exc:
        return fail(exc)
    return 0


def cell_names(experiment: Path) -> dict[str, str]:
    """Cell id -> name for the cell folders of ``experiment`` with a readable config.yaml: a
    finished cell as the leaderboard names it; an unfinished one by its values on the same axes."""
    import yaml

    from rag_bench import naming
    from rag_bench.cells import experiment_cells, is_done, one_dataset
    from rag_bench.decision.decide import names_of
    from rag_bench.errors import RagBenchError

    try:
        done, _ = one_dataset(experiment_cells(experiment, records=False))
    except RagBenchError:  # a damaged cell: the ids alone (status still lists every state)
        return {}
    names = names_of(done)
    axes = naming.axes([c.config for c in done])
    for folder in sorted(experiment.iterdir()):
        if folder.is_dir() and not is_done(folder) and (folder / "config.yaml").is_file():
            try:
                config = yaml.safe_load((folder / "config.yaml").read_text(encoding="utf-8"))
            except (OSError, ValueError, yaml.YAMLError):
                continue
            if isinstance(config, dict) and axes:
                names[folder.name] = naming.label(config, axes)
    return names


COMMAND = Command("status", "EXPERIMENT_DIR",
                  "a cluster sweep's jobs and cells: done/running/failed, failed jobs' logs", run)
