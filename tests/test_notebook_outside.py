"""notebooks/design_review.ipynb started outside notebooks/ (Jupyter opened in the checkout, or any folder): it
finds experiments/demo in the working folder or above it, and where there is none its error's fix is a command."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import REPO

pytest.importorskip("nbclient")


def _first_cells(cwd: Path) -> str:
    """The notebook's opening code cell executed as a reader would from ``cwd``, RAG_BENCH_EXPERIMENT unset:
    its error text, empty when it ran."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    nb = nbformat.read(REPO / "notebooks" / "design_review.ipynb", as_version=4)
    code = next(c for c in nb.cells if c.cell_type == "code")
    code.source = code.source.split("exp = rb.load(EXPERIMENT)", 1)[0] + "print(EXPERIMENT)"
    nb.cells = [code]
    saved = {k: os.environ.get(k) for k in ("RAG_BENCH_EXPERIMENT", "PYTHONPATH")}
    os.environ.pop("RAG_BENCH_EXPERIMENT", None)
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), saved["PYTHONPATH"]) if p)
    try:
        NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(cwd)}}).execute()
        return "".join(o.get("text", "") for o in code.outputs)
    except CellExecutionError as exc:
        return f"error: {exc}"
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def test_outside_notebooks_it_finds_the_demo_or_says_the_command(tmp_path):
    checkout = tmp_path / "checkout"
    (checkout / "experiments" / "demo").mkdir(parents=True)
    (checkout / "notebooks").mkdir()
    for cwd in (checkout, checkout / "notebooks"):  # Jupyter started in the checkout, or in notebooks/
        assert _first_cells(cwd).strip() == str(checkout / "experiments" / "demo")
    said = _first_cells(tmp_path)  # nothing to read here or above
    assert "fix: `make demo` in the checkout" in said and "RAG_BENCH_EXPERIMENT=experiments/<name>" in said, said
