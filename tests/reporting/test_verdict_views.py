"""Every view states the same verdict (rag_bench.decision.verdict): the sweep's closing console
lines, `rag-bench leaderboard` (text and JSON), the report's header, the sweep's MLflow parent run,
`rag-bench compare EXPERIMENT` and the executed notebook -- on the demo grid and on SQuAD 2.0
(squad2-normans), with the extractive stand-in ranked by context or refusal and the reason said."""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import SHARED
from tests.reporting.conftest import execute_notebook

BIN = Path(sys.executable).parent
SQUAD = SHARED / "datasets" / "squad2-normans"


def unwrapped(text: str) -> list[str]:
    """The sweep's closing lines as stated, their wrapped continuations (indented) joined back."""
    out: list[str] = []
    for line in text.splitlines():
        if line.startswith("  ") and out and out[-1]:
            out[-1] += " " + line.strip()
        else:
            out.append(line)
    return out


def _agree(tmp_path: Path, name: str, *grid: str) -> tuple[str, Path]:
    """Sweeps ``grid`` into experiment ``name`` and checks that every view states one verdict;
    returns the verdict's line and the experiment folder."""
    from mlflow.tracking import MlflowClient

    from rag_bench.decision.verdict import of_experiment

    root = tmp_path / "exp"
    env = {**os.environ, "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / 'mlflow.db'}",
           "RAG_BENCH_CACHE": str(tmp_path / "cache")}

    def rag_bench(*args: str) -> subprocess.CompletedProcess:
        done = subprocess.run([str(BIN / "rag-bench"), *args], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=1200)
        assert done.returncode == 0, done.stderr[-3000:]
        return done

    sweep = rag_bench("run", "-m", *grid, f"output.root={root}", f"experiment.name={name}")
    exp = root / name
    found = of_experiment(exp)
    line = found.text()
    assert line.startswith("Best: ") and "cells not significantly worse" in line and "baseline" in line

    # the sweep's closing lines: the reason, then the verdict, last (wrapped to 120 characters in a pipe)
    tail = unwrapped(sweep.stdout.rstrip())
    assert line + "." in tail[-6:] and any(t.startswith(f"Ranked by {found.measure}") for t in tail[-8:])
    # leaderboard: text and JSON
    board = rag_bench("leaderboard", str(exp)).stdout
    assert line + "." in board.splitlines()
    data = json.loads(rag_bench("leaderboard", str(exp), "--format", "json").stdout)
    assert data["verdict"]["text"] == line and data["rows"][0]["cell"] == found.best
    assert sum(r["not_worse"] for r in data["rows"]) == len(found.close)
    # the report's header, its first lines
    rag_bench("report", str(exp), "--out", str(tmp_path / "reports"))
    page = (tmp_path / "reports" / name / "index.html").read_text(encoding="utf-8")
    header = re.search(r"data-verdict='([^']+)'", page)
    assert header is not None and html.unescape(header.group(1)) == line
    assert page.index("data-verdict") < page.index("<section")  # before any section
    # the sweep's MLflow parent run
    client = MlflowClient(tracking_uri=env["MLFLOW_TRACKING_URI"])
    exp_id = client.get_experiment_by_name(name).experiment_id
    parent = client.search_runs([exp_id], filter_string="tags.`rag_bench.role` = 'sweep'")[0]
    assert line in parent.data.tags["mlflow.note.content"]
    assert parent.data.params["verdict.not_worse"] == str(len(found.close))
    # compare EXPERIMENT
    if found.versus is not None:
        assert line + "." in rag_bench("compare", str(exp)).stdout.splitlines()
    # the notebook, executed as a reader would
    nb = execute_notebook(exp, tmp_path)
    text = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert line + "." in text.splitlines() and "Conclusion: " in text
    return line, exp


@pytest.mark.slow
def test_the_demo_grid_states_one_verdict_everywhere(tmp_path):
    line, exp = _agree(tmp_path, "grid", "chunker=fixed,section", "retriever=bm25,hybrid", "pipeline.k=3,5")
    from rag_bench.decision.verdict import of_experiment

    found = of_experiment(exp)
    # the extractive generator is a stand-in: ranked by context or refusal, and the reason says so
    assert found.measure == "answer/context_all" and "is a stand-in for a model" in found.reason


@pytest.mark.slow
@pytest.mark.skipif(not SQUAD.is_dir(), reason=f"{SQUAD} is absent (the shared SQuAD 2.0 sample)")
def test_squad_states_one_verdict_and_counts_refusals(tmp_path):
    """On SQuAD 2.0 (112 of 208 unanswerable), the cell that answers most unanswerable questions is
    not ranked above one that refuses significantly more of them and is not significantly worse on
    the answerable ones."""
    import numpy as np
    import pandas as pd

    from rag_bench.cells import experiment_cells
    from rag_bench.decision import decide
    from rag_bench.decision.verdict import question_values
    from rag_bench.evaluation import measures
    from rag_bench.stats.paired import randomisation_p

    line, exp = _agree(tmp_path, "squad", f"dataset.path={SQUAD}", "chunker=section,sentence",
                       "retriever=bm25,dense,hybrid")
    cells = experiment_cells(exp)
    key = decide.primary_measure(cells)
    ranked = decide.rank(cells, key)
    column = measures.measure(key).column
    answerable = set(cells[0].records.loc[cells[0].records["answerable"], "qid"])

    def paired(a, b, name: str, keep) -> tuple[np.ndarray, np.ndarray]:
        both = pd.concat([question_values(a, name), question_values(b, name)], axis=1, join="inner").dropna()
        both = both[[keep(q) for q in both.index]]
        return both.iloc[:, 0].to_numpy(), both.iloc[:, 1].to_numpy()

    checked = 0
    for i, a in enumerate(ranked):
        for b in ranked[i + 1:]:  # a is ranked above b: b must not refuse better and answer no worse
            ra, rb = paired(a, b, measures.CORRECT_REFUSAL_RATE.column, lambda q: q not in answerable)
            xa, xb = paired(a, b, column, lambda q: q in answerable)
            refuses_better = rb.mean() > ra.mean() and randomisation_p(ra, rb) < 0.05
            answers_worse = xb.mean() < xa.mean() and randomisation_p(xa, xb) < 0.05
            checked += 1
            assert not (refuses_better and not answers_worse), (decide.cell_name(a), decide.cell_name(b))
    assert checked == len(cells) * (len(cells) - 1) // 2 == 15
