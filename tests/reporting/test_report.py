"""The HTML report: every chart rendered, opened in headless Chromium (every image loads, a
screenshot is saved), logged to MLflow; the design-review notebook executes."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from rag_bench.cli import main as cli
from rag_bench.reporting.report import render_report
from tests.conftest import REPO

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def report(demo_cells, tmp_path_factory):
    exp = demo_cells["baseline"].path.parent
    return render_report(exp, out_root=tmp_path_factory.mktemp("reports"), log_to_mlflow=False)


def test_report_files(report):
    names = {p.name for p in report.parent.iterdir()}
    assert {"index.html", "leaderboard.png", "heatmap.png", "metric_vs_k.png", "failures.png",
            "top1_scores.png"} <= names
    page = report.read_text()
    assert "AUROC" in page and "Best cell vs baseline" in page and "fixed by the best cell" in page
    assert "No dense-retrieval cells" in page  # the ANN chart says why it is absent


@pytest.mark.skipif(CHROMIUM is None, reason="Debian chromium is not installed (.ci/run installs it)")
def test_report_in_headless_chromium(report, tmp_path):
    dom = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'p1'}", "--virtual-time-budget=10000",
                          "--dump-dom", report.as_uri()], capture_output=True, text=True, timeout=120)
    assert 'data-images-ok="true"' in dom.stdout, dom.stderr[-2000:]
    assert 'data-images="5"' in dom.stdout
    shot = report.parent / "screenshot.png"
    subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'p2'}", "--window-size=1200,2400",
                    f"--screenshot={shot}", report.as_uri()], capture_output=True, timeout=120, check=True)
    assert shot.stat().st_size > 20_000
    keep = os.environ.get("RAG_BENCH_SCREENSHOT_DIR")
    if keep:
        shutil.copy(shot, Path(keep) / "report_screenshot.png")


def test_report_cli_and_bad_input(demo_cells, tmp_path, capsys):
    exp = demo_cells["baseline"].path.parent
    assert cli(["report", str(exp), "--out", str(tmp_path), "--no-mlflow"]) == 0
    assert (tmp_path / exp.name / "index.html").exists()
    assert cli(["report", str(tmp_path / "nothing"), "--out", str(tmp_path)]) == 2
    assert cli(["report", str(exp), "--out", str(tmp_path), "--metric", "retrieval/nope@3"]) == 2


def test_notebook_executes(demo_cells, tmp_path):
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(REPO / "notebooks" / "design_review.ipynb", as_version=4)
    os.environ["RAG_BENCH_EXPERIMENT"] = str(demo_cells["baseline"].path.parent)
    os.environ["RAG_BENCH_NOTEBOOK_OUT"] = str(tmp_path)
    try:
        NotebookClient(nb, timeout=300, kernel_name="python3",
                       resources={"metadata": {"path": str(REPO / "notebooks")}}).execute()
    finally:
        os.environ.pop("RAG_BENCH_EXPERIMENT", None)
        os.environ.pop("RAG_BENCH_NOTEBOOK_OUT", None)
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.output_type == "error"]
    assert sum("image/png" in o.get("data", {}) for o in outputs) >= 2
    assert any("ndcg@10" in o.get("text", "") for o in outputs)
    assert (tmp_path / "rag_bench_notebook" / "leaderboard.png").exists()


def test_report_shows_hit_vs_correct_when_cells_generated(report):
    page = report.read_text()
    assert "correct when hit (n)" in page and "correct when miss (n)" in page
