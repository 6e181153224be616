"""Behaviour unchanged, measured: the same >= 90-cell grid run by two checkouts, every shared metric
and records.parquet column of every cell compared (issue 26, the evaluation layer).

    # the grid with the code of a checkout (PYTHONPATH picks it; rag_bench.__file__ is printed)
    PYTHONPATH=/tmp/before python benchmarks/same_cells.py run /tmp/before-out
    python benchmarks/same_cells.py run /tmp/after-out
    python benchmarks/same_cells.py compare /tmp/before-out /tmp/after-out
    python benchmarks/same_cells.py run --small /tmp/after-out   # grid S and the external cells (19 cells)

The grid (demo dataset, tracking none, 104 cells in 2 invocations):
  A  chunker fixed,section,parent_child x retriever bm25,dense,hybrid x reranker none,dense
     x k 3,5 x generator extractive,none, eval.unit=both                               (72 cells)
  B  retriever dense x index hnsw,ivf_nl16_np4 x chunker section,parent_child x k 3,5
     x pipeline.expand_parents false,true x eval.unit chunk,document                      (32 cells)
or, with ``run --small`` (a quick check of a change to one scorer's kernel, issue 57), instead of A and B:
  S  chunker fixed,section,parent_child x retriever bm25,dense x k 3,5, eval.unit=both    (12 cells)
and external systems through ``rag-bench evaluate`` (issue 39), 7 cells:
  E  examples/app_outputs/kettleby_app.jsonl x pipeline.k 3,5 x eval.unit chunk,both    (4 cells)
  T  a TREC run of document ids made from the same file, eval.unit chunk,document       (2 cells)
  R  the E cell k=5, unit chunk exported as a ragas EvaluationDataset (export --format ragas)      (1 cell)
A measure or records column only the second checkout has (a new measure) is listed as added, not
compared; one only the first has is a difference. Metrics are equal when both are NaN or
|a - b| <= 1e-12; timings (``*_s``, ``*_ms``, latency and
throughput figures) are left out, as are the records columns holding them.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import yaml

GRIDS = {
    "A": ["chunker=fixed,section,parent_child", "retriever=bm25,dense,hybrid", "reranker=none,dense",
          "pipeline.k=3,5", "generator=extractive,none", "eval.unit=both"],
    "B": ["retriever=dense", "index=hnsw,ivf_nl16_np4", "chunker=section,parent_child", "pipeline.k=3,5",
          "pipeline.expand_parents=false,true", "eval.unit=chunk,document"],
}
SMALL = {"S": ["chunker=fixed,section,parent_child", "retriever=bm25,dense", "pipeline.k=3,5", "eval.unit=both"]}
TIMING = ("_s", "_ms", "latency", "per_s", "seconds", "wall", "qps", "throughput")


# Not what the code computes: the dataset folder's fingerprint (a file added beside the questions,
# such as labels.jsonl, changes it) and the cost figures that depend on which cell of the sweep ran
# first (in-process sharing and the persistent caches: embedding_requests, cache hits).
NOT_COMPARED = ("dataset_fingerprint", "cost/")


# Measures renamed (issue 39: one name per thing), before -> after, compared under the new name.
RENAMED = {"context_precision@": "passage_precision@"}


def renamed(name: str) -> str:
    for old, new in RENAMED.items():
        name = name.replace(old, new)
    return name


def timing(name: str) -> bool:
    if name.startswith(NOT_COMPARED):
        return True
    leaf = name.split("/")[-1].split(".")[-1]
    return any(leaf.endswith(t) or t in leaf for t in TIMING)


def run(out: Path, grids: dict[str, list[str]] = GRIDS) -> None:
    out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "RAG_BENCH_CACHE": str(out / "cache"), "TQDM_DISABLE": "1"}
    env.pop("MLFLOW_TRACKING_URI", None)
    # The code the commands run: PYTHONPATH's checkout, else the installed one -- never the current
    # folder's (python -P: `-m` would put it first on sys.path).
    where = subprocess.run([sys.executable, "-P", "-c", "import rag_bench; print(rag_bench.__file__)"], env=env,
                           capture_output=True, text=True, check=True, cwd=out).stdout.strip()
    print("rag_bench:", where, flush=True)
    for name, overrides in grids.items():
        cmd = [sys.executable, "-P", "-m", "rag_bench.cli", "run", "-m", *overrides, "tracking=none",
               f"output.root={out}", f"experiment.name=grid{name}"]
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=out)
        if done.returncode != 0:
            sys.exit(f"failed: {' '.join(cmd)}\n{done.stderr[-3000:]}")
    external(out, env)
    print("cells:", len(cells(out)))


APP = Path(__file__).resolve().parents[1] / "examples" / "app_outputs" / "kettleby_app.jsonl"


def _cli(args: list[str], env: dict[str, str]) -> str:
    cmd = [sys.executable, "-P", "-m", "rag_bench.cli", *args]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=Path(env["RAG_BENCH_CACHE"]).parent)
    if done.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{done.stderr[-3000:]}")
    return done.stdout


def external(out: Path, env: dict[str, str]) -> None:
    """The external-system cells (E, T, R of the module docstring)."""
    demo = Path(__file__).resolve().parents[1] / "rag_bench" / "datasets" / "kettleby"
    common = ["--dataset", str(demo), "tracking=none", f"output.root={out}"]
    for k in (3, 5):
        for unit in ("chunk", "both"):
            _cli(["evaluate", str(APP), *common, f"pipeline.k={k}", f"eval.unit={unit}", "experiment.name=gridE",
                  "--name", "app"], env)
    # A TREC run of document ids: each line's passages' documents in order, first occurrence kept.
    lines = []
    for row in (json.loads(x) for x in APP.read_text().splitlines() if x.strip()):
        docs = list(dict.fromkeys(p["doc_id"] for p in row["retrieved"] if "doc_id" in p))
        lines += [f"{row['id']} Q0 {d} {r} {len(docs) - r + 1}.5 app" for r, d in enumerate(docs, start=1)]
    trec = out / "app.trec"
    trec.write_text("\n".join(lines) + "\n")
    for unit in ("chunk", "document"):
        _cli(["evaluate", "--trec", str(trec), *common, f"eval.unit={unit}", "experiment.name=gridT",
              "--name", "app_trec"], env)
    first = next(d.parent for d in sorted((out / "gridE").glob("*/DONE"))
                 if yaml.safe_load((d.parent / "config.yaml").read_text())["pipeline"]["k"] == 5
                 and yaml.safe_load((d.parent / "config.yaml").read_text())["eval"]["unit"] == "chunk")
    ragas = out / "app.ragas.jsonl"
    _cli(["export", str(first), "--format", "ragas", "--out", str(ragas)], env)
    _cli(["evaluate", "--ragas", str(ragas), *common, "experiment.name=gridR", "--name", "app_ragas"], env)


COMPONENTS = ("chunker", "embedder", "index", "retriever", "reranker", "generator", "judge")


def cells(out: Path) -> dict[str, Path]:
    """The finished cells under ``out`` keyed by grid and what they compute (each component's name,
    pipeline.* and eval.*): a new config key elsewhere, or another checkout's dataset path, changes
    the cell id only."""
    found = {}
    for done in sorted(out.glob("grid*/*/DONE")):
        cfg = yaml.safe_load((done.parent / "config.yaml").read_text())
        evaluation = {k: v for k, v in cfg["eval"].items() if not (k == "scorers" and v in ("all", ["all"]))}
        what = {**{c: cfg[c]["name"] for c in COMPONENTS}, "pipeline": cfg["pipeline"], "eval": evaluation,
                "system": (cfg.get("system") or {}).get("format")}
        found[f"{done.parent.parent.name} {json.dumps(what, sort_keys=True)}"] = done.parent
    return found


def flat(tree: object, prefix: str = "") -> dict[str, object]:
    if isinstance(tree, dict):
        out: dict[str, object] = {}
        for k, v in tree.items():
            out.update(flat(v, f"{prefix}{k}/"))
        return out
    return {prefix.rstrip("/"): tree}


def _family(name: str) -> str:
    return name.split("@")[0] + ("@k" if "@" in name else "")


def same(a: object, b: object) -> bool:
    if isinstance(a, float | int) and isinstance(b, float | int) and not isinstance(a, bool):
        fa, fb = float(a), float(b)
        return (math.isnan(fa) and math.isnan(fb)) or abs(fa - fb) <= 1e-12
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if hasattr(a, "tolist") and hasattr(b, "tolist"):
        return same(a.tolist(), b.tolist())
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return bool(a == b) or (a is None and b is None)


def compare(before: Path, after: Path) -> int:
    a, b = cells(before), cells(after)
    print(f"cells: before {len(a)}, after {len(b)}, shared {len(a.keys() & b.keys())}")
    bad = sorted(f"cell only in {'before' if key in a else 'after'}: {key}" for key in a.keys() ^ b.keys())
    metrics = columns = 0
    added: set[str] = set()
    for key in sorted(a.keys() & b.keys()):
        cell = f"{a[key].parent.name}/{a[key].name}"
        ma = {renamed(k): v for k, v in flat(json.loads((a[key] / "metrics.json").read_text())).items() if not timing(k)}
        mb = {k: v for k, v in flat(json.loads((b[key] / "metrics.json").read_text())).items() if not timing(k)}
        for k in sorted(ma.keys() & mb.keys()):
            metrics += 1
            if not same(ma[k], mb[k]):
                bad.append(f"{cell} metrics {k}: {ma[k]!r} != {mb[k]!r}")
        for k in sorted(ma.keys() - mb.keys()):
            bad.append(f"{cell} metrics {k}: only before")
        added.update("measures (the block describing each key)" if k.startswith("measures/") else _family(k)
                     for k in mb.keys() - ma.keys())
        ra, rb = pd.read_parquet(a[key] / "records.parquet"), pd.read_parquet(b[key] / "records.parquet")
        ra = ra.rename(columns=renamed)
        if [c for c in rb.columns if c in ra.columns] != list(ra.columns):
            bad.append(f"{cell} records columns: {list(ra.columns)} are not in {list(rb.columns)} in order")
        added.update(f"records {_family(c)}" for c in rb.columns if c not in ra.columns)
        for col in [c for c in ra.columns if c in rb.columns and not timing(c)]:
            columns += 1
            if not same(ra[col].tolist(), rb[col].tolist()):
                bad.append(f"{cell} records column {col} differs")
        for trec in sorted(p.name for p in a[key].glob("*.trec")):  # run files are tagged with the cell id
            if (a[key] / trec).read_text() != (b[key] / trec).read_text().replace(b[key].name, a[key].name):
                bad.append(f"{cell} {trec} differs")
    print(f"compared {metrics} metrics and {columns} records columns; {len(bad)} differences")
    print("added after (new measures, not compared):", ", ".join(sorted(added)) or "none")
    for line in sorted(bad, key=lambda b: " " not in b)[:50]:  # differences in shared cells first
        print(" ", line)
    return 1 if bad else 0


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("out", type=Path)
    r.add_argument("--small", action="store_true", help="grid S (12 cells) instead of A and B (104)")
    c = sub.add_parser("compare")
    c.add_argument("before", type=Path)
    c.add_argument("after", type=Path)
    args = p.parse_args()
    if args.cmd == "run":
        run(args.out, SMALL if args.small else GRIDS)
    else:
        sys.exit(compare(args.before, args.after))


if __name__ == "__main__":
    main()
