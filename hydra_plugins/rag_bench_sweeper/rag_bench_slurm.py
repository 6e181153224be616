"""``hydra/launcher=rag_bench_slurm`` (``+cluster=slurm``): submitit's SLURM launcher submitting jobs
grouped by shared work and only the cells without DONE (see :mod:`rag_bench.cluster.launcher`)."""

from __future__ import annotations

from hydra.core.config_store import ConfigStore

from rag_bench.cluster.launcher import GroupedSlurmLauncher, RagBenchSlurmConf

# As Hydra's own launchers register theirs: when Hydra scans the plugins, before any composition.
ConfigStore.instance().store(group="hydra/launcher", name="rag_bench_slurm", node=RagBenchSlurmConf,
                             provider="rag_bench")


class RagBenchSlurmLauncher(GroupedSlurmLauncher):
    """One SLURM array task per chunker x embedder x index group; cells with DONE are not submitted."""
