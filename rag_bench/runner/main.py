"""Run one cell from a composed config: validate, skip if done, compute, write, track, mark DONE."""

from __future__ import annotations

import hashlib
import logging
import os
import subprocess
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from rag_bench.data.loader import load_dataset
from rag_bench.errors import ConfigError, OutputError
from rag_bench.faults import failpoint
from rag_bench.runner.cell import cell_lock, discard, flat_metrics, is_done, mark_done, write_cell
from rag_bench.runner.config import MAX_BOOTSTRAP_BYTES, build, cell_id, dataset_path, validate
from rag_bench.runner.pipeline import run_pipeline

log = logging.getLogger("rag_bench")

SWEEP_ENV = "RAG_BENCH_SWEEP_ID"


def sweep_id_from_argv(experiment: str, argv: list[str]) -> str:
    """Identity of a sweep: experiment name + the command-line overrides, order-insensitive.

    Re-running the same command (to resume) finds the same parent run.
    """
    args = sorted(a for a in argv if not a.startswith("-"))
    return hashlib.sha256(("\0".join([experiment, *args])).encode()).hexdigest()[:16]


@lru_cache(maxsize=1)
def git_sha() -> str:
    """Commit of the code that produced a result (``unknown`` outside a git checkout).

    Asked once per process: forking ``git`` from a process holding a loaded model costs ~0.1 s,
    which every cell of a sweep would pay.
    """
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=Path(__file__).parent, capture_output=True,
                             text=True, timeout=5)
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def _flat_params(cfg: DictConfig) -> dict[str, Any]:
    out: dict[str, Any] = {}

    def walk(prefix: str, node: Any) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                walk(f"{prefix}.{k}" if prefix else str(k), v)
        else:
            out[prefix] = node

    walk("", OmegaConf.to_container(cfg, resolve=True))
    return out


def run_cell(cfg: DictConfig) -> Path:
    """Evaluate one configuration; return its cell folder. Raises RagBenchError on bad input."""
    validate(cfg)
    for group in ("chunker", "embedder", "index", "retriever", "reranker", "generator", "judge"):
        build(cfg[group], group)  # fail on a bad parameter before loading anything (models load lazily)
    tracker = build(cfg.tracking, "tracking")
    dataset = load_dataset(dataset_path(cfg), split=cfg.dataset.split)
    need = 16 * int(cfg.eval.bootstrap_resamples) * max(len(dataset.questions), 1)
    if need > MAX_BOOTSTRAP_BYTES:
        fit = MAX_BOOTSTRAP_BYTES // (16 * max(len(dataset.questions), 1))
        raise ConfigError(f"eval.bootstrap_resamples={cfg.eval.bootstrap_resamples} over {len(dataset.questions)} "
                          f"questions needs ~{need / 2**30:.1f} GiB for the bootstrap (limit "
                          f"{MAX_BOOTSTRAP_BYTES / 2**30:.0f} GiB) -- fix: eval.bootstrap_resamples<={fit}")
    cid = cell_id(cfg, dataset.fingerprint)
    root = Path(cfg.output.root)
    cell_dir = root / cfg.experiment.name / cid
    # Defence in depth (validate() checked the name): lexically, so a user's own symlink is kept.
    if not Path(os.path.normpath(cell_dir)).is_relative_to(os.path.normpath(root)) or cell_dir.parent == root:
        raise ConfigError(f"experiment.name {cfg.experiment.name!r} leads outside output.root {root} "
                          "-- fix: experiment.name=<folder name>")
    if is_done(cell_dir):
        log.info("cell %s already done, skipping (%s)", cid, cell_dir)
        return cell_dir
    try:
        cell_dir.parent.mkdir(parents=True, exist_ok=True)
        probe = cell_dir.parent / f".write-probe-{os.getpid()}"
        probe.touch()
        probe.unlink()
    except OSError as exc:
        raise ConfigError(f"output.root: cannot write to {cell_dir.parent} ({exc.strerror}) "
                          "-- fix: pass output.root=<writable folder>") from exc
    sweep = os.environ.get(SWEEP_ENV) or sweep_id_from_argv(cfg.experiment.name, [])
    tracker.bind(output_root=root, experiment=cfg.experiment.name, sweep_id=sweep)
    tracker.check()

    discard(cell_dir)
    stored = cfg.copy()
    OmegaConf.update(stored, "dataset.path", str(dataset_path(cfg).resolve()))
    result = run_pipeline(cfg, dataset, cid)
    result.metrics["dataset_fingerprint"] = dataset.fingerprint
    with cell_lock(cell_dir):  # another process on the same cell waits here, then finds DONE
        if is_done(cell_dir):
            log.info("cell %s was finished by another process meanwhile, keeping it (%s)", cid, cell_dir)
            return cell_dir
        try:
            write_cell(cell_dir, stored, result)
        except OSError as exc:  # disk full, quota, permissions: nothing half-written is left behind
            raise OutputError(f"output.root: cannot write cell {cell_dir} ({exc.strerror or exc}) -- fix: free disk "
                              "space or pass output.root=<another folder>; no partial cell was kept") from exc
        failpoint("cell_written")
        tags = {"dataset_fingerprint": dataset.fingerprint, "dataset": dataset.name, "git_sha": git_sha(),
                **{g: str(cfg[g].get("name", "")) for g in ("chunker", "embedder", "index", "retriever", "reranker",
                                                            "generator")}}
        run_id = tracker.log_cell(cell_id=cid, cell_dir=cell_dir, params=_flat_params(stored),
                                  metrics=flat_metrics(result.metrics), tags=tags)
        failpoint("before_done")
        mark_done(cell_dir, {"cell_id": cid, "mlflow_run_id": run_id, **tracker.describe()})
    m = result.metrics
    gen = ""
    if "generation" in m:
        g, c, a = m["generation"], m["citation"], m["abstention"]
        gen = (f" | correct={_fmt(g.get('correct'))} cite_p={_fmt(c.get('citation_precision'))} "
               f"cite_r={_fmt(c.get('citation_recall'))} correct_refusal={_fmt(a.get('correct_refusal_rate'))} "
               f"false_refusal={_fmt(a.get('false_refusal_rate'))} failures="
               + ",".join(f"{k}:{v}" for k, v in m["failures"].items() if v))
    log.info("cell %s done: chunker=%s retriever=%s reranker=%s index=%s generator=%s k=%s chunks=%d hit@5=%s "
             "mrr=%s%s", cid, tags["chunker"], tags["retriever"], tags["reranker"], tags["index"], tags["generator"],
             cfg.pipeline.k, m["counts"]["chunks"], _fmt(m["retrieval"].get("hit@5")), _fmt(m["retrieval"].get("mrr")),
             gen)
    return cell_dir


def _fmt(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.3f}"


def argv_overrides() -> list[str]:
    """Overrides from the command line that launched this process (for the sweep identity)."""
    return [a for a in sys.argv[1:] if "=" in a]
