"""Each scorer's share of one cold cell's CPU (issue 57: no scorer above 10 % of a cell).

One cell is run by ``run_cell`` in a fresh Python process (``--repeats N`` processes, the best
kept: a shared machine's load only adds), from an empty cache folder (``RAG_BENCH_CACHE``: nothing
embedded, generated or stored before; ``tracking=none``), so every in-process memo starts empty.
Each scorer's ``score`` is timed in CPU seconds (``time.process_time``, every thread of the
process), as are the relevance grading and ``run_cell`` as a whole; printed per scorer: its CPU
seconds and its share of the cell's, best of the runs (each figure its own minimum; the cell's
too). ``--cprofile`` runs the cell once more under cProfile and prints the functions with the most
own time within the scorers.

    python benchmarks/profile_cell.py                                   # the demo set's default cell
    python benchmarks/profile_cell.py --squad                           # squad2-normans, the same cell
    python benchmarks/profile_cell.py --squad --repeats 5 chunker=fixed retriever=hybrid pipeline.k=10
    python benchmarks/profile_cell.py --cprofile claims                 # where the claims scorer spends

The cell is the default config's (chunker=section, retriever=bm25, reranker=none,
generator=extractive) unless overrides say otherwise: a retriever that loads a model (dense,
hybrid) adds seconds of loading to the cell, which shrinks every scorer's share.
"""

from __future__ import annotations

import argparse
import json
import os
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
    """In this (fresh) process: compose the cell, time each scorer and the cell, print JSON."""
    sys.path.insert(0, str(REPO))
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


def once(overrides: list[str], profile: str = "") -> dict[str, float]:
    """One cold cell in a fresh process with an empty cache folder: CPU seconds by scorer and cell."""
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "RAG_BENCH_CACHE": str(Path(tmp) / "cache"), "TQDM_DISABLE": "1",
               "PYTHONPATH": str(REPO)}
        env.pop("MLFLOW_TRACKING_URI", None)
        cmd = [sys.executable, "-P", str(Path(__file__).resolve()), "--child", str(Path(tmp) / "out"),
               *(["--cprofile", profile] if profile else []), *overrides]
        done = subprocess.run(cmd, env=env, capture_output=not profile, text=True, cwd=tmp)
        if done.returncode != 0:
            sys.exit(f"failed: {' '.join(cmd)}\n{(done.stderr or '')[-3000:]}")
        if profile:
            return {}
        return {k: float(v) for k, v in json.loads(done.stdout.strip().splitlines()[-1]).items()}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("overrides", nargs="*", help="config overrides of the cell (chunker=fixed retriever=hybrid ...)")
    p.add_argument("--squad", action="store_true", help=f"the cell on {SQUAD} (issue 57's grid) instead of the demo")
    p.add_argument("--repeats", type=int, default=3, help="fresh processes; the best of each figure is kept")
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
    import rag_bench  # noqa: F401 -- which checkout is measured

    print(f"cell: {' '.join(overrides) or '(defaults)'}, tracking=none, cold (fresh process, empty cache), "
          f"best of {a.repeats}; rag_bench {Path(rag_bench.__file__).parent}", flush=True)
    runs = [once(overrides) for _ in range(a.repeats)]
    best = {k: min(r.get(k, 0.0) for r in runs) for k in runs[0]}
    cell = best.pop(CELL)
    print(f"{'scorer':<20} {'CPU ms':>9} {'share':>7}   (each run's share: ...)")
    for name, s in sorted(best.items(), key=lambda kv: -kv[1]):
        each = " ".join(f"{r.get(name, 0.0) / r[CELL]:.1%}" for r in runs)
        print(f"{name:<20} {1000 * s:9.1f} {s / cell:7.1%}   ({each})")
    print(f"{'scorers, all':<20} {1000 * sum(v for k, v in best.items() if k != GRADE):9.1f} "
          f"{sum(v for k, v in best.items() if k != GRADE) / cell:7.1%}")
    print(f"{'cell (run_cell)':<20} {1000 * cell:9.1f}  100.0%   (each run: "
          f"{' '.join(f'{1000 * r[CELL]:.0f}' for r in runs)} ms)")
    if a.cprofile:
        once(overrides, a.cprofile)


if __name__ == "__main__":
    main()
