"""Two phases on a real SLURM scheduler (the one-node cluster of tests/cluster/slurm.py): phase 1
(`rag-bench embed --shards 2 +cluster=slurm`) embeds the grid's distinct texts as a 2-task array
job, each task writing one immutable shard file into the shared cache; phase 2 (`rag-bench run -m`
with the same overrides, also on the cluster) then encodes nothing and writes nothing to the cache."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import TINY

pytestmark = pytest.mark.slow
BIN = Path(sys.executable).parent
GRID = ["chunker=fixed,section", "retriever=dense", "generator=none", "tracking=none", f"dataset.path={TINY}",
        "experiment.name=two"]
CLUSTER = ["+cluster=slurm", "hydra.launcher.cpus_per_task=1", "hydra.launcher.mem_gb=2",
           "hydra.launcher.timeout_min=10"]


def rag_bench(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "rag-bench"), *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=900)


def test_phase_one_shards_then_phase_two_embeds_nothing(slurm, tmp_path):
    cache = tmp_path / "cache"
    # Cluster jobs write new vectors to shard files only (never SQLite on a network filesystem).
    env = {**slurm, "RAG_BENCH_CACHE": str(cache), "RAG_BENCH_CACHE_SHARDS": "1"}
    out = [f"output.root={tmp_path / 'out'}"]

    phase1 = rag_bench(["embed", "--shards", "2", *CLUSTER, *GRID, *out], env, tmp_path)
    assert phase1.returncode == 0, phase1.stdout + phase1.stderr[-3000:]
    assert "2 shard(s)" in phase1.stdout and "submitted 2 shard task(s)" in phase1.stdout, phase1.stdout
    tasks = sorted((tmp_path / "out" / "two" / ".embed").glob("[0-9]*_[0-9]*"))
    assert len(tasks) == 2, f"phase 1 did not run as a 2-task array job: {tasks}"
    shards = sorted((cache / "embeddings.shards").glob("*.vecs"))
    assert len(shards) == 2 and all(p.name.startswith("phase1-") for p in shards), shards  # one write per shard
    assert not list((cache / "embeddings.shards").glob(".*")), "a temporary file was left behind"
    assert not (cache / "embeddings.sqlite").exists()

    phase2 = rag_bench(["run", "-m", *CLUSTER, *GRID, *out], env, tmp_path)
    assert phase2.returncode == 0, phase2.stderr[-3000:]
    costs = [json.loads(p.read_text())["cost"] for p in sorted((tmp_path / "out" / "two").glob("*/metrics.json"))]
    assert len(costs) == 2
    assert all(c["embeddings_computed"] == 0 and c["embedding_requests"] > 0 for c in costs), costs
    assert all(c["embedding_cache_hits"] == c["embedding_requests"] for c in costs), costs
    assert sorted((cache / "embeddings.shards").glob("*.vecs")) == shards, "phase 2 wrote to the cache"
    assert not (cache / "embeddings.sqlite").exists()

    again = rag_bench(["embed", "--shards", "2", *CLUSTER, *GRID, *out], env, tmp_path)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "0 texts to embed in 0 shard(s)" in again.stdout, again.stdout
    assert len(list((tmp_path / "out" / "two" / ".embed").glob("[0-9]*_[0-9]*"))) == 2, "phase 1 again submitted work"
