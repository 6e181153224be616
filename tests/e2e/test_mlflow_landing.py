"""End to end, as a user meets it: a 2-cell sweep of the demo set through the CLI, a real
`mlflow server` on its SQLite store, and headless Chromium opening MLflow's UI, clicking the
experiment where MLflow lists it, and reading what the page shows (rendered DOM text, never the
API).

MLflow 3.17's UI picks an experiment's landing tab by the browser's GenAI / Model training switch
(GenAI by default), not by anything the experiment holds (rag_bench.tracking.view). So both users
are followed: one who switched to Model training lands on the Runs table, the cells shown under
their sweep; one who kept GenAI lands on the Overview, headed by the experiment's description. On
both landings the description names the ranking and links to the saved view, where the cells are
best first with their rank, primary measure, its CI and failure counts as columns, in the order
and to the values of the leaderboard.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.reporting.cdp import CHROMIUM, Page
from tests.servers import free_port, running

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(CHROMIUM is None, reason="Debian chromium is not installed (.ci/run installs it)")]
REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
EXPERIMENT = "landing"


def _cli(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """``python -m rag_bench.cli`` of this checkout (not the console script's installed copy)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("MLFLOW_TRACKING_URI", None)
    return subprocess.run([sys.executable, "-m", "rag_bench.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=900)


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    """The sweep's output root, its leaderboard (``leaderboard --format json``: ``sort_by`` and the
    rows best first) and the URL of a server on its store."""
    root = tmp_path_factory.mktemp("landing")
    out = root / "exp"
    done = _cli(["run", "-m", "chunker=fixed,sentence,section", f"output.root={out}", f"experiment.name={EXPERIMENT}"],
                root)
    assert done.returncode == 0, done.stderr[-3000:]
    board = _cli(["leaderboard", str(out / EXPERIMENT), "--format", "json"], root)
    assert board.returncode == 0, board.stderr[-2000:]
    leaderboard = json.loads(board.stdout)
    uri = f"http://127.0.0.1:{free_port()}"
    cmd = [str(BIN / "mlflow"), "server", "--backend-store-uri", f"sqlite:///{out / 'mlflow.db'}", "--host",
           "127.0.0.1", "--port", uri.rsplit(":", 1)[1], "--workers", "1"]
    env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
    with running(cmd, uri + "/health", root / "server.log", cwd=root, env=env):
        yield out, leaderboard, uri


def _text(page: Page) -> str:
    return str(page.eval("document.body ? document.body.innerText : ''"))


def _wait_text(page: Page, *needles: str, timeout: float = 60) -> str:
    deadline = time.monotonic() + timeout
    while True:
        text = _text(page)
        if all(n in text for n in needles):
            return text
        if time.monotonic() > deadline:
            raise AssertionError(f"not on the page within {timeout} s: {[n for n in needles if n not in text]}\n"
                                 f"{page.eval('location.href')}\n{text[:3000]}")
        time.sleep(0.25)


def _click(page: Page, selector: str, text: str) -> None:
    """Click the element matching ``selector`` whose text is ``text``, as a user would."""
    found = page.eval(f"""(() => {{
        const e = [...document.querySelectorAll({json.dumps(selector)})]
            .find(e => e.textContent.trim() === {json.dumps(text)});
        if (!e) return false;
        e.click();
        return true;
    }})()""")
    assert found, f"no {selector} {text!r} on {page.eval('location.href')}"


def _open_experiment(page: Page, uri: str, *, model_training: bool) -> None:
    """MLflow's home page, the workflow switch (when asked), then the experiment as listed there."""
    page.send("Page.navigate", url=uri + "/")
    _wait_text(page, "Recent Experiments", EXPERIMENT)
    if model_training:
        _click(page, "[role=button]", "Model training")
        page.wait("localStorage.getItem('mlflow.workflowType_v1') === '\"machine_learning\"'")
    _click(page, "a", EXPERIMENT)


def _rows(page: Page) -> list[str]:
    """The run names of the Runs table, top to bottom."""
    rows = page.eval("""JSON.stringify([...document.querySelectorAll('.ag-pinned-left-cols-container .ag-row')]
        .sort((a, b) => Number(a.getAttribute('row-index')) - Number(b.getAttribute('row-index')))
        .map(r => r.querySelector('[col-id="attributes.`Run Name`"]'))
        .filter(c => c).map(c => c.innerText.trim()))""")
    return [r.splitlines()[-1] for r in json.loads(rows)]


def _cells(page: Page, column: str) -> list[str]:
    """The values of a column of the Runs table, top to bottom."""
    return json.loads(page.eval(f"""JSON.stringify([...document.querySelectorAll('.ag-center-cols-container .ag-row')]
        .sort((a, b) => Number(a.getAttribute('row-index')) - Number(b.getAttribute('row-index')))
        .map(r => (r.querySelector({json.dumps(f'[col-id="metrics.`{column}`"]')}) || {{innerText: ''}}).innerText.trim()))"""))


def _follow_view_link(page: Page) -> None:
    """The description's link (it opens a new tab: its address is loaded here)."""
    href = page.eval("""(() => { const a = [...document.querySelectorAll('a')]
        .find(a => a.textContent.trim() === 'Open the cells, best first'); return a ? a.href : null; })()""")
    assert href and "viewStateShareKey=rag_bench" in href, href
    page.send("Page.navigate", url=href)


def _assert_ranked_view(page: Page, leaderboard: dict) -> None:
    """The saved view: the cells only, in the leaderboard's order, with its values."""
    from rag_bench.tracking.view import display

    rows, key = leaderboard["rows"], leaderboard["sort_by"]
    labels = [row["label"] for row in rows]
    _wait_text(page, "rank", "primary", "primary.ci_lo", "primary.ci_hi", *labels)
    page.wait(f"document.querySelectorAll('.ag-pinned-left-cols-container .ag-row').length === {len(labels)}")
    assert _rows(page) == labels  # best first, the parent run not among them
    assert _cells(page, "rank") == [str(i + 1) for i in range(len(labels))]
    assert [float(v) for v in _cells(page, "primary")] == [display(row[key]) for row in rows]
    assert [float(v) for v in _cells(page, "primary.ci_lo")] == [display(row["ci_lo"]) for row in rows]
    assert [float(v) for v in _cells(page, "primary.ci_hi")] == [display(row["ci_hi"]) for row in rows]
    headers = json.loads(page.eval("JSON.stringify([...document.querySelectorAll('.ag-header-cell')]"
                                   ".map(h => h.innerText.trim()))"))
    assert [h for h in headers if h.startswith("failures.")], headers


def test_a_model_training_user_lands_on_the_cells(sweep, tmp_path):
    out, leaderboard, uri = sweep
    labels = [row["label"] for row in leaderboard["rows"]]
    with Page(tmp_path / "profile", size="1600,1000") as page:
        _open_experiment(page, uri, model_training=True)
        text = _wait_text(page, *labels, "Open the cells, best first")
        assert "/runs" in page.eval("location.hash")
        # The cells are rows of the landing view, under their sweep's parent (expanded), which is
        # named after the experiment.
        rows = _rows(page)
        assert sorted(r for r in rows if r in labels) == sorted(labels)
        assert any(r.startswith(f"{EXPERIMENT} 20") for r in rows), rows
        assert f"{len(labels)} cells ranked by {leaderboard['sort_by']}" in text
        _follow_view_link(page)
        _assert_ranked_view(page, leaderboard)


def test_a_genai_user_lands_one_click_from_the_cells(sweep, tmp_path):
    out, leaderboard, uri = sweep
    with Page(tmp_path / "profile", size="1600,1000") as page:
        _open_experiment(page, uri, model_training=False)
        text = _wait_text(page, "Open the cells, best first")
        assert "/overview" in page.eval("location.hash")  # MLflow's GenAI landing, whatever the experiment
        best = leaderboard["rows"][0]
        assert f"{len(leaderboard['rows'])} cells ranked by {leaderboard['sort_by']}; best: {best['label']}" in text
        _follow_view_link(page)
        _assert_ranked_view(page, leaderboard)
        assert "Traces" in _text(page)  # the traces: one tab away
