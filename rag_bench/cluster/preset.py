"""`+cluster=NAME` picks a Hydra launcher as well as its settings.

conf/cluster/NAME.yaml sets ``hydra.launcher.*`` (never a key of the cell, so cluster and launcher
settings stay out of the cell id). The launcher group itself cannot be switched from there: the
root config.yaml already overrides ``hydra/launcher`` and Hydra keeps that choice, so the CLI adds
the matching ``hydra/launcher=...`` override unless the command line names a launcher itself.
"""

from __future__ import annotations

# cluster preset -> the hydra/launcher option it runs on
LAUNCHERS = {"slurm": "slurm"}


def with_cluster_launcher(args: list[str]) -> list[str]:
    """``args`` plus ``hydra/launcher=<launcher>`` (right after the preset) when they choose a cluster preset and no launcher.

    >>> with_cluster_launcher(["-m", "+cluster=slurm", "chunker=fixed"])
    ['-m', '+cluster=slurm', 'hydra/launcher=slurm', 'chunker=fixed']
    >>> with_cluster_launcher(["+cluster=slurm", "hydra/launcher=submitit_local"])
    ['+cluster=slurm', 'hydra/launcher=submitit_local']
    >>> with_cluster_launcher(["chunker=fixed"])
    ['chunker=fixed']
    """
    chosen = [a.split("=", 1)[1] for a in args if a.lstrip("+~").startswith("cluster=")]
    if not chosen or chosen[-1] not in LAUNCHERS:
        return args
    if any(a.lstrip("+~").startswith("hydra/launcher=") for a in args):
        return args
    at = max(i for i, a in enumerate(args) if a.lstrip("+~").startswith("cluster=")) + 1
    return [*args[:at], f"hydra/launcher={LAUNCHERS[chosen[-1]]}", *args[at:]]  # beside it: argparse
