"""How much a sweep costs against the distinct work it contains (issue: sweeps that scale).

A grid of 4 chunkers x 3 retrievers (bm25, dense, hybrid) x 2 rerankers (none, dense) x 3 values
of k = 72 cells, extractive generator, over the demo dataset and over a synthetic corpus
(>= 20,000 chunks per chunker, generated here). Printed from one run, per corpus:

  naive  every cell built from scratch: RAG_BENCH_SHARE=0 (no in-process sharing of chunks,
         vectors, indexes, rankings) and embedder.cache=false (no persistent cache). One process,
         so the model loads once -- the naive figure is a lower bound. With --naive-sample N only
         N cells (one per retriever x reranker, first chunker, first k, repeated) are run and the
         time is scaled to 72 cells; the output says so.
  sweep  `rag-bench run -m <grid>` with an empty cache folder (cold).
  floor  the distinct work alone, timed in this process: load the model and embed each distinct
         text once (every chunker's searchable chunks + the questions), score each distinct
         (question, chunk) rerank pair once (cosine of the cached vectors), generate each
         distinct (question, context) once with the extractive generator.
  warm   the same grid again into a fresh output folder with the caches the sweep filled (with
         --repeats N, N times and the fastest kept: a ~7 s run moves by a second on a shared machine).

Tracking is off (tracking=none) in every arm: MLflow logging is I/O, not shared work. Each arm
runs in a fresh `rag-bench` process; wall time includes Python start-up and Hydra.

Then the fixed cost of a cell (what every cell pays beyond the distinct work: composing its
config, scoring, bootstrap CIs, answers served from the cache, writing the folder, tracking),
warm, with tracking=none both ways (the speed wing rag_bench/fast/ on, and stock Hydra with
RAG_BENCH_STOCK_HYDRA=1), tracking=mlflow (cells finished in the sweep's background process,
rag_bench/tracking/background.py) and tracking=mlflow with tracking.background=false (written and
logged in the sweep's own process, as before):

  per-cell overhead = (warm(grid) - warm(grid at the first k only)) / (cells added by the other k)

printed in wall time and, from the same runs, in CPU time (user + system of every thread of the
`rag-bench` process and of the children it waited for). The CPU figure is the larger (numpy's BLAS
threads work and spin beside the Python thread: 0.060 vs 0.041 s a cell on the demo, 2 cores) but
leaves out the time a thread waited for a core, so between two checkouts (``--baseline``) its ratio
is the one a busy neighbour moves less: the wall time of one 5-7 s run moves by a second there.

The cells a second value of k adds share chunks, indexes, rankings and reranked lists with the
first, and their answers are cache hits: all they cost is the fixed cost. ``--corpus squad``
measures it on the 180-cell grid of issue 16 (6 chunkers x bm25/dense/hybrid x reranker none,
dense@10/50, mmr@10/50 x k 5,10 over ../shared/datasets/squad2-normans).

    python benchmarks/sweep.py                       # both corpora, full naive arm on demo
    python benchmarks/sweep.py --corpus synthetic --naive-sample 6
    python benchmarks/sweep.py --corpus squad                         # per-cell overhead, 180 cells
    python benchmarks/sweep.py --corpus squad --repeats 3             # each overhead run best of 3, and median
    python benchmarks/sweep.py --corpus squad --repeats 3 --arms none # only tracking=none: wing on vs stock Hydra
    python benchmarks/sweep.py --corpus squad --set tracking.traces=false   # MLflow on, without per-question traces
    git worktree add /tmp/base <commit>                               # today's overhead beside an earlier commit's:
    python benchmarks/sweep.py --corpus demo --overhead-only --arms none --repeats 5 --baseline /tmp/base

With ``--corpus squad`` the cold and warm sweeps run with MLflow on (``--cold-tracking``) and are
printed against the grid's distinct-work floor (as above: model load, distinct texts embedded,
distinct rerank pairs, distinct prompts).

``--traces`` (issue 44: traces that do not cost the sweep) runs instead, in one run, the grid
(``--corpus squad``: the 180 cells; ``demo``: the 72) cold and warm with MLflow's defaults (a
sample of each cell's questions traced, ``tracking.trace_sample``) and with
``tracking.traces=false``, each arm in turn, ABBA (cold: traces off first, an empty cache of
its own each; warm: a fresh output folder with that cache filled, traces off last), then the
defaults' command once more over its warm output (every cell DONE), and with ``--traces-complete``
``rag-bench traces`` writing every remaining trace of the warm output (60 squad cells: 11,880
traces in 517 s at load ~6 on 2 cores). Printed:
the wall times, the ratios defaults / traces off (goal <= 1.25) and warm / cold, and the traces
each store holds.

    python benchmarks/sweep.py --corpus squad --traces
    python benchmarks/sweep.py --corpus squad --traces --chunkers fixed,section   # 60 cells

``--full-grid`` (issue 57: the regression guard that sees scoring) times the whole grid
(``--corpus squad``: the 180 cells; ``demo``: the 72), scoring included, from empty caches
(``--cold-tracking``, none by default here), and prints each stage's seconds summed over the
cells (their ``latency/*_s``: chunk, index, retrieve, rerank, generate, score ...) beside the wall
and CPU time, and ``bg_wait_s``: how long the sweep waited for its background processes to write
and log the cells (the line a sweep writes to its log file at its end; an older checkout shows ``-``).
With ``--against REF`` the same grid is timed with another commit's code, side by side in one run:
REF is a git ref (checked out here as a worktree of this repository, removed at the end) or a
rag_bench source tree, run through the same ``rag-bench`` entry point with ``PYTHONPATH``
set to it, each arm from an empty cache of its own; with ``--repeats N`` the arms take turns (ABBA)
and the fastest run of each is kept. Printed: both rows, the ratio today / REF of the wall time, the
CPU time and every stage, and which rag_bench each arm imported; with ``--repeats N`` first the median
of the N rounds' ratios (round i of one arm over round i of the other, minutes apart), the figure to
quote when the fastest runs of the two arms came from a quiet and a busy minute. ``--warm`` times each arm once more
over the cache its cold run filled, into a new output folder (a new experiment: every cell computed
again, nothing DONE), with the ratio warm / cold; a checkout with the cell cache (rag_bench/runner/reuse.py)
writes those cells from it, and says how many (their latency figures, summed in the warm row, are
the cold run's). docs/development.md: run it before a round closes.
``--cold-tracking both`` (without ``--against``) times today's code twice instead, with MLflow's
defaults (``tracking=mlflow``: the SQLite store, the background process, the trace sample) and with
``tracking=none``, and prints the ratio mlflow / none (issue 57: within 1.1x).

    python benchmarks/sweep.py --corpus squad --full-grid --against 93f7eb9
    python benchmarks/sweep.py --corpus squad --full-grid --against 93f7eb9 --warm --chunkers fixed,section
    python benchmarks/sweep.py --corpus squad --full-grid --cold-tracking both --repeats 2
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
BIN = Path(sys.executable).parent / "rag-bench"
STOCK_ENV = "RAG_BENCH_STOCK_HYDRA"  # rag_bench.fast.STOCK_ENV
RETRIEVERS = ["bm25", "dense", "hybrid"]
RERANKERS = ["none", "dense"]
KS = ["3", "5", "10"]
DEMO_CHUNKERS = ["fixed", "fixed_words", "sentence", "section"]
SYN_CHUNKERS = ["section", "syn_sentence", "syn_fixed", "syn_words"]
SQUAD = ROOT.parent / "shared" / "datasets" / "squad2-normans"
SQUAD_CHUNKERS = ["fixed", "fixed_words", "sentence", "section", "recursive", "parent_child"]
SQUAD_RERANK = {  # benchmark-only presets: the dense and MMR rerankers at depths 10 and 50
    f"{kind}_{depth}": f"defaults: [{kind}]\nname: {kind}_{depth}\ndepth: {depth}\n"
    for kind in ("dense", "mmr") for depth in (10, 50)}
SYN_CONF = {  # benchmark-only chunker presets: short chunks, so 20,000+ of them embed in minutes
    "syn_sentence": "defaults: [sentence]\nname: syn_sentence\nsize: 100\n",
    "syn_fixed": "defaults: [fixed]\nname: syn_fixed\nsize: 80\noverlap: 10\n",
    "syn_words": "defaults: [fixed_words]\nname: syn_words\nsize: 100\noverlap: 12\n",
}


def grid(chunkers: list[str], retrievers: list[str] = RETRIEVERS, rerankers: list[str] = RERANKERS,
         ks: list[str] = KS) -> list[str]:
    return [f"chunker={','.join(chunkers)}", f"retriever={','.join(retrievers)}",
            f"reranker={','.join(rerankers)}", f"pipeline.k={','.join(ks)}"]


def run(overrides: list[str], *, out: Path, cache: Path, env: dict[str, str] | None = None,
        tracking: str = "none") -> float:
    """One `rag-bench run -m` process; its wall time in seconds. ``tracking.*`` overrides (``--set``)
    go to MLflow runs only: tracking=none has no such keys."""
    overrides = [o for o in overrides if tracking == "mlflow" or not o.lstrip("+~").startswith("tracking.")]
    cmd = [str(BIN), "run", "-m", *overrides, f"tracking={tracking}", "generator=extractive", f"output.root={out}",
           "experiment.name=bench"]
    e = {**os.environ, "RAG_BENCH_CACHE": str(cache), "TQDM_DISABLE": "1", **(env or {})}
    if "PYTHONPATH" not in (env or {}):  # this checkout's rag_bench, not the one the console script was installed from
        e["PYTHONPATH"] = os.pathsep.join([str(ROOT), *([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH")
                                                         else [])])
    e.pop("MLFLOW_TRACKING_URI", None)
    if STOCK_ENV not in (env or {}):
        e.pop(STOCK_ENV, None)  # the wing on unless the arm asks for stock Hydra
    out.parent.mkdir(parents=True, exist_ok=True)  # the working directory: no rag_bench folder in it (--baseline)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(cmd, env=e, capture_output=True, text=True, cwd=out.parent)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{done.stderr[-3000:]}")
    CPU[out] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    log_file = out / "bench" / ".hydra" / "rag_bench.log"
    said = WAIT_LINE.findall(log_file.read_text(encoding="utf-8", errors="replace")) if log_file.is_file() else []
    if said:
        WAITED[out] = float(said[-1])
    return wall


# CPU seconds (user + system, every thread) of each run's process and the children it waited for, by
# output folder: the time waited for a core (steal, neighbours) is not in it (module doc).
CPU: dict[Path, float] = {}
# Seconds each run's sweep waited for the background processes finishing its cells (the line its
# session writes to the experiment's log file when it closes: rag_bench.tracking.background.wait_line),
# by output folder; a checkout older than that line says nothing.
WAITED: dict[Path, float] = {}
WAIT_LINE = re.compile(r"finishing cells in the background: the sweep waited ([\d.]+) s")


def cells(out: Path) -> list[tuple[dict, pd.DataFrame]]:
    found = []
    for done in sorted((out / "bench").glob("*/DONE")):
        cfg = yaml.safe_load((done.parent / "config.yaml").read_text())
        found.append((cfg, pd.read_parquet(done.parent / "records.parquet")))
    return found


def floor(dataset: Path, chunkers: list[str], common: list[str], sweep_out: Path) -> dict[str, float]:
    """Time of the distinct work of the grid (see the module doc), measured here."""
    from hydra import compose, initialize_config_dir

    from rag_bench.data.loader import load_dataset
    from rag_bench.domain import Passage
    from rag_bench.embedding.sentence_transformer import SentenceTransformerEmbedder, load_model
    from rag_bench.generation.base import GenerationInput
    from rag_bench.generation.extractive import ExtractiveGenerator
    from rag_bench.generation.prompt import build_prompt
    from rag_bench.runner.config import CONF_DIR, build, register_configs

    register_configs()
    ds = load_dataset(dataset)
    texts_by_chunker: dict[str, dict[str, str]] = {}
    with initialize_config_dir(str(CONF_DIR), version_base="1.3"):
        for name in chunkers:
            cfg = compose("config", overrides=[f"chunker={name}", *common])
            chunks = build(cfg.chunker, "chunker").chunk(list(ds.documents.values()))
            texts_by_chunker[name] = {c.chunk_id: c.text for c in chunks
                                      if not c.is_parent and not ds.documents[c.doc_id].archived}
    distinct = list(dict.fromkeys([t for m in texts_by_chunker.values() for t in m.values()]))
    questions = list(dict.fromkeys(q.question for q in ds.questions))
    emb = SentenceTransformerEmbedder(cache=False)
    load_model.cache_clear()
    t0 = time.perf_counter()
    _ = emb.model
    load_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    vecs = emb.encode_raw(distinct)
    qvecs = emb.encode_raw(questions)
    embed_s = time.perf_counter() - t0
    index = {t: i for i, t in enumerate(distinct)}
    qindex = {q: i for i, q in enumerate(questions)}

    pairs: set[tuple[str, str]] = set()
    prompts: dict[tuple[str, tuple[str, ...]], GenerationInput] = {}
    for cfg, rec in cells(sweep_out):
        texts = texts_by_chunker[cfg["chunker"]["name"]]
        depth = int(cfg["reranker"].get("depth", 0)) if cfg["reranker"]["name"] != "none" else 0
        for q, ids, ctx_ids, ctx_texts in zip(rec["question"], rec["retrieved_ids"], rec["context_ids"],
                                              rec["context_texts"]):
            pairs.update((q, texts[c]) for c in list(ids)[:depth])
            key = (q, tuple(ctx_texts))
            if key not in prompts:
                passages = tuple(Passage(i + 1, c, c.split("#")[0], 0, len(t), t)
                                 for i, (c, t) in enumerate(zip(ctx_ids, ctx_texts)))
                prompts[key] = GenerationInput(q, passages, build_prompt(q, passages))
    norm = vecs / np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)
    qnorm = qvecs / np.maximum(np.linalg.norm(qvecs, axis=1, keepdims=True), 1e-12)
    t0 = time.perf_counter()
    for q, t in pairs:
        float(norm[index[t]] @ qnorm[qindex[q]])
    rerank_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    ExtractiveGenerator().generate(list(prompts.values()))
    generate_s = time.perf_counter() - t0
    return {"load_s": load_s, "embed_s": embed_s, "rerank_s": rerank_s, "generate_s": generate_s,
            "texts": len(distinct) + len(questions), "pairs": len(pairs), "prompts": len(prompts),
            "total": load_s + embed_s + rerank_s + generate_s}


def bench(name: str, dataset: Path, chunkers: list[str], common: list[str], work: Path,
          naive_sample: int | None, repeats: int = 1, arms: str = "all", baseline: Path | None = None,
          overhead_only: bool = False) -> dict[str, float]:
    print(f"\n== {name}: {dataset} -- grid {len(chunkers)} chunkers x 3 retrievers x 2 rerankers x 3 k = 72 cells",
          flush=True)
    full = [*grid(chunkers), *common]
    first = [*grid(chunkers, ks=KS[:1]), *common]
    if overhead_only:
        return overhead(full, first, work=work, cache=work / "cache", cells=72, added=72 - 72 // len(KS),
                        repeats=repeats, arms=arms, baseline=baseline, fill=True)
    sweep_s = run(full, out=work / "sweep", cache=work / "cache")
    print(f"sweep (cold): {sweep_s:8.1f} s", flush=True)
    warms = [run(full, out=work / f"warm{i}", cache=work / "cache") for i in range(repeats)]
    warm_s = min(warms)
    print(f"warm:         {warm_s:8.1f} s" + (f"  (fastest of {repeats}: {', '.join(f'{w:.1f}' for w in warms)})"
                                              if repeats > 1 else ""), flush=True)
    f = floor(dataset, chunkers, common, work / "sweep")
    print(f"floor:        {f['total']:8.1f} s  (model load {f['load_s']:.1f} + embed {f['texts']} distinct texts "
          f"{f['embed_s']:.1f} + {f['pairs']} rerank pairs {f['rerank_s']:.2f} + {f['prompts']} distinct "
          f"prompts {f['generate_s']:.1f})", flush=True)
    naive_env = {"RAG_BENCH_SHARE": "0"}
    if naive_sample:
        sample = grid(chunkers[:1], ks=KS[:1])
        reps = max(1, naive_sample // 6)
        t = sum(run([*sample, *common, "embedder.cache=false"], out=work / f"naive{i}", cache=work / "nocache",
                    env=naive_env) for i in range(reps))
        naive_s = t / (6 * reps) * 72
        how = f"(scaled from {6 * reps} cells measured in {t:.1f} s)"
    else:
        naive_s = run([*full, "embedder.cache=false"], out=work / "naive", cache=work / "nocache", env=naive_env)
        how = "(all 72 cells)"
    print(f"naive:        {naive_s:8.1f} s {how}", flush=True)
    r = {"naive_s": naive_s, "sweep_s": sweep_s, "floor_s": f["total"], "warm_s": warm_s}
    print(f"ratios: sweep/floor = {sweep_s / f['total']:.2f} (target <= 1.3)   naive/sweep = {naive_s / sweep_s:.1f} "
          f"(target >= 5)   warm/cold = {warm_s / sweep_s:.1%} (target <= 15%)", flush=True)
    over = overhead(full, first, work=work, cache=work / "cache", cells=72,
                    added=72 - 72 // len(KS), repeats=repeats, arms=arms, baseline=baseline)
    r.update({f"overhead_{t}_s": v for t, v in over.items()})
    return r


def overhead(full: list[str], first_k: list[str], *, work: Path, cache: Path, cells: int,
             added: int, repeats: int = 1, arms: str = "all", baseline: Path | None = None,
             fill: bool = False) -> dict[str, float]:
    """Per-cell fixed cost, warm (``cache`` filled), with tracking none and mlflow (module doc):
    ``full`` is the grid, ``first_k`` the same grid at its first k, ``added`` the cells the other
    values of k add. Each of the two runs of an arm is timed ``repeats`` times and the fastest of
    each kept: the figure is a difference of two wall times, and one slow run on a shared machine
    moves it by tens of milliseconds per cell. The arms take turns within each repeat, so a quiet
    or a loaded minute falls on all of them alike.

    ``baseline``: the source tree of another rag_bench (e.g. ``git worktree add /tmp/base <commit>``)
    run as one more tracking=none arm -- the same ``rag-bench`` entry point with ``PYTHONPATH`` set
    to it, its own cache filled by one untimed run first -- so today's overhead and an earlier
    commit's are measured side by side, in one run, on the same machine. ``fill``: ``cache`` is
    empty, fill it by one untimed run of ``full`` first (``--overhead-only``)."""
    out: dict[str, float] = {}
    stock = {STOCK_ENV: "1"}  # rag_bench.fast off: stock Hydra composition, basic launcher, normal exit
    arms_of: dict[str, tuple[str, list[str], dict[str, str], Path]] = {
        "none": ("none", [], {}, cache),
        "none, stock Hydra (RAG_BENCH_STOCK_HYDRA=1)": ("none", [], stock, cache),
        "mlflow": ("mlflow", [], {}, cache),
        "mlflow, logged in the sweep's process": ("mlflow", ["tracking.background=false"], {}, cache)}
    if baseline is not None:
        arms_of[f"none, baseline {baseline}"] = ("none", [], {"PYTHONPATH": str(baseline)},
                                                  cache.with_name(cache.name + "-baseline"))
    chosen = {n: a for n, a in arms_of.items() if arms == "all" or a[0] == arms}
    fills: dict[Path, dict[str, str]] = {}  # each cache that starts empty, with its first arm's environment
    for _, _, env, arm_cache in chosen.values():
        if fill or arm_cache != cache:
            fills.setdefault(arm_cache, env)
    for i, (empty, env) in enumerate(fills.items()):
        t = run(full, out=work / f"over-fill{i}", cache=empty, env=env)
        print(f"cache {empty.name} filled by one cold run ({t:.1f} s, not counted)", flush=True)
    fulls: dict[str, list[float]] = {n: [] for n in chosen}
    firsts: dict[str, list[float]] = {n: [] for n in chosen}
    for i in range(repeats):
        for j, (name, (tracking, extra, env, arm_cache)) in enumerate(chosen.items()):
            slug = f"arm{j}"
            fulls[name].append(run([*full, *extra], out=work / f"over-{slug}-full{i}", cache=arm_cache,
                                   tracking=tracking, env=env))
            firsts[name].append(run([*first_k, *extra], out=work / f"over-{slug}-first{i}", cache=arm_cache,
                                    tracking=tracking, env=env))
    for name in chosen:
        t_full, t_first = min(fulls[name]), min(firsts[name])
        out[name] = (t_full - t_first) / added
        j = list(chosen).index(name)
        cpu_full = [CPU[work / f"over-arm{j}-full{i}"] for i in range(repeats)]
        cpu_first = [CPU[work / f"over-arm{j}-first{i}"] for i in range(repeats)]
        out[f"{name} (cpu)"] = (min(cpu_full) - min(cpu_first)) / added
        best = f", best of {repeats} each" if repeats > 1 else ""
        print(f"per-cell overhead (warm, tracking={name}): {out[name]:.3f} s  (grid of {cells} cells "
              f"{t_full:.1f} s, at the first k {cells - added} cells {t_first:.1f} s{best})", flush=True)
        print(f"    CPU time (user + system, the same runs): {out[f'{name} (cpu)']:.3f} s/cell  (grid "
              f"{min(cpu_full):.1f} s, first k {min(cpu_first):.1f} s{best})", flush=True)
        if repeats > 1:  # the median of the paired differences, beside the difference of the fastest runs
            med = float(np.median([(f - g) / added for f, g in zip(fulls[name], firsts[name])]))
            out[f"{name} (median)"] = med
            print(f"    median of {repeats} paired runs: {med:.3f} s/cell  (grid "
                  f"{', '.join(f'{t:.1f}' for t in fulls[name])}; first k "
                  f"{', '.join(f'{t:.1f}' for t in firsts[name])})", flush=True)
            cmed = float(np.median([(f - g) / added for f, g in zip(cpu_full, cpu_first)]))
            out[f"{name} (cpu median)"] = cmed
            print(f"    CPU time, median of {repeats} paired runs: {cmed:.3f} s/cell", flush=True)
    base = f"none, baseline {baseline}"
    if baseline is not None and "none" in out and out.get(base, 0) > 0 and out.get(f"{base} (median)", 1) > 0:
        print(f"ratio today / baseline (tracking=none, wing on): {out['none'] / out[base]:.2f} "
              f"(fastest runs)" + (f", {out['none (median)'] / out[base + ' (median)']:.2f} (medians)"
                                   if repeats > 1 else ""), flush=True)
        if out.get(f"{base} (cpu)", 0) > 0:
            print(f"ratio today / baseline in CPU time: {out['none (cpu)'] / out[base + ' (cpu)']:.2f} (fastest runs)"
                  + (f", {out['none (cpu median)'] / out[base + ' (cpu median)']:.2f} (medians)"
                     if out.get(f"{base} (cpu median)", 0) > 0 else ""), flush=True)
    return out


def stage_seconds(out: Path) -> dict[str, float]:
    """Each stage's seconds summed over the finished cells of a run's output (metrics.json
    ``latency``: every ``*_s`` figure), with ``cells``: how many."""
    sums: dict[str, float] = {"cells": 0}
    for done in sorted((out / "bench").glob("*/DONE")):
        latency = json.loads((done.parent / "metrics.json").read_text()).get("latency") or {}
        sums["cells"] += 1
        for key, value in latency.items():
            if key.endswith("_s") and isinstance(value, int | float) and not isinstance(value, bool):
                sums[key] = sums.get(key, 0.0) + float(value)
    return sums


def checkout(ref: str, work: Path) -> tuple[Path, str, bool]:
    """The source tree of ``ref``: a folder holding rag_bench as it is, else a git ref of this
    repository checked out as a detached worktree under ``work``; its name, and whether it was made
    here (to be removed)."""
    folder = Path(ref).expanduser()
    if (folder / "rag_bench" / "__init__.py").is_file():
        return folder.resolve(), str(folder), False
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", f"{ref}^{{commit}}"],
                            capture_output=True, text=True)
    if commit.returncode != 0:
        sys.exit(f"--against {ref}: neither a rag_bench source tree nor a commit of {ROOT} "
                 f"({commit.stderr.strip()}) -- fix: a ref `git rev-parse` knows, or a folder holding rag_bench/")
    tree = work / f"against-{commit.stdout.strip()}"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), commit.stdout.strip()],
                   check=True, capture_output=True)
    return tree, f"{ref} ({commit.stdout.strip()})", True


def _imported(env: dict[str, str]) -> str:
    """Which rag_bench an arm's processes import (the PYTHONPATH ``run`` gives them)."""
    e = {**os.environ, **env}
    return subprocess.run([sys.executable, "-P", "-c", "import rag_bench; print(rag_bench.__file__)"], env=e,
                          capture_output=True, text=True, cwd=tempfile.gettempdir()).stdout.strip()


@dataclass(frozen=True)
class FullGrid:
    """How ``--full-grid`` runs: beside which commit (``against``: a git ref or a source tree), the
    runs of each arm (the fastest kept), the tracking of every run, and whether warm runs follow."""

    against: str | None = None
    repeats: int = 1
    tracking: str = "none"
    warm: bool = False


def bench_full_grid(name: str, full: list[str], cells: int, work: Path, how: FullGrid) -> dict[str, float]:
    """The whole grid ``full`` from empty caches, scoring included, each stage's summed seconds
    printed; with ``how.against``, another commit's code timed the same way beside it (module doc)."""
    against, repeats, tracking, warm = how.against, how.repeats, how.tracking, how.warm
    here = {"PYTHONPATH": str(ROOT)}
    # arm -> (its environment, its tracking): today and REF with ``tracking``; or, with tracking
    # "both", today with MLflow's defaults beside today with tracking=none (the 1.1x)
    arms: dict[str, tuple[dict[str, str], str]] = (
        {"today, mlflow": (here, "mlflow"), "today, none": (here, "none")} if tracking == "both"
        else {"today": (here, tracking)})
    made: Path | None = None
    if against is not None:
        tree, label, own = checkout(against, work)
        made = tree if own else None
        arms[label] = ({"PYTHONPATH": str(tree)}, tracking)
    print(f"\n== full grid: {name}, {cells} cells, scoring included, empty caches, tracking={tracking}"
          + (f"; today vs {list(arms)[1]}" if against else ""), flush=True)
    for arm, (env, _) in arms.items():
        print(f"  {arm}: {_imported(env)}", flush=True)
    rows: dict[str, dict[str, float]] = {}
    try:
        for phase in ("cold", "warm") if warm else ("cold",):
            best: dict[str, tuple[float, float, dict[str, float]]] = {}
            runs: dict[str, list[tuple[float, float]]] = {arm: [] for arm in arms}  # (wall, CPU) of each round
            for i in range(repeats):
                order = list(arms) if i % 2 == 0 else list(arms)[::-1]  # ABBA: drift falls on both arms
                for arm in order:
                    slug = f"arm{list(arms).index(arm)}"
                    cache = work / f"grid-cache-{slug}-{i}"
                    out = work / f"grid-{phase}-{slug}-{i}"
                    env, arm_tracking = arms[arm]
                    wall = run(full, out=out, cache=cache, env=env, tracking=arm_tracking)
                    stages = stage_seconds(out)
                    if out in WAITED:
                        stages["bg_wait_s"] = WAITED[out]
                    reused = sum("reused" in json.loads(d.read_text() or "{}") for d in (out / "bench").glob("*/DONE"))
                    print(f"  {phase} {arm}: {wall:.1f} s wall, {CPU[out]:.1f} s CPU, {int(stages['cells'])} cells"
                          + (f", {WAITED[out]:.1f} s waited for the background" if out in WAITED else "")
                          + (f" ({reused} reused from the cell cache: their latency figures are the cold run's)"
                             if reused else ""), flush=True)
                    if stages["cells"] != cells:
                        sys.exit(f"{arm}: {int(stages['cells'])} cells finished of {cells} ({out})")
                    runs[arm].append((wall, CPU[out]))
                    if arm not in best or wall < best[arm][0]:
                        best[arm] = (wall, CPU[out], stages)
            for arm, (wall, cpu, stages) in best.items():
                rows[f"{phase} {arm}"] = {"wall_s": wall, "cpu_s": cpu, **stages}
            if len(arms) == 2 and repeats > 1:
                print(paired(phase, *(runs[arm] for arm in arms), " / ".join(arms)), flush=True)
        _table(rows, list(arms), warm, repeats)
    finally:
        if made is not None:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(made)], capture_output=True)
    return {f"{row} {k}": v for row, figures in rows.items() for k, v in figures.items()}


def paired(phase: str, a: list[tuple[float, float]], b: list[tuple[float, float]], names: str) -> str:
    """The median of the rounds' ratios (round i of one arm over round i of the other, run minutes
    apart), wall and CPU, and each round's: a shared machine's load drifts through a run, and the
    fastest run of each arm may come from different minutes (the table below gives those).

    >>> a, b = [(40.0, 60.0), (50.0, 70.0), (44.0, 66.0)], [(42.0, 57.0), (45.0, 64.0), (44.0, 60.0)]
    >>> print(paired("cold", a, b, "a / b"))
    ratio a / b (cold), median of 3 rounds: 1.00 wall, 1.09 CPU (rounds, wall: 0.95 1.11 1.00)
    """
    walls = [x[0] / y[0] for x, y in zip(a, b)]
    cpus = [x[1] / y[1] for x, y in zip(a, b)]
    return (f"ratio {names} ({phase}), median of {len(walls)} rounds: {statistics.median(walls):.2f} wall, "
            f"{statistics.median(cpus):.2f} CPU (rounds, wall: {' '.join(f'{r:.2f}' for r in walls)})")


def _table(rows: dict[str, dict[str, float]], arms: list[str], warm: bool, repeats: int) -> None:
    keys = ["wall_s", "cpu_s", *sorted({k for r in rows.values() for k in r} - {"wall_s", "cpu_s", "cells"})]
    label = max(len(r) for r in [*rows, f"ratio {' / '.join(arms)} (cold)"]) + 2
    w = {k: max(len(k), 7) + 2 for k in keys}
    print(f"\n{'':<{label}}" + "".join(f"{k:>{w[k]}}" for k in keys)
          + (f"   (fastest of {repeats} runs each)" if repeats > 1 else ""))
    for row, figures in rows.items():
        print(f"{row:<{label}}" + "".join(f"{figures[k]:>{w[k]}.1f}" if k in figures else f"{'-':>{w[k]}}"
                                          for k in keys))
    phases = ("cold", "warm") if warm else ("cold",)
    for phase in phases:
        if len(arms) == 2:
            a, b = rows[f"{phase} {arms[0]}"], rows[f"{phase} {arms[1]}"]
            print(f"{f'ratio {arms[0]} / {arms[1]} ({phase})':<{label}}"
                  + "".join(f"{a[k] / b[k]:>{w[k]}.2f}" if b.get(k) and k in a else f"{'-':>{w[k]}}" for k in keys))
    if warm:
        for arm in arms:
            print(f"{arm}: warm / cold wall = {rows[f'warm {arm}']['wall_s'] / rows[f'cold {arm}']['wall_s']:.2f}")
    print(flush=True)


def traces_in(out: Path) -> int:
    """Traces in the SQLite store of an output folder (0 when there is none)."""
    db = out / "mlflow.db"
    if not db.is_file():
        return 0
    with sqlite3.connect(db) as conn:
        return int(conn.execute("select count(*) from trace_info").fetchone()[0])


def bench_traces(name: str, full: list[str], cells: int, work: Path, complete: bool = False) -> dict[str, float]:
    """Issue 44's comparison (module doc): the grid ``full`` cold and warm, MLflow's defaults vs
    ``tracking.traces=false``, in one run."""
    print(f"\n== traces: {name}, {cells} cells, MLflow on (sqlite, tracking's defaults) vs tracking.traces=false",
          flush=True)
    arms = {"defaults": [], "traces off": ["tracking.traces=false"]}
    t: dict[str, float] = {}
    # ABBA: traces off first when cold, last when warm, so a neighbour's load rising or falling
    # through the run falls on both arms alike (one run on a shared machine moves by tens of seconds)
    for phase, order in (("cold", ["traces off", "defaults"]), ("warm", ["defaults", "traces off"])):
        for arm, extra in ((a, arms[a]) for a in order):
            slug = arm.replace(" ", "-")
            out = work / f"traces-{phase}-{slug}"
            t[f"{phase} {arm}"] = run([*full, *extra], out=out, cache=work / f"traces-cache-{slug}", tracking="mlflow")
            print(f"{phase:<5} {arm:<11} {t[f'{phase} {arm}']:8.1f} s   ({traces_in(out)} traces in its store)",
                  flush=True)
    for phase in ("cold", "warm"):
        print(f"{phase}: defaults / traces off = {t[f'{phase} defaults'] / t[f'{phase} traces off']:.2f}  "
              f"(goal <= 1.25)", flush=True)
    for arm in arms:
        print(f"{arm}: warm / cold = {t[f'warm {arm}'] / t[f'cold {arm}']:.2f}  (goal < 1)", flush=True)
    out = work / "traces-warm-defaults"
    before = traces_in(out)
    t["again"] = run(full, out=out, cache=work / "traces-cache-defaults", tracking="mlflow")
    print(f"again (defaults, every cell DONE): {t['again']:.1f} s, traces {before} -> {traces_in(out)}", flush=True)
    if not complete:
        return t
    e = {**os.environ, "PYTHONPATH": str(ROOT), "TQDM_DISABLE": "1"}
    e.pop("MLFLOW_TRACKING_URI", None)
    t0 = time.perf_counter()
    done = subprocess.run([str(BIN), "traces", str(out / "bench")], env=e, capture_output=True, text=True)
    t["every trace"] = time.perf_counter() - t0
    if done.returncode != 0:
        sys.exit(f"rag-bench traces failed:\n{done.stderr[-3000:]}")
    print(f"rag-bench traces (every remaining question of the {cells} warm cells): {t['every trace']:.1f} s, "
          f"traces {before} -> {traces_in(out)}", flush=True)
    return t


def bench_squad(work: Path, extra: list[str] | None = None, repeats: int = 1, cold_tracking: str = "mlflow",
                arms: str = "all", chunkers: list[str] | None = None, baseline: Path | None = None,
                overhead_only: bool = False, traces: str = "", full_grid: FullGrid | None = None
                ) -> dict[str, float]:
    """The 180-cell grid of issue 16: a cold sweep (``cold_tracking``, MLflow by default, as a user
    runs it) to fill the cache, timed against its distinct-work floor, then the per-cell overhead
    (``extra``: further overrides for every run, e.g. ``embedder.backend=onnx``; ``arms``: all, or
    only the tracking=none or tracking=mlflow arms; ``chunkers``: a subset of the six, a smaller grid
    for a busy machine -- the output names the grid it ran)."""
    chunkers = chunkers or SQUAD_CHUNKERS
    if not (SQUAD / "questions.jsonl").is_file():
        sys.exit(f"--corpus squad reads {SQUAD}, which is not there -- fix: run this checkout's benchmarks/sweep.py "
                 "from beside the shared folder (../shared/datasets/squad2-normans)")
    conf = work / "squad-conf" / "reranker"
    conf.mkdir(parents=True, exist_ok=True)
    for n, text in SQUAD_RERANK.items():
        (conf / f"{n}.yaml").write_text(text)
    rerankers = ["none", *SQUAD_RERANK]
    common = [f"dataset.path={SQUAD}", f"hydra.searchpath=[file://{conf.parent}]", *(extra or [])]
    ks = ["5", "10"]
    n = len(chunkers) * len(RETRIEVERS) * len(rerankers) * len(ks)
    print(f"\n== squad: {SQUAD} -- grid {len(chunkers)} chunkers x 3 retrievers x {len(rerankers)} rerankers "
          f"x {len(ks)} k = {n} cells{'; ' + ' '.join(extra) if extra else ''}", flush=True)
    full = [*grid(chunkers, rerankers=rerankers, ks=ks), *common]
    first = [*grid(chunkers, rerankers=rerankers, ks=ks[:1]), *common]
    if full_grid is not None:
        return bench_full_grid(f"squad2-normans {','.join(chunkers)}", full, n, work, full_grid)
    if traces:
        return bench_traces(f"squad2-normans {','.join(chunkers)}", full, n, work, complete=traces == "complete")
    if overhead_only:
        return overhead(full, first, work=work, cache=work / "squad-cache", cells=n, added=n // len(ks),
                        repeats=repeats, arms=arms, baseline=baseline, fill=True)
    cold = run(full, out=work / "squad-cold", cache=work / "squad-cache", tracking=cold_tracking)
    print(f"sweep (cold, tracking={cold_tracking}): {cold:8.1f} s", flush=True)
    warm = run(full, out=work / "squad-warm", cache=work / "squad-cache", tracking=cold_tracking)
    print(f"warm (tracking={cold_tracking}):        {warm:8.1f} s  (warm/cold = {warm / cold:.1%})", flush=True)
    f = floor(SQUAD, chunkers, common, work / "squad-cold")
    print(f"floor:        {f['total']:8.1f} s  (model load {f['load_s']:.1f} + embed {f['texts']} distinct texts "
          f"{f['embed_s']:.1f} + {f['pairs']} rerank pairs {f['rerank_s']:.2f} + {f['prompts']} distinct "
          f"prompts {f['generate_s']:.1f})", flush=True)
    print(f"ratios: cold/floor = {cold / f['total']:.2f}   warm/floor = {warm / f['total']:.2f}   "
          f"cold - floor = {cold - f['total']:.1f} s ({(cold - f['total']) / n:.3f} s per cell)", flush=True)
    r = {"cold_s": cold, "warm_s": warm, "floor_s": f["total"]}
    r.update(overhead(full, first, work=work, cache=work / "squad-cache", cells=n, added=n // len(ks),
                      repeats=repeats, arms=arms, baseline=baseline))
    return r


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--corpus", choices=["demo", "synthetic", "both", "squad"], default="both")
    p.add_argument("--sections", type=int, default=20_000, help="synthetic corpus size (one section = one chunk)")
    p.add_argument("--questions", type=int, default=200, help="synthetic questions")
    p.add_argument("--naive-sample", type=int, default=None,
                   help="measure only this many naive cells (rounded to multiples of 6) and scale to 72")
    p.add_argument("--work", type=Path, default=None, help="work folder (default: a temporary one, removed)")
    p.add_argument("--embedder-backend", choices=["torch", "onnx"], default=None,
                   help="embedder.backend for every run of the squad grid (default: the config's, torch)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="squad grid: one more override for every run (repeatable; tracking.* ones for MLflow runs "
                        "only), e.g. tracking.traces=false to "
                        "time MLflow runs and metrics without per-question traces (N + 1 store calls per cell, "
                        "benchmarks/traces.py)")
    p.add_argument("--repeats", type=int, default=1,
                   help="time each warm run (the warm arm and the per-cell overhead's runs) this many times "
                        "and keep the fastest")
    p.add_argument("--cold-tracking", choices=["mlflow", "none", "both"], default=None,
                   help="tracking of the squad cold and warm sweeps (default mlflow, as a user runs it; "
                        "with --full-grid none; both: --full-grid only, MLflow's defaults and tracking=none "
                        "side by side, with the ratio)")
    p.add_argument("--full-grid", action="store_true",
                   help="squad/demo: only the whole grid from empty caches, scoring included, each stage's summed "
                        "seconds printed (module doc)")
    p.add_argument("--against", default=None, metavar="REF",
                   help="with --full-grid: a commit (a git ref, checked out as a worktree) or a rag_bench source tree "
                        "timed on the same grid beside today's, with the ratios")
    p.add_argument("--warm", action="store_true",
                   help="with --full-grid: each arm once more over the cache its cold run filled (a new experiment)")
    p.add_argument("--arms", choices=["all", "none", "mlflow"], default="all",
                   help="which per-cell overhead arms to run: all, the two tracking=none ones (wing on and "
                        "stock Hydra), or the two tracking=mlflow ones")
    p.add_argument("--chunkers", default=None,
                   help=f"squad grid: comma-separated subset of {','.join(SQUAD_CHUNKERS)} (default: all six, 180 cells)")
    p.add_argument("--baseline", type=Path, default=None,
                   help="source tree of another rag_bench (git worktree add DIR COMMIT) timed as one more "
                        "tracking=none per-cell overhead arm beside today's, with the ratio")
    p.add_argument("--overhead-only", action="store_true",
                   help="demo/squad: fill the cache with one untimed run, then only the per-cell overhead "
                        "(no cold, warm, floor or naive arms)")
    p.add_argument("--traces", action="store_true",
                   help="squad/demo: only issue 44's arms: the grid cold and warm with MLflow's defaults and with "
                        "tracking.traces=false (module doc)")
    p.add_argument("--traces-complete", action="store_true",
                   help="with --traces: then time `rag-bench traces` writing every remaining trace of the warm output")
    a = p.parse_args()
    if a.baseline is not None:
        a.baseline = a.baseline.resolve()
        if not (a.baseline / "rag_bench" / "__init__.py").is_file():
            p.error(f"--baseline {a.baseline}: not a rag_bench source tree (no rag_bench/__init__.py)")
    if (a.against or a.warm) and not a.full_grid:
        p.error("--against and --warm go with --full-grid")
    if a.full_grid and a.corpus not in ("squad", "demo"):
        p.error("--full-grid times the squad or the demo grid: --corpus squad or --corpus demo")
    if a.cold_tracking == "both" and (not a.full_grid or a.against):
        p.error("--cold-tracking both goes with --full-grid, without --against")
    full_grid = FullGrid(a.against, a.repeats, a.cold_tracking or "none", a.warm) if a.full_grid else None
    a.cold_tracking = a.cold_tracking or "mlflow"
    work = a.work or Path(tempfile.mkdtemp(prefix="rag_bench_sweep_"))
    try:
        if a.corpus == "squad":
            extra = [*([f"embedder.backend={a.embedder_backend}"] if a.embedder_backend else []), *a.overrides]
            bench_squad(work, extra or None, a.repeats,
                        a.cold_tracking, a.arms, a.chunkers.split(",") if a.chunkers else None, a.baseline,
                        a.overhead_only, ("complete" if a.traces_complete else "on") if a.traces else "", full_grid)
        if a.corpus == "demo" and full_grid is not None:
            from rag_bench.runner.config import DEMO_DATASET

            bench_full_grid(f"demo {DEMO_DATASET}", grid(DEMO_CHUNKERS), 72, work / "demo", full_grid)
        elif a.corpus == "demo" and a.traces:
            bench_traces("demo", grid(DEMO_CHUNKERS), 72, work / "demo", complete=a.traces_complete)
        elif a.corpus in ("demo", "both"):
            from rag_bench.runner.config import DEMO_DATASET

            bench("demo", DEMO_DATASET, DEMO_CHUNKERS, [], work / "demo", a.naive_sample, a.repeats, a.arms,
                  a.baseline, a.overhead_only)
        if a.corpus in ("synthetic", "both"):
            from benchmarks.synthetic import make_dataset

            syn = make_dataset(work / "synthetic-data", sections=a.sections, questions=a.questions)
            conf = work / "synthetic-conf" / "chunker"
            conf.mkdir(parents=True, exist_ok=True)
            for n, text in SYN_CONF.items():
                (conf / f"{n}.yaml").write_text(text)
            common = [f"dataset.path={syn}", f"hydra.searchpath=[file://{conf.parent}]"]
            bench("synthetic", syn, SYN_CHUNKERS, common, work / "synthetic", a.naive_sample, a.repeats, a.arms,
                  a.baseline, a.overhead_only)
    finally:
        if a.work is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
