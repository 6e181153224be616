"""Does a drafted question set rank retrieval configurations as people's set does? The same grid
(chunker x retriever x k: 18 cells, the extractive stand-in generator, tracking=none) swept on both
sets over the same documents, then ``rag-bench agree`` on the two experiments (docs/agreement.md).

    # people's set against a drafted one (both dataset folders, the same docs/)
    python benchmarks/drafted_agreement.py PEOPLE_DIR DRAFTED_DIR --out /tmp/agreement
    # split-half reliability of people's set: its questions split in two halves at random (the same
    # share of unanswerable questions in each, seed 0), each half swept as a set of its own
    python benchmarks/drafted_agreement.py ../shared/datasets/squad2-normans --split-half --out /tmp/halves

The split-half figure is the ceiling a drafted set can be held to: two halves of one set written by
the same people disagree this much by sampling alone (and each half has half the questions, so the
tau of the whole set against another is, if anything, higher). ``agree`` is printed for each
experiment's primary measure and for retrieval/ndcg@10 (the ranking alone: k moves nothing there);
``--by`` names others (abstention/correct_refusal_rate: the refusal side).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

GRID = ["chunker=fixed,section,sentence", "retriever=bm25,dense,hybrid", "pipeline.k=3,5", "generator=extractive"]
BY = ["", "retrieval/ndcg@10"]  # "": each experiment's primary measure


def split_half(dataset: Path, out: Path, seed: int = 0) -> tuple[Path, Path]:
    """Two copies of ``dataset`` (documents byte for byte), each with half of its questions: shuffled
    with ``seed`` within answerable and unanswerable questions, dealt alternately."""
    lines = [line for line in (dataset / "questions.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
    halves: tuple[list[str], list[str]] = ([], [])
    rng = random.Random(seed)
    for answerable in (True, False):
        group = [line for line in lines if bool(json.loads(line).get("answerable", True)) is answerable]
        rng.shuffle(group)
        for i, line in enumerate(group):
            halves[i % 2].append(line)
    roots = []
    for name, half in zip(("half_a", "half_b"), halves):
        root = out / name
        shutil.rmtree(root, ignore_errors=True)
        shutil.copytree(dataset, root, ignore=shutil.ignore_patterns("labels.jsonl", "questions.jsonl"))
        (root / "questions.jsonl").write_text("\n".join(half) + "\n", encoding="utf-8")
        roots.append(root)
    return roots[0], roots[1]


def sweep(dataset: Path, out: Path, name: str, grid: list[str], env: dict[str, str]) -> Path:
    cmd = [sys.executable, "-P", "-m", "rag_bench.cli", "run", "-m", *grid, f"dataset.path={dataset.resolve()}",
           "tracking=none", f"output.root={out}", f"experiment.name={name}"]
    started = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL, cwd=out)
    print(f"swept {name}: {dataset} ({time.perf_counter() - started:.0f} s)", flush=True)
    return out / name


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("people", type=Path, help="people's dataset folder")
    p.add_argument("drafted", type=Path, nargs="?", help="the drafted dataset folder (same documents)")
    p.add_argument("--split-half", action="store_true", help="instead of a drafted set: people's set split in two")
    p.add_argument("--seed", type=int, default=0, help="the split's seed")
    p.add_argument("--out", type=Path, required=True, help="work folder (datasets, experiments, caches)")
    p.add_argument("--grid", nargs="+", default=GRID, help=f"the sweep's overrides (default: {' '.join(GRID)})")
    p.add_argument("--by", nargs="+", default=BY, help="the measures agree ranks by, one run each ('' : each "
                   "experiment's primary; e.g. abstention/correct_refusal_rate for the refusal side; default: the "
                   "primary and retrieval/ndcg@10)")
    a = p.parse_args()
    if a.split_half == (a.drafted is not None):
        p.error("give a drafted dataset folder, or --split-half (not both)")
    out = a.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "RAG_BENCH_CACHE": str(out / "cache"), "TQDM_DISABLE": "1"}
    env.pop("MLFLOW_TRACKING_URI", None)
    if a.split_half:
        first, second = split_half(a.people, out, a.seed)
        names = ("half_a", "half_b")
    else:
        first, second = a.people, a.drafted
        names = ("people", "drafted")
    exp_a = sweep(first, out / "experiments", names[0], a.grid, env)
    exp_b = sweep(second, out / "experiments", names[1], a.grid, env)
    code = 0
    for by in a.by:
        print(f"\n$ rag-bench agree {exp_a} {exp_b}" + (f" --by {by}" if by else ""), flush=True)
        done = subprocess.run([sys.executable, "-P", "-m", "rag_bench.cli", "agree", str(exp_a), str(exp_b),
                               *(["--by", by] if by else [])], env=env, cwd=out)
        code = code or done.returncode
    return code


if __name__ == "__main__":
    sys.exit(main())
