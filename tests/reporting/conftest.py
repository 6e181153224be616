"""Cells of the demo set shared by the reporting tests (BM25 only: seconds)."""

from __future__ import annotations

import pytest

from rag_bench.cells import load_cell
from tests.runner.test_run_cell import run


@pytest.fixture(scope="session")
def demo_cells(tmp_path_factory):
    """baseline (section, k1=1.5), noise (k1=1.3), regression (100-char fixed windows)."""
    root = tmp_path_factory.mktemp("cells")
    paths = {
        "baseline": run(root, "experiment.name=demo", dataset=None),
        "noise": run(root, "experiment.name=demo", "retriever.k1=1.3", dataset=None),
        "regression": run(root, "experiment.name=demo", "chunker=fixed", "chunker.size=100", "chunker.overlap=0",
                          dataset=None),
    }
    return {k: load_cell(v) for k, v in paths.items()}
