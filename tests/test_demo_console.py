"""The demo's own console, `rag-bench run -m +experiment=demo` into a pipe (as `make demo | tee`, a CI log):
no warning on the demo's own data -- what the run shows about the demo set (clarify questions the stand-in
cannot ask, the planted hidden text, the stand-in's refusals) is a finding of the verdict and the report --
and no line over 120 characters. The README's Quickstart and "Reading the verdict" quote this run's lines:
they are checked against it here (re-run and paste the lines this test prints when the demo changes)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.slow
WIDTH = 120


def _unwrapped(lines: list[str]) -> list[str]:
    """The closing lines as stated: wrapped continuations (indented) joined back."""
    out: list[str] = []
    for line in lines:
        if line.startswith("  ") and out and out[-1] and not out[-1].startswith("(n: "):
            out[-1] += " " + line.strip()
        else:
            out.append(line)
    return out


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> subprocess.CompletedProcess[str]:
    tmp = tmp_path_factory.mktemp("demo")
    env = {k: v for k, v in os.environ.items() if k not in ("MLFLOW_TRACKING_URI", "COLUMNS", "RAG_BENCH_PROGRESS")}
    done = subprocess.run([str(Path(sys.executable).parent / "rag-bench"), "run", "-m", "+experiment=demo",
                           f"output.root={tmp / 'experiments'}"], cwd=tmp, env=env, capture_output=True, text=True,
                          timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]
    done.experiment = tmp / "experiments" / "demo"  # type: ignore[attr-defined]
    return done


def test_the_demo_console_has_no_warning_and_no_line_over_120_characters(demo):
    lines = (demo.stdout + demo.stderr).splitlines()
    assert [line for line in lines if "warning" in line.lower()] == [], "a warning on the demo's own data"
    assert [line for line in lines if len(line) > WIDTH] == [], f"a line over {WIDTH} characters"
    closing = _unwrapped(demo.stdout.splitlines())
    findings = [line for line in closing if line.startswith("finding: ")]
    # the findings about the demo set, said once by the verdict (and the report's header), not per cell
    assert len(findings) == 3, findings
    for said in ("the generator refused", "expect a clarifying question", "hidden text surfaced"):
        assert sum(said in f for f in findings) == 1, said
    cells = [line for line in lines if re.match(r"cell \w+ done: ", line)]
    assert len(cells) == 36 and not [c for c in cells if "…" in c], "a cell's name was cut"


def test_the_reports_header_states_the_findings(demo, tmp_path):
    """The findings the console no longer warns about are in the report's first lines, beside the verdict."""
    import html

    done = subprocess.run([str(Path(sys.executable).parent / "rag-bench"), "report", str(demo.experiment), "--out",
                           str(tmp_path / "reports"), "--no-mlflow"], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    page = html.unescape((tmp_path / "reports" / "demo" / "index.html").read_text(encoding="utf-8"))
    head = page[:page.index("<section")]
    for said in ("the generator refused", "expect a clarifying question", "hidden text surfaced"):
        assert said in head, said


def test_the_readme_quotes_this_run(demo):
    """The figures the README quotes are this run's (they drifted: n=61/81 against 65/62/82 printed)."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    quick = " ".join(readme.split("## Quickstart", 1)[1].split("\n## ", 1)[0].split())
    printed = _unwrapped(demo.stdout.splitlines())
    (cell,) = [line.split(" done: ", 1)[1] for line in printed
               if re.match(r"cell \w+ done: section hybrid rr=none k=5 \| ", line)]
    (legend,) = [line for line in printed if line.startswith("(n: ")]
    (best,) = [line for line in printed if line.startswith("Best: ")]
    quoted = re.search(r"`cell \w+ done: ([^`]+)`", quick)
    assert quoted is not None and quoted.group(1) == cell, f"README: `cell <id> done: {cell}`"
    assert f"`{legend}`" in quick, f"README: `{legend}`"
    assert f"`{best.removesuffix('.')}`" in quick, f"README Quickstart: `{best.removesuffix('.')}`"
    block = readme.split("## Reading the verdict", 1)[1].split("```", 2)[1]
    assert " ".join(block.split()) == best, f"README 'Reading the verdict': {best}"
