"""``rag-bench run``: evaluate one cell; with -m a sweep (rag-bench run --help)."""

from __future__ import annotations

import os
import sys

from rag_bench.cli.common import config_message, fail, missing_option
from rag_bench.cli.table import Command
from rag_bench.errors import ComponentError, RagBenchError
from rag_bench.logs import forget_created_experiments, remove_created_experiments


def run(args: list[str]) -> int:
    """Hand the overrides to Hydra; turn composition errors and RagBenchError into exit 2. With
    ``--plan``: print what the run would compute, cost and take, and change nothing
    (:mod:`rag_bench.search.plan`); ``--plan=exact``: the same, with the vectors not cached embedded
    in memory so that every prompt is counted exactly."""
    flags = [a for a in args if a == "--plan" or a.startswith("--plan=")]
    bad = [a for a in flags if a not in _PLAN_FLAGS]
    if bad:
        return fail(f"{bad[0]}: unknown plan -- fix: --plan (fast: prompts of cells whose vectors are not cached "
                    "counted as a bound) or --plan=exact (those vectors embedded in memory, every prompt exact)")
    if len(set(flags)) > 1:
        return fail(f"{' and '.join(sorted(set(flags)))} cannot be combined -- fix: give one")
    planning, exact = bool(flags), "--plan=exact" in flags
    args = [a for a in args if a not in _PLAN_FLAGS]
    shown = [a for a in args if a not in ("-m", "--multirun")]  # the plan's command, as typed
    modes = sorted({_HYDRA_MODES[a.split("=")[0]] for a in args if a.split("=")[0] in _HYDRA_MODES})
    if len(modes) > 1:
        return fail(f"{' and '.join(modes)} cannot be combined -- fix: give one (`rag-bench run --cfg job "
                     "chunker=fixed` prints the config of one cell of a grid; `-m` runs the grid)")
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from rag_bench.cluster.preset import with_cluster_launcher
    from rag_bench.fast import in_hydra as compose_in_hydra
    from rag_bench.fast import launcher_overrides
    from rag_bench.runner.config import check_group_overrides, check_hydra_targets
    from rag_bench.runner.hydra_app import PastHydra
    from rag_bench.runner.hydra_app import main as hydra_main
    from rag_bench.search.base import spelled_now
    from rag_bench.tracking.mlflow_tracker import finish_all

    args, notes = spelled_now(args)  # search.mode=halving -> search=halving, search.budget_* -> budget.*
    for note in notes:
        print(f"note: {note}", file=sys.stderr, flush=True)
    args = with_cluster_launcher(args)  # +cluster=slurm runs on hydra/launcher=slurm
    args = launcher_overrides(args)  # RAG_BENCH_STOCK_HYDRA=1: Hydra's basic launcher
    # Make Hydra raise instead of printing and exiting 1, so bad config exits 2 here.
    os.environ["HYDRA_FULL_ERROR"] = "1"
    sys.argv = ["rag-bench run", *args]
    forget_created_experiments()
    try:
        check_hydra_targets(args)
        check_group_overrides(args)
        if planning:
            return _plan(args, shown, exact)
        with compose_in_hydra():
            hydra_main()
    except (RagBenchError, PastHydra) as exc:
        finish_all(ok=False)
        own = exc.error if isinstance(exc, PastHydra) else exc
        if not isinstance(own, ComponentError):  # a component's error points at the log in that folder
            remove_created_experiments()
        return fail(own)
    except (HydraException, OmegaConfBaseException) as exc:
        finish_all(ok=False)
        remove_created_experiments()
        if missing := missing_option(exc):
            return fail(missing)
        return fail(f"configuration: {config_message(exc, args)}\n  -- fix: see `rag-bench run --help` for groups "
                     "and options (`rag-bench run --cfg job` prints every key), conf/ for the files")
    except BaseException:
        finish_all(ok=False)
        raise
    return 0


def _plan(args: list[str], shown: list[str], exact: bool = False) -> int:
    """``rag-bench run [-m] OVERRIDES --plan[=exact]``: the plan printed (docs/search.md, "A plan before the run")."""
    from rag_bench.search.plan import render
    from rag_bench.search.plan_probe import make

    given = [a for a in args if a not in ("-m", "--multirun")]
    plan, prices, rates = make(given, "rag-bench run -m " + " ".join(shown) + (" --plan=exact" if exact else " --plan"),
                               exact=exact)
    print(render(plan, prices, rates), flush=True)
    return 0


_PLAN_FLAGS = ("--plan", "--plan=exact")

# Hydra's mutually exclusive modes of `run` (Hydra raises a bare ValueError when two are given).
_HYDRA_MODES = {"-r": "--run", "--run": "--run", "-m": "--multirun", "--multirun": "--multirun", "-c": "--cfg",
                "--cfg": "--cfg", "-i": "--info", "--info": "--info", "-sc": "--shell-completion",
                "--shell-completion": "--shell-completion"}


COMMAND = Command("run", "[hydra overrides]", "evaluate one cell; with -m a sweep; --plan: what it would compute, "
                  "cost and take, changing nothing; --plan=exact: every prompt counted exactly, missing vectors "
                  "embedded in memory (rag-bench run --help)", run)
