"""examples/ci/rag-bench.yml: the GitHub Actions workflow a team copies. Its steps are read from the
YAML and every one that calls rag-bench is run as the runner would run it (bash -eo pipefail, the
workflow's env, a job summary file), on the demo dataset with a small grid; then the exit codes, the
JUnit file, the job summary and the files the upload step names are checked."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from rag_bench.runner.config import CONF_DIR, DEMO_DATASET
from tests.conftest import REPO

pytestmark = pytest.mark.slow
WORKFLOW = REPO / "examples" / "ci" / "rag-bench.yml"
SMALL_GRID = "chunker=fixed,section retriever=bm25"  # 2 cells, no model to load


def _expression(text: str, env: dict[str, str]) -> str:
    """``${{ env.NAME }}`` as GitHub substitutes it (the only expression the steps' paths use)."""
    return re.sub(r"\$\{\{\s*env\.(\w+)\s*\}\}", lambda m: env[m.group(1)], text)


def _steps() -> tuple[dict, list[dict]]:
    doc = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    (job,) = doc["jobs"].values()
    assert job["defaults"]["run"]["shell"] == "bash"  # -eo pipefail: the gate's exit code survives `| tee`
    return doc["env"], job["steps"]


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    """A repository as a team would have it: the policy copied from rag_bench's conf/gate/, and
    ``rag-bench`` on PATH running this checkout's code."""
    root = tmp_path_factory.mktemp("repo")
    (root / "conf" / "gate").mkdir(parents=True)
    shutil.copy(CONF_DIR / "gate" / "release.yaml", root / "conf" / "gate" / "release.yaml")
    (root / "conf" / "gate" / "strict.yaml").write_text("thresholds:\n  generation/correct: {min: 0.99}\n")
    bin_dir = root / ".bin"
    bin_dir.mkdir()
    shim = bin_dir / "rag-bench"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m rag_bench.cli "$@"\n')
    shim.chmod(0o755)
    return root


def _run(script: str, root: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    full = {**{k: v for k, v in os.environ.items() if k not in ("MLFLOW_TRACKING_URI", "RAG_BENCH_PROGRESS")},
            **env, "PATH": f"{root / '.bin'}{os.pathsep}{os.environ['PATH']}", "PYTHONPATH": str(REPO),
            "GITHUB_STEP_SUMMARY": str(root / "summary.md")}
    return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script], cwd=root, env=full,
                          capture_output=True, text=True, timeout=900)


def test_the_workflow_runs_its_rag_bench_commands_and_gates_the_best_cell(workspace):
    from rag_bench.cells import experiment_cells
    from rag_bench.decision import decide

    env, steps = _steps()
    env = {**{k: str(v) for k, v in env.items()}, "DATASET": str(DEMO_DATASET), "GRID": SMALL_GRID,
           "RAG_BENCH_CACHE": os.environ["RAG_BENCH_CACHE"]}  # the session's cache (conftest), not the user's
    runs = [s for s in steps if "run" in s]
    ours = [s for s in runs if "rag-bench " in s["run"]]
    install = [s for s in runs if s not in ours]
    assert [s["name"] for s in install] == ["Install rag_bench"]
    assert '--index-url https://download.pytorch.org/whl/cpu' in install[0]["run"] and '"$RAG_BENCH"' in install[0]["run"]
    assert [s["name"] for s in ours] == ["Check the dataset", "Run the sweep", "Leaderboard", "Report",
                                         "Gate the best cell"]
    for step in ours:
        done = _run(step["run"], workspace, env)
        assert done.returncode == 0, f"{step['name']}: {done.stdout[-2000:]}\n{done.stderr[-3000:]}"
        assert "\r" not in done.stderr and "Traceback" not in done.stderr, done.stderr[-2000:]  # a clean CI log

    # The cell it gated is the leaderboard's first: decide.rank by decide.primary_measure.
    exp = workspace / "experiments" / env["EXPERIMENT"]
    cells = experiment_cells(exp, records=False)
    assert len(cells) == 2
    best = decide.rank(cells, decide.primary_measure(cells))[0]
    suite = ET.parse(workspace / "reports" / "gate.xml").getroot()
    about = {p.get("name"): p.get("value") for p in suite.find("properties")}
    assert about["cell_id"] == best.cell_id and about["verdict"] == "pass"
    assert about["picked"].startswith(f"--cell best: the best of 2 cells by {decide.primary_measure(cells)}")
    cases = suite.findall("testcase")
    assert suite.get("failures") == "0" and suite.get("errors") == "0" and int(suite.get("tests")) == len(cases) >= 10
    hit = next(c for c in cases if c.get("name") == "retrieval/hit@5 >= 0.8")
    props = {p.get("name"): p.get("value") for p in hit.find("properties")}
    assert float(props["value"]) == pytest.approx(best.metric("retrieval/hit@5"), abs=1e-4)
    assert props["limit"] == "0.8" and props["result"] == "pass" and props["n"] == str(best.metrics["n"]["retrieval/hit@5"])
    low, high = best.metrics["ci"]["retrieval/hit@5"]
    assert (float(props["ci95_low"]), float(props["ci95_high"])) == pytest.approx((low, high), abs=1e-5)
    assert hit.find("system-out").text.startswith(f"pass: retrieval/hit@5 >= 0.8: value {props['value']} (95% CI [")

    summary = (workspace / "summary.md").read_text()
    assert "## rag-bench gate: PASS" in summary and "| retrieval/hit@5 >= 0.8 |" in summary
    assert f"({best.cell_id}), picked by --cell best" in summary
    board = summary.split("## rag-bench gate")[0]  # the leaderboard's Markdown table, best first, before the verdict
    assert board.startswith("Best: ")  # the verdict first, then the table, best first
    table = [line for line in board.splitlines() if line.startswith("|")]
    header, first = ([c.strip() for c in row.strip("|").split("|")] for row in (table[0], table[2]))
    assert header[:2] == ["cell", "≈best"] and first[header.index("id")] == best.cell_id

    # Everything the upload step names is there.
    (upload,) = [s for s in steps if s.get("uses", "").startswith("actions/upload-artifact")]
    for path in _expression(upload["with"]["path"], env).split():
        assert (workspace / path).exists(), path
    assert (workspace / "reports" / env["EXPERIMENT"] / "index.html").is_file()
    (publish,) = [s for s in steps if s.get("uses", "").startswith("mikepenz/action-junit-report")]
    assert publish["with"]["report_paths"] == "reports/gate.xml" and publish["if"] == "${{ !cancelled() }}"

    # A policy the best cell fails: the step fails with the gate's exit code 1, the JUnit says which rule.
    gate = next(s for s in ours if s["name"] == "Gate the best cell")
    failed = _run(gate["run"], workspace, {**env, "POLICY": "conf/gate/strict.yaml"})
    assert failed.returncode == 1, failed.stderr[-2000:]
    suite = ET.parse(workspace / "reports" / "gate.xml").getroot()
    (case,) = suite.findall("testcase")
    assert suite.get("failures") == "1" and case.find("failure") is not None
    assert case.find("system-out").text.startswith("fail: generation/correct >= 0.99: value ")
    assert "## rag-bench gate: FAIL" in (workspace / "summary.md").read_text()
