"""Session fixtures for the cluster tests: a real one-node SLURM cluster (tests/cluster/slurm.py)
and a real `mlflow server` (the e2e fixture, reused)."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from tests.cluster.slurm import cluster, missing
from tests.e2e.test_mlflow_server import mlflow_server  # noqa: F401 (a fixture, reused here)


@pytest.fixture(scope="session")
def slurm():
    """The environment (SLURM_CONF) of a running one-node SLURM cluster, stopped at the end of the
    session. Skips only where Debian's slurm-wlm/munge are not installed or we are not root."""
    why = missing()
    if why:
        pytest.skip(why)
    # Not under pytest's tmp folder: that is 0700, and munged runs as the munge user.
    root = Path(tempfile.mkdtemp(prefix="rag-bench-slurm-"))
    try:
        with cluster(root) as env:
            yield env
    finally:
        shutil.rmtree(root, ignore_errors=True)
