"""``rag-bench embed``: phase 1 of a two-phase sweep: embed the grid's texts into the cache in shards
(a SLURM array job with +cluster=slurm; docs/cluster.md)."""

from __future__ import annotations

from rag_bench.cli.table import Command


def run(argv: list[str]) -> int:
    """``rag-bench embed`` with the arguments ``argv``; its exit code."""
    from rag_bench.cluster.embed_phase import main as embed_main

    return embed_main(argv)


COMMAND = Command("embed", "[--shards N] [overrides]",
                  "phase 1 of a two-phase sweep: embed the grid's texts into the cache in shards (a SLURM array "
                  "job with +cluster=slurm; docs/cluster.md)", run)
