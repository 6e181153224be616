"""Sweeps on a SLURM cluster: the +cluster presets (conf/cluster/), see docs/cluster.md."""
