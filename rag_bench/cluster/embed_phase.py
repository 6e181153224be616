"""Phase 1 of a two-phase sweep: embed every distinct text of the grid once, in shards, before any cell.

``rag-bench embed [--shards N] OVERRIDES...`` takes the overrides of ``rag-bench run -m`` (the same
grid), composes each cell, chunks the corpus once per distinct (dataset, chunker) and collects, per
embedder, the distinct texts its cells will ask for: the chunk texts (document prefix) and the
questions (query prefix). Texts already in the cache are dropped; the rest are cut into ``N``
shards. Without a cluster preset the shards run here, one after the other; with ``+cluster=slurm``
they are submitted as one SLURM array job through submitit (the preset's partition, time, CPUs,
memory and array parallelism), and the command waits for it.

Each shard writes ONE new immutable shard file into ``<cache>/embeddings.shards/`` (written under a
temporary name, then atomically renamed: :class:`rag_bench.embedding.cache.ShardSet`), so shards
running on several nodes at once never share a file and need no lock; SQLite is not involved.
Phase 2 is the ordinary ``rag-bench run -m`` with the same overrides: its cells find every chunk
and question vector in the shard files and encode nothing (``cost.embed_encoded`` = 0).

What phase 1 cannot foresee is encoded in phase 2 as usual: texts a judge embeds (answers), and
rerankers' texts outside the chunks (none of the shipped ones).
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from rag_bench.errors import ConfigError
from rag_bench.runner.grid import compose_cells, grid_overrides, uses_embedder

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class EmbedShard:
    """One task of phase 1: texts (already prefixed) for one embedder config, and the file name it writes."""

    embedder: dict[str, Any]   # the embedder's resolved config node (``_target_`` and parameters)
    texts: tuple[str, ...]     # prefix + text, as the embedder encodes them
    keys: tuple[str, ...]      # the cache key of each text (identity, prefix, text)
    name: str                  # shard file name start, e.g. ``phase1-3f2a9c01-002of004``


@dataclass(frozen=True)
class EmbedderWork:
    """What the grid asks of one embedder: distinct texts, how many the cache already holds."""

    identity: str
    chunkings: int     # distinct (dataset, chunker) pairs whose chunks it embeds
    documents: int     # distinct chunk texts
    questions: int     # distinct question texts
    cached: int        # of documents + questions, already in the cache
    name: str = ""     # as a person reads it: the option and model as configured (:func:`display_name`)


@dataclass(frozen=True)
class EmbedPlan:
    cells: int
    work: tuple[EmbedderWork, ...]
    shards: tuple[EmbedShard, ...]

    @property
    def to_embed(self) -> int:
        return sum(len(s.texts) for s in self.shards)

    def describe(self) -> str:
        lines = [f"phase 1: {self.cells} cells; {len(self.work)} embedder(s)"]
        for w in self.work:
            lines.append(f"  {w.name or w.identity[:70]}: {w.chunkings} chunking(s), {w.documents} distinct chunk texts, "
                         f"{w.questions} questions, {w.cached} already cached")
        lines.append(f"  {self.to_embed} texts to embed in {len(self.shards)} shard(s)"
                     + (": " + ", ".join(str(len(s.texts)) for s in self.shards) if self.shards else ""))
        return "\n".join(lines)


def display_name(node: dict[str, Any], identity: str) -> str:
    """An embedder as the plan prints it: its option and its model as configured, and the first
    characters of the weights' hash when its identity holds one (``minilm: all-MiniLM-L6-v2,
    weights 3f2a9c01``) -- the identity itself starts with the model folder's site-packages path.

    >>> display_name({"name": "minilm", "model": "all-MiniLM-L6-v2"}, "/venv/site-packages/x/model@3f2a9c01d2")
    'minilm: all-MiniLM-L6-v2, weights 3f2a9c01'
    """
    option, model = node.get("name"), node.get("model")
    weights = identity.split("@", 1)[1].split("|", 1)[0][:8] if "@" in identity else ""
    head = ": ".join(str(x) for x in (option, model) if x) or identity[:70]
    backend = node.get("backend")
    return head + (f", {backend}" if backend and backend != "torch" else "") + (f", weights {weights}" if weights else "")


def launcher_config(overrides: list[str]) -> DictConfig:
    """``hydra.launcher`` of the command (the +cluster preset's submitit settings)."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from rag_bench.runner.config import CONF_DIR

    fixed = [str(o.input_line) for o in OverridesParser.create().parse_overrides(overrides) if not o.is_sweep_override()]
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
            return compose("config", overrides=fixed, return_hydra_config=True).hydra.launcher
    finally:
        GlobalHydra.instance().clear()


def make_plan(cfgs: list[DictConfig], shards: int) -> EmbedPlan:
    """Chunk each distinct (dataset, chunker) once, collect each embedder's distinct texts, drop the
    cached ones and cut the rest into ``shards`` pieces (round-robin over the sorted keys)."""
    from rag_bench.data.loader import load_dataset
    from rag_bench.embedding.cache import text_key
    from rag_bench.runner.config import build, dataset_path

    if shards < 1:
        raise ConfigError(f"--shards must be >= 1, got {shards}")
    datasets: dict[tuple[str, str], Any] = {}
    embedders: dict[str, Any] = {}
    # embedder config key -> (config, {key: prefixed text}, chunkings, documents, questions)
    texts: dict[str, dict[str, str]] = {}
    nodes: dict[str, dict[str, Any]] = {}
    chunkings: dict[str, set[str]] = {}
    counts: dict[str, list[set[str]]] = {}
    seen: set[tuple[str, str]] = set()
    for cfg in cfgs:
        if not uses_embedder(cfg):
            continue
        node = OmegaConf.to_container(cfg.embedder, resolve=True)
        ekey = repr(sorted(node.items()))  # type: ignore[union-attr]
        if ekey not in embedders:
            embedders[ekey] = build(cfg.embedder, "embedder")
            nodes[ekey], texts[ekey], chunkings[ekey], counts[ekey] = node, {}, set(), [set(), set()]  # type: ignore[assignment]
        emb = embedders[ekey]
        cache = getattr(emb, "cache", None)
        if cache is None or not hasattr(cache, "shards"):
            raise ConfigError("embedder.cache: phase 1 writes vectors to the persistent cache, and this embedder has it "
                              "off -- fix: embedder.cache=true (or run the sweep without phase 1)")
        where = (str(dataset_path(cfg)), str(cfg.dataset.split))
        if where not in datasets:
            datasets[where] = load_dataset(where[0], split=where[1])
        ds = datasets[where]
        chunker_node = repr(OmegaConf.to_container(cfg.chunker, resolve=True))
        if (ekey, ds.fingerprint + chunker_node) in seen:
            continue
        seen.add((ekey, ds.fingerprint + chunker_node))
        chunkings[ekey].add(ds.fingerprint + chunker_node)
        chunks = build(cfg.chunker, "chunker", embedder=emb).chunk(list(ds.documents.values()))
        ident, dp, qp = emb.identity, getattr(emb, "document_prefix", ""), getattr(emb, "query_prefix", "")
        for c in chunks:
            if not c.is_parent:
                k = text_key(ident, dp, c.text)
                texts[ekey][k] = dp + c.text
                counts[ekey][0].add(k)
        for q in ds.questions:
            k = text_key(ident, qp, q.question)
            texts[ekey][k] = qp + q.question
            counts[ekey][1].add(k)
    work, out = [], []
    for ekey, emb in embedders.items():
        keys = sorted(texts[ekey])
        cached = set(emb.cache.get_bytes(keys)) if keys else set()
        todo = [k for k in keys if k not in cached]
        work.append(EmbedderWork(emb.identity, len(chunkings[ekey]), len(counts[ekey][0]), len(counts[ekey][1]),
                                 len(cached), display_name(nodes[ekey], emb.identity)))
        tag = hashlib.sha256(("\n".join(todo) + emb.identity).encode()).hexdigest()[:8]
        n = min(shards, len(todo))
        for i in range(n):
            part = todo[i::n]
            out.append(EmbedShard(nodes[ekey], tuple(texts[ekey][k] for k in part), tuple(part),
                                  f"phase1-{tag}-{i + 1:03d}of{n:03d}"))
    return EmbedPlan(len(cfgs), tuple(work), tuple(out))


@dataclass(frozen=True)
class ShardResult:
    name: str
    texts: int
    seconds: float
    file: str
    host: str


def run_shard(shard: EmbedShard) -> ShardResult:
    """Encode one shard's texts and write them as one shard file (the body of each array task)."""
    import socket

    from rag_bench.embedding.cache import vector_bytes
    from rag_bench.runner.config import build

    emb = build(OmegaConf.create(shard.embedder), "embedder")
    t0 = time.perf_counter()
    vectors = emb.encode_raw(list(shard.texts))
    seconds = time.perf_counter() - t0
    files = emb.cache.shards.put_bytes(((k, vector_bytes(v)) for k, v in zip(shard.keys, vectors)), name=shard.name)
    result = ShardResult(shard.name, len(shard.texts), seconds, str(files[0]) if files else "",
                         socket.gethostname())
    print(f"shard {shard.name} done: {len(shard.texts)} texts in {seconds:.1f} s "
          f"({len(shard.texts) / max(seconds, 1e-9):.1f} texts/s) -> {result.file}", flush=True)
    return result


def run_local(plan: EmbedPlan, report: Callable[[str], None] = print) -> list[ShardResult]:
    """Every shard here, one after the other."""
    return [run_shard(s) for s in plan.shards]


def run_slurm(plan: EmbedPlan, launcher: DictConfig, folder: Path) -> list[ShardResult]:
    """The shards as one SLURM array job (submitit), with the cluster preset's settings; waits for it.
    A shard that fails raises here with its log's path (submitit's exception names it)."""
    import submitit

    from rag_bench.cluster.request import check_request, wait_until_started

    check_request(launcher.get("partition"), launcher.get("cpus_per_task"), launcher.get("mem_gb"))
    executor = submitit.AutoExecutor(folder=str(folder / "%j"), cluster="slurm")
    params: dict[str, Any] = {"timeout_min": int(launcher.get("timeout_min") or 60),
                              "cpus_per_task": int(launcher.get("cpus_per_task") or 1),
                              "slurm_array_parallelism": int(launcher.get("array_parallelism") or 32)}
    if launcher.get("mem_gb"):
        params["mem_gb"] = int(launcher.mem_gb)
    if launcher.get("partition"):
        params["slurm_partition"] = str(launcher.partition)
    if launcher.get("setup"):
        params["slurm_setup"] = list(launcher.setup)
    executor.update_parameters(name="rag-bench-embed", **params)
    jobs = executor.map_array(run_shard, list(plan.shards))
    print(f"phase 1: submitted {len(jobs)} shard task(s) as array job {jobs[0].job_id.split('_')[0]}"
          if jobs else "phase 1: nothing to submit", flush=True)
    if jobs:
        wait_until_started(jobs[0].job_id.split("_")[0])
    return [j.result() for j in jobs]


def main(argv: list[str]) -> int:
    """``rag-bench embed``: plan, print the plan, run or submit the shards. Exit 2 on bad input."""
    import argparse
    import sys

    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from rag_bench.cluster.preset import LAUNCHERS, with_cluster_launcher
    from rag_bench.errors import RagBenchError

    p = argparse.ArgumentParser(prog="rag-bench embed", description="Phase 1 of a two-phase sweep: embed every "
                                "distinct chunk and question text of the grid into the shared cache, in shards (a "
                                "SLURM array job with +cluster=slurm). Then `rag-bench run -m` with the same "
                                "overrides (phase 2) finds every vector cached.",
                                epilog="example: rag-bench embed --shards 8 +cluster=slurm chunker=fixed,section "
                                "retriever=dense,hybrid dataset.path=/shared/data")
    p.add_argument("overrides", nargs="*", help="the sweep's Hydra overrides, as given to `rag-bench run -m`")
    p.add_argument("-m", "--multirun", action="store_true", help="accepted (and implied) for the same command line")
    p.add_argument("--shards", type=int, default=None, help="shards (array tasks); default: the cluster preset's "
                   "hydra.launcher.array_parallelism, or 1 without a cluster preset")
    p.add_argument("--dry-run", action="store_true", help="print the plan, embed nothing")
    a = p.parse_args(argv)
    args = with_cluster_launcher(list(a.overrides))
    cluster = [x.split("=", 1)[1] for x in args if x.lstrip("+~").startswith("cluster=")]
    on_slurm = bool(cluster) and cluster[-1] in LAUNCHERS
    try:
        overrides, cells = grid_overrides(args)
        launcher = launcher_config(overrides) if on_slurm else None
        shards = a.shards if a.shards is not None else \
            int(launcher.get("array_parallelism") or 1) if launcher is not None else 1
        cfgs = compose_cells([[o for o in c if not o.lstrip("+~").startswith("hydra")] + (
            [x for x in overrides if x.lstrip("+~").startswith("hydra/launcher=")]) for c in cells])
        plan = make_plan(cfgs, shards)
        print(plan.describe(), flush=True)
        if a.dry_run or not plan.shards:
            return 0
        t0 = time.perf_counter()
        if launcher is not None:
            root = Path(str(cfgs[0].output.root)) / str(cfgs[0].experiment.name) / ".embed"
            results = run_slurm(plan, launcher, root)
        else:
            results = run_local(plan)
    except RagBenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except (HydraException, OmegaConfBaseException) as exc:
        print(f"error: configuration: {exc} -- fix: give the overrides of `rag-bench run -m` (`rag-bench run --help`)",
              file=sys.stderr)
        return 2
    wall = time.perf_counter() - t0
    n = sum(r.texts for r in results)
    busy = sum(r.seconds for r in results)
    print(f"phase 1 done: {n} texts in {len(results)} shard file(s), {wall:.1f} s wall; encoding "
          f"{n / max(busy, 1e-9):.1f} texts/s per task on {len({r.host for r in results})} node(s). "
          "Now run the sweep (phase 2) with the same overrides.", flush=True)
    return 0
