"""``rag-bench evaluate``: score an external system's outputs (or --trec RUN) as a cell."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from rag_bench.cli.common import config_message, fail, say
from rag_bench.cli.table import Command
from rag_bench.errors import RagBenchError


def run(argv: list[str]) -> int:
    """``rag-bench evaluate`` with the arguments ``argv``; its exit code."""
    from hydra import compose, initialize_config_dir
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from rag_bench.runner.config import CONF_DIR, check_group_overrides, check_hydra_targets, register_configs
    from rag_bench.runner.main import evaluate_cell
    from rag_bench.tracking.mlflow_tracker import finish_all

    p = argparse.ArgumentParser(
        prog="rag-bench evaluate", description="Score results an external system already produced (its "
        "retrieved passages, answers and citations, or a TREC run) as a normal cell folder: metrics.json, "
        "run.trec, qrels.trec, failures.csv, DONE, logged to MLflow; leaderboard, compare, report and gate "
        "read it like any cell.",
        epilog="OUTPUTS format (JSON lines, one per question): {\"id\": .., \"retrieved\": [{\"doc_id\": .., "
        "\"start\": .., \"end\": ..} | {\"doc_id\": .., \"text\": ..} | {\"text\": ..}, ...], \"answer\": .., "
        "\"citations\": [1, ..], \"refused\": false, \"latency_ms\": ..}; see rag_bench/adapters/external.py. "
        "example: rag-bench evaluate app_outputs.jsonl --dataset datasets/kettleby --name my_app")
    p.add_argument("outputs", nargs="?", help="the system's outputs (JSON lines)")
    p.add_argument("--dataset", required=True, help="dataset folder the outputs answer (native or BEIR)")
    p.add_argument("--trec", help="score a TREC run (document ids, or chunk ids of chunker=...) instead of OUTPUTS")
    p.add_argument("--ragas", help="score a ragas EvaluationDataset (JSON lines: user_input, retrieved_contexts, "
                   "response) instead of OUTPUTS")
    p.add_argument("--name", default="external", help="the system's name in leaderboards and MLflow")
    p.add_argument("overrides", nargs="*", default=[], help="config overrides, e.g. eval.unit=both pipeline.k=3 "
                   "experiment.name=apps tracking=none")
    a, extra = p.parse_known_args(argv)
    overrides = [*a.overrides, *extra]
    for arg in argv:
        # A name or value that is not UTF-8 (bytes from the shell, e.g. $'app\xff') cannot be written
        # to config.yaml, metrics.json or MLflow: refused before any folder is made.
        if not arg.isascii() and any("\ud800" <= c <= "\udfff" for c in arg):
            shown = os.fsencode(arg).decode("utf-8", "backslashreplace")
            return fail(f"argument '{shown}' is not valid UTF-8 -- fix: pass the name or value as UTF-8 text, "
                        "e.g. --name my_app")
    if a.outputs and "=" in a.outputs and not Path(a.outputs).exists():  # `--trec RUN key=value`: an override
        overrides.insert(0, a.outputs)
        a.outputs = None
    if sum(x is not None for x in (a.outputs, a.trec, a.ragas)) != 1:
        return fail("give one of OUTPUTS, --trec RUN or --ragas FILE -- fix: rag-bench evaluate outputs.jsonl "
                     "--dataset DIR")
    register_configs()
    # The cell is a sweep of one: its parent MLflow run (opened when the cell is logged) is closed
    # here, as `run`'s callbacks close a sweep's -- FINISHED, or FAILED on any error.
    try:
        check_hydra_targets(overrides)
        check_group_overrides(overrides)
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
            cfg = compose("config", overrides=[*overrides, f"dataset.path={Path(a.dataset).resolve()}"])
        cell_dir = evaluate_cell(cfg, outputs=Path(a.outputs) if a.outputs else None,
                                 trec=Path(a.trec) if a.trec else None, ragas=Path(a.ragas) if a.ragas else None,
                                 system=a.name)
    except RagBenchError as exc:
        finish_all(ok=False)
        return fail(exc)
    except (HydraException, OmegaConfBaseException) as exc:
        finish_all(ok=False)
        return fail(f"configuration: {config_message(exc, overrides)}")
    except BaseException:
        finish_all(ok=False)
        raise
    finish_all(ok=True)
    say(_where_written(cell_dir, default_experiment=not any(o.startswith("experiment.name=") for o in overrides)))
    return 0


def _where_written(cell_dir: Path, *, default_experiment: bool) -> str:
    """Where `evaluate` put its cell: the folder and the MLflow experiment, run and how to open it
    (from the cell's DONE, which records where it was logged)."""
    try:
        done = json.loads((cell_dir / "DONE").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        done = {}
    lines = [f"wrote {cell_dir}"]
    experiment = done.get("mlflow_experiment")
    if done.get("tracking") == "mlflow" and done.get("mlflow_run_id") and experiment:
        uri = done.get("tracking_uri") or ""
        lines.append(f"MLflow: experiment {experiment!r}, run {done['mlflow_run_id']} at {uri}"
                     + (f" -- open: mlflow ui --backend-store-uri {uri}" if uri.startswith("sqlite:") else ""))
    else:
        lines.append("MLflow: not logged (tracking=none); the cell folder holds the results")
    if default_experiment:
        lines.append(f"(experiment {cell_dir.parent.name!r} is the default: experiment.name=NAME files the cell "
                     "under a name of its own)")
    return "\n".join(lines)


COMMAND = Command("evaluate", "OUTPUTS --dataset DIR",
                  "score an external system's outputs (or --trec RUN) as a cell", run)
