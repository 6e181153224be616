"""Successive halving against the full grid, side by side in one run (issue 44; docs/search.md).

For one grid (an experiment preset, e.g. ``+experiment=demo`` or ``+experiment=chunking_overnight``)
on one dataset, two sweeps in fresh output folders, each in its own ``rag-bench run`` process with
``tracking=none``:

  grid     ``search.mode=grid``: every cell on every question;
  halving  ``search.mode=halving`` (``--rounds``, ``--alpha``): rounds on growing question subsets,
           the cells outside the round's model confidence set pruned.

Printed: the cell-questions each computed (grid: cells x questions; halving: the sum over its
rounds of the cells run x that round's questions, from its summary file), their ratio; whether
halving's best cell (the best of its finished cells by the primary measure) is inside the full
grid's set of cells not significantly worse than the grid's best (rag_bench.reporting.verdict: the
95% model confidence set on all questions); and whether every cell halving finished has the same
metrics.json figures as the grid's cell of the same id. Wall times are printed too, but the second
arm runs with the embedding cache the first filled (cell-questions, not seconds, is the measure).

    python benchmarks/search.py                                   # +experiment=demo on the demo set
    python benchmarks/search.py --preset chunking_overnight       # 351 cells
    python benchmarks/search.py --dataset ../shared/datasets/squad2-normans
    python benchmarks/search.py --set pipeline.k=1,2,10              # the demo grid with small k
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from rag_bench.cells import experiment_cells  # noqa: E402
from rag_bench.reporting.verdict import verdict  # noqa: E402

# metrics.json parts that describe the run, not its figures: timings and the caches' state
# (the second arm finds the first's embeddings cached)
RUN_KEYS = {"latency", "warnings", "search", "embedding_requests", "embedding_cache_hits", "embeddings_computed",
            "generations_cached"}


def figures(metrics: object) -> object:
    """``metrics`` without timings (keys ending ``_s``/``_ms``) and :data:`RUN_KEYS`."""
    if isinstance(metrics, dict):
        return {k: figures(v) for k, v in metrics.items()
                if k not in RUN_KEYS and not k.endswith(("_s", "_ms"))}
    return metrics


def sweep(out: Path, preset: str, dataset: str | None, extra: list[str]) -> float:
    cmd = [sys.executable, "-m", "rag_bench.cli", "run", "-m", f"+experiment={preset}", "tracking=none",
           f"output.root={out}", *([f"dataset.path={dataset}"] if dataset else []), *extra]
    started = time.perf_counter()
    done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"failed ({done.returncode}): {' '.join(cmd)}\n{done.stderr[-3000:]}")
    return time.perf_counter() - started


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="demo", help="experiment preset (conf/experiment/<name>.yaml)")
    ap.add_argument("--dataset", default=None, help="dataset.path (default: the demo set)")
    ap.add_argument("--rounds", default="[0.25,0.5,1]")
    ap.add_argument("--alpha", default="0.05")
    ap.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUES",
                    help="further overrides for both arms (e.g. pipeline.k=1,2,10: an axis of the preset replaced)")
    ap.add_argument("--keep", default=None, help="keep the output folders here (default: a temporary folder)")
    args = ap.parse_args()
    base = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="rag_bench-search-"))
    grid_s = sweep(base / "grid", args.preset, args.dataset, [*args.set, "search.mode=grid"])
    halving_s = sweep(base / "halving", args.preset, args.dataset,
                      [*args.set, "search.mode=halving", f"search.rounds={args.rounds}", f"search.alpha={args.alpha}"])
    grid_dir = next(p for p in (base / "grid").iterdir() if p.is_dir() and not p.name.startswith("."))
    halving_dir = base / "halving" / grid_dir.name
    grid_cells = experiment_cells(grid_dir, records=False)
    summary = json.loads(next((halving_dir / ".hydra").glob("search-*.json")).read_text())
    questions = summary["questions"]
    grid_cq = len(grid_cells) * questions
    halving_cq = summary["cell_questions"]
    full = verdict(grid_cells)
    finished = experiment_cells(halving_dir, records=False)
    best = verdict(finished).best if len(finished) > 0 else None
    by_id = {c.cell_id: c for c in grid_cells}
    same = sum(figures(c.metrics) == figures(by_id[c.cell_id].metrics) for c in finished if c.cell_id in by_id)
    pruned = summary["pruned"]
    marked = sum("search" in json.loads((halving_dir / cid / "metrics.json").read_text()) for cid in pruned)

    print(f"grid: +experiment={args.preset} {' '.join(args.set)} on {args.dataset or 'the demo set'}: {len(grid_cells)} cells x "
          f"{questions} questions; halving rounds {args.rounds}, alpha {args.alpha} "
          f"({summary['alpha_per_round']:g} per pruning round), measure {summary['measure']}")
    for r in summary["rounds"]:
        print(f"  halving round {r['round'] + 1}: {r['fraction']:.0%} ({r['questions']} questions), {r['cells']} cells, "
              f"kept {r['kept']}, computed {r['computed']} cells = {r['computed'] * r['questions']} cell-questions")
    print(f"cell-questions: grid {grid_cq}, halving {halving_cq}, ratio {halving_cq / grid_cq:.1%}")
    print(f"wall: grid {grid_s:.1f} s (run first), halving {halving_s:.1f} s (run second, with the caches the first filled)")
    print(f"full grid: best {full.best_name} ({full.best}), {len(full.close)} of {full.cells} cells not "
          f"significantly worse")
    print(f"halving: {len(finished)} cells finished, {len(pruned)} pruned ({marked} marked in metrics.json); "
          f"best {best} {'INSIDE' if best in full.close else 'OUTSIDE'} the full grid's set"
          f"{' (the same cell as the grid best)' if best == full.best else ''}")
    print(f"finished cells with the grid's figures: {same} of {len(finished)}")
    print(f"outputs: {base}")


if __name__ == "__main__":
    main()
