"""`+cluster=NAME` picks a Hydra launcher as well as its settings.

conf/cluster/NAME.yaml sets ``hydra.launcher.*`` (never a key of the cell, so cluster and launcher
settings stay out of the cell id). The launcher group itself cannot be switched from there: the
root config.yaml already overrides ``hydra/launcher`` and Hydra keeps that choice, so the CLI adds
the matching ``hydra/launcher=...`` override unless the command line names a launcher itself.
"""

from __future__ import annotations

# cluster preset -> the hydra/launcher option it runs on
LAUNCHERS = {"slurm": "slurm"}


def max_jobs_override(args: list[str]) -> list[str]:
    """``--max-jobs N`` (or ``--max-jobs=N``) as the override ``hydra.launcher.max_jobs=N``.

    >>> max_jobs_override(["-m", "--max-jobs", "4", "chunker=fixed"])
    ['-m', 'chunker=fixed', 'hydra.launcher.max_jobs=4']
    >>> max_jobs_override(["--max-jobs=2"])
    ['hydra.launcher.max_jobs=2']
    """
    out, value, i = [], None, 0
    while i < len(args):
        a = args[i]
        if a == "--max-jobs" and i + 1 < len(args):
            value, i = args[i + 1], i + 2
            continue
        if a.startswith("--max-jobs="):
            value = a.split("=", 1)[1]
        else:
            out.append(a)
        i += 1
    # Checked where the launcher is built (a bad value is a configuration error there, exit 2).
    return out if value is None else [*out, f"hydra.launcher.max_jobs={value}"]


def with_cluster_launcher(args: list[str]) -> list[str]:
    """``args`` plus ``hydra/launcher=<launcher>`` (right after the preset) when they choose a cluster preset and no launcher.

    >>> with_cluster_launcher(["-m", "+cluster=slurm", "chunker=fixed"])
    ['-m', '+cluster=slurm', 'hydra/launcher=slurm', 'chunker=fixed']
    >>> with_cluster_launcher(["+cluster=slurm", "hydra/launcher=submitit_local"])
    ['+cluster=slurm', 'hydra/launcher=submitit_local']
    >>> with_cluster_launcher(["chunker=fixed"])
    ['chunker=fixed']
    """
    args = max_jobs_override(args)
    chosen = [a.split("=", 1)[1] for a in args if a.lstrip("+~").startswith("cluster=")]
    if not chosen or chosen[-1] not in LAUNCHERS:
        return args
    if any(a.lstrip("+~").startswith("hydra/launcher=") for a in args):
        return args
    at = max(i for i, a in enumerate(args) if a.lstrip("+~").startswith("cluster=")) + 1
    return [*args[:at], f"hydra/launcher={LAUNCHERS[chosen[-1]]}", *args[at:]]  # beside it: argparse
