"""Each scorer's share of one cold cell's CPU (issue 57: no scorer above 10 % of a cell).

One cell is run by ``run_cell`` in a fresh Python process (``--repeats N`` processes), from an
empty cache folder (``RAG_BENCH_CACHE``: nothing embedded, generated or stored before;
``tracking=none``), so every in-process memo starts empty. Each scorer's ``score`` is timed in CPU
seconds (``time.process_time``, every thread of the process), as are the relevance grading and
``run_cell`` as a whole. Printed per scorer: its CPU milliseconds (the fewest of the runs: a shared
machine's load only adds) and its share of the cell's CPU, the median of the runs' shares (each
run's scorer over the same run's cell), then each run's share. ``--against REF`` runs the same cell
with another checkout's code (a git ref, checked out as a worktree and removed after, or a folder
holding rag_bench), the two arms taking turns (ABBA), side by side. ``--cprofile`` runs the cell
once more under cProfile and prints the functions matching its filter.

    python benchmarks/profile_cell.py                                   # the demo set's default cell
    python benchmarks/profile_cell.py --squad                           # squad2-normans, the same cell
    python benchmarks/profile_cell.py --squad --repeats 7 --against 4b355d7   # before and after, one run
    python benchmarks/profile_cell.py --squad chunker=fixed retriever=hybrid pipeline.k=10
    python benchmarks/profile_cell.py --cprofile claims                 # where the claims scorer spends

The cell is the default config's (chunker=section, retriever=bm25, reranker=none,
generator=extractive) unless overrides say otherwise: a retriever that loads a model (dense,
hybrid) adds seconds of loading to the cell, which shrinks every scorer's share.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SQUAD = REPO.parent / "shared" / "datasets" / "squad2-normans"
CELL = "run_cell"
GRADE = "(grading)"


def child(overrides: list[str], out: Path, profile: str) -> None:
    """In this (fresh) process: compose the cell, time each scorer and the cell, print JSON (the
    rag_bench its PYTHONPATH names)."""
    from hydra import compose, initialize_config_dir

    from rag_bench.evaluation import evaluation as evaluation_module
    from rag_bench.evaluation import measures
    from rag_bench.runner.config import CONF_DIR, register_configs
    from rag_bench.runner.main import run_cell

    seconds: dict[str, float] = {}

    def timed(name: str, fn):  # type: ignore[no-untyped-def]
        def wrapper(*args, **kwargs):  # type: ignore[no-untyped-def]
            t0 = time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                seconds[name] = seconds.get(name, 0.0) + time.process_time() - t0
        return wrapper

    for name in measures.SCORERS:
        scorer = measures.SCORERS.get(name)
        object.__setattr__(scorer, "score", timed(name, scorer.score))
    evaluation_module.grade = timed(GRADE, evaluation_module.grade)

    register_configs()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose("config", overrides=["tracking=none", f"output.root={out}", "experiment.name=profile",
                                           *overrides])
    if profile:
        import cProfile
        import pstats

        prof = cProfile.Profile()
        prof.enable()
        run_cell(cfg)
        prof.disable()
        stats = pstats.Stats(prof, stream=sys.stderr)
        stats.sort_stats("cumulative").print_stats(profile, 40)
        stats.sort_stats("tottime").print_stats(30)
        return
    t0 = time.process_time()
    run_cell(cfg)
    seconds[CELL] = time.process_time() - t0
    print(json.dumps(seconds))


def once(overrides: list[str], tree: Path = REPO, profile: str = "") -> dict[str, float]:
    """One cold cell in a fresh process with an empty cache folder and the rag_bench of ``tree``:
    CPU seconds by scorer and cell."""
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "RAG_BENCH_CACHE": str(Path(tmp) / "cache"), "TQDM_DISABLE": "1",
               "PYTHONPATH": str(tree)}
        env.pop("MLFLOW_TRACKING_URI", None)
        cmd = [sys.executable, "-P", str(Path(__file__).resolve()), "--child", str(Path(tmp) / "out"),
               *(["--cprofile", profile] if profile else []), *overrides]
        done = subprocess.run(cmd, env=env, capture_output=not profile, text=True, cwd=tmp)
        if done.returncode != 0:
            sys.exit(f"failed: {' '.join(cmd)}\n{(done.stderr or '')[-3000:]}")
        if profile:
            return {}
        return {k: float(v) for k, v in json.loads(done.stdout.strip().splitlines()[-1]).items()}


def table(runs: list[dict[str, float]]) -> dict[str, tuple[float, float, list[float]]]:
    """Per scorer (and the cell): the fewest CPU seconds of the runs, the median of the runs' shares
    of their cell, and each run's share."""
    out = {}
    for name in runs[0]:
        shares = [r.get(name, 0.0) / r[CELL] for r in runs]
        out[name] = (min(r.get(name, 0.0) for r in runs), statistics.median(shares), shares)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("overrides", nargs="*", help="config overrides of the cell (chunker=fixed retriever=hybrid ...)")
    p.add_argument("--squad", action="store_true", help=f"the cell on {SQUAD} (issue 57's grid) instead of the demo")
    p.add_argument("--repeats", type=int, default=5, help="fresh processes per arm")
    p.add_argument("--against", metavar="REF", help="also the same cell with another checkout (a git ref or a "
                   "folder holding rag_bench), the arms in turn")
    p.add_argument("--cprofile", metavar="FILTER", default="",
                   help="also run once under cProfile and print the functions matching FILTER (a regex of pstats)")
    p.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.child is not None:
        child(a.overrides, a.child, a.cprofile)
        return
    overrides = list(a.overrides)
    if a.squad:
        if not (SQUAD / "questions.jsonl").is_file():
            sys.exit(f"--squad reads {SQUAD}, which is not there -- fix: run from a checkout beside ../shared")
        overrides.insert(0, f"dataset.path={SQUAD}")
    arms = {"this": (REPO, str(REPO))}
    made: Path | None = None
    work = Path(tempfile.mkdtemp(prefix="profile-cell-"))
    try:
        if a.against:
            from sweep import checkout  # benchmarks/sweep.py: a ref as a worktree, or a source tree

            tree, label, fresh = checkout(a.against, work)
            made = tree if fresh else None
            arms["against"] = (tree, label)
        print(f"cell: {' '.join(overrides) or '(defaults)'}, tracking=none, cold (fresh process, empty cache), "
              f"{a.repeats} runs per arm" + ("" if len(arms) == 1 else ", arms in turn (ABBA)"), flush=True)
        for arm, (tree, label) in arms.items():
            print(f"  {arm}: {label}", flush=True)
        runs: dict[str, list[dict[str, float]]] = {arm: [] for arm in arms}
        order = list(arms)
        for i in range(a.repeats):
            for arm in order if i % 2 == 0 else order[::-1]:
                runs[arm].append(once(overrides, arms[arm][0]))
        tables = {arm: table(r) for arm, r in runs.items()}
        head = "".join(f" | {arm + ': CPU ms':>16} {'share':>6}" for arm in arms)
        print(f"{'scorer':<20}{head}   (each run's share)")
        first = tables[order[0]]
        for name in sorted((n for n in first if n != CELL), key=lambda n: -first[n][0]):
            cols = "".join(f" | {1000 * t[name][0]:16.1f} {t[name][1]:6.1%}" for t in tables.values())
            each = "; ".join(" ".join(f"{x:.1%}" for x in t[name][2]) for t in tables.values())
            print(f"{name:<20}{cols}   ({each})")
        scorers = {arm: [sum(v for k, v in r.items() if k not in (CELL, GRADE)) for r in runs[arm]] for arm in arms}
        cols = "".join(f" | {1000 * min(scorers[arm]):16.1f} "
                       f"{statistics.median(s / r[CELL] for s, r in zip(scorers[arm], runs[arm])):6.1%}" for arm in arms)
        print(f"{'scorers, all':<20}{cols}")
        cols = "".join(f" | {1000 * t[CELL][0]:16.1f} {'100%':>6}" for t in tables.values())
        each = "; ".join(" ".join(f"{1000 * r[CELL]:.0f}" for r in runs[arm]) for arm in arms)
        print(f"{'cell (run_cell)':<20}{cols}   (each run's cell CPU ms: {each})")
        if a.cprofile:
            once(overrides, REPO, a.cprofile)
    finally:
        if made is not None:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(made)], capture_output=True)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
