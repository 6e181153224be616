"""Cells of the demo set shared by the reporting tests (BM25 only: seconds)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rag_bench.cells import load_cell
from tests.conftest import REPO
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


def execute_notebook(experiment: Path, out: Path):
    """notebooks/design_review.ipynb executed as a reader would, on `experiment`, writing under `out`;
    returns the executed notebook (nbformat)."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(REPO / "notebooks" / "design_review.ipynb", as_version=4)
    saved = {k: os.environ.get(k) for k in ("RAG_BENCH_EXPERIMENT", "RAG_BENCH_NOTEBOOK_OUT", "PYTHONPATH")}
    os.environ["RAG_BENCH_EXPERIMENT"], os.environ["RAG_BENCH_NOTEBOOK_OUT"] = str(experiment), str(out)
    # the kernel imports this checkout's rag_bench (the one under test), whatever the venv points at
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), saved["PYTHONPATH"]) if p)
    try:
        NotebookClient(nb, timeout=300, kernel_name="python3",
                       resources={"metadata": {"path": str(REPO / "notebooks")}}).execute()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return nb
