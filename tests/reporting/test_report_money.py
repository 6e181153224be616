"""Money in the report and the leaderboard (issue 44): with a price table the report draws quality
against $ per question (a Pareto chart) and lists each cell's $ per question; an unpriced cell is
said to be unpriced, in the table, under the chart and in the leaderboard, never drawn as free."""

from __future__ import annotations

import re
import subprocess

import pytest

from rag_bench.cells import load_cell
from rag_bench.reporting.leaderboard import format_leaderboard, load_cells
from rag_bench.reporting.report import render_report
from tests.reporting.test_report import CHROMIUM, FLAGS
from tests.runner.test_run_cell import run

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def priced(tmp_path_factory):
    root = tmp_path_factory.mktemp("money")
    paths = [run(root, "experiment.name=money", "+prices=example"),
             run(root, "experiment.name=money", "+prices=example", "retriever.k1=1.3", "pipeline.k=3"),
             # no hourly price: retrieval and the extractive generator (our code) are unpriced
             run(root, "experiment.name=money", "+prices=example", "prices.usd_per_hour=null", "chunker=fixed")]
    return root / "money", [load_cell(p) for p in paths]


def test_the_report_draws_dollars_per_question_and_says_unpriced(priced, tmp_path):
    exp, cells = priced
    assert [c.metric("cost/usd_per_question") is not None for c in cells] == [True, True, False]
    page_path = render_report(exp, out_root=tmp_path, log_to_mlflow=False)
    chart = page_path.parent / "pareto_usd.png"
    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    page = page_path.read_text()
    assert "pareto_usd.png" in page and "US dollars per question" in page
    assert "1 of 3 cells are unpriced" in page and "$ / question" in page
    assert ">unpriced<" in page  # the costs table's cell for the unpriced one
    if CHROMIUM is None:
        pytest.skip("Debian chromium is not installed (.ci/run installs it): the page's images were not loaded")
    dom = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'p'}", "--virtual-time-budget=10000",
                          "--dump-dom", page_path.as_uri()], capture_output=True, text=True, timeout=120)
    assert 'data-images-ok="true"' in dom.stdout, dom.stderr[-2000:]  # every chart loads, the $ one too
    assert int(re.search(r"data-images=\"(\d+)\"", dom.stdout).group(1)) == len(list(page_path.parent.glob("*.png")))
    assert 'alt="pareto_usd"' in dom.stdout or "pareto_usd.png" in dom.stdout


def test_the_leaderboard_shows_dollars_per_question_and_unpriced(priced):
    exp, cells = priced
    text = format_leaderboard(load_cells(exp), width=None)
    assert "usd_per_question" in text
    by_id = {line.split()[-1]: line for line in text.splitlines()[2:]}
    assert "unpriced" in by_id[cells[2].cell_id]
    assert f"{cells[0].metric('cost/usd_per_question'):.3g}" in by_id[cells[0].cell_id]
    assert "unpriced" not in by_id[cells[0].cell_id]
