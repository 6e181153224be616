"""One primary measure and one best cell everywhere (rag_bench.decision.decide): on a sweep whose
best cells tie exactly, the leaderboard, the report, the sweep's MLflow parent run, compare's
default pair and the notebook name the same best cell, under the same name."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from rag_bench.decision import decide
from rag_bench.errors import ConfigError
from tests.conftest import compose_config
from tests.reporting.conftest import execute_notebook

BIN = Path(sys.executable).parent


def test_primary_key_is_checked_with_did_you_mean():
    from rag_bench.runner.config import validate

    validate(compose_config(["experiment.primary=retrieval/hit@5"]))
    with pytest.raises(ConfigError, match=r"experiment\.primary: 'generation/corect'.*did you mean generation/correct"):
        validate(compose_config(["experiment.primary=generation/corect"]))
    with pytest.raises(ConfigError, match="experiment.primary"):  # descriptive: no better direction
        validate(compose_config(["experiment.primary=generation/answer_words"]))
    # not part of the cell id: the same cell whatever measure ranks the experiment
    from rag_bench.runner.config import cell_id

    assert cell_id(compose_config([]), "fp") == cell_id(compose_config(["experiment.primary=retrieval/mrr"]), "fp")


def test_tie_rule_prefers_the_cheaper_cell_then_the_name(tmp_path):
    from rag_bench.cells import Cell

    def cell(cid: str, k: int, correct: float, latency: float, tokens: float) -> Cell:
        metrics = {"generation": {"correct": correct}, "latency": {"retrieve_p50_ms": latency},
                   "cost": {"generator_tokens": tokens}}
        return Cell(cid, tmp_path / cid, {"pipeline": {"k": k}}, metrics, {})

    cells = [cell("a1", 3, 0.5, 0.1, 90.0), cell("b2", 5, 0.5, 1.0, 50.0), cell("c3", 7, 0.4, 0.1, 10.0),
             cell("d4", 9, 0.5, 2.0, 50.0)]
    ranked = decide.rank(cells, "generation/correct")
    # fewer tokens first; k=5 before k=9 by name -- latency (measured, noisy) is never read
    assert [c.cell_id for c in ranked] == ["b2", "d4", "a1", "c3"]
    assert decide.tie_note(len(decide.tied(ranked, "generation/correct")), "generation/correct", 0.5).startswith(
        "3 cells tied at 0.500 on generation/correct")
    assert decide.primary_measure(cells) == "generation/correct"
    assert decide.primary_measure([Cell("x", tmp_path, {}, {"retrieval": {"ndcg@10": 0.3}}, {})]) == "retrieval/ndcg@10"


def test_auto_ranks_a_cell_of_today_without_the_answer_scorer_by_correct_and_says_why(tmp_path):
    """AUTO_ORDER's generation/correct is no fallback for old cells: a cell computed today with
    eval.scorers leaving the answer scorer out has generation/correct and no answer/correct_all.
    The reason said "these cells predate answer/correct_all" of it, which was false."""
    from omegaconf import OmegaConf

    from rag_bench.cells import Cell
    from rag_bench.data.loader import load_dataset
    from rag_bench.memo import SharedWork
    from rag_bench.runner.main import compute
    from tests.conftest import TINY

    cfg = compose_config(["tracking=none", f"dataset.path={TINY}", "chunker=section", "retriever=bm25",
                          "generator=extractive", "eval.bootstrap_resamples=20", "eval.scorers='retrieval,generation'"])
    result = compute(cfg, load_dataset(TINY), "c", SharedWork())
    assert "correct" in result.metrics["generation"] and "answer" not in result.metrics
    cell = Cell("c", tmp_path / "c", OmegaConf.to_container(cfg, resolve=True), result.metrics, {})
    assert decide.primary_measure([cell]) == "generation/correct"
    reason = decide.reason_of([cell], "generation/correct")
    assert "their eval.scorers leave out the answer scorer" in reason and "predate" not in reason


def test_tie_rule_prefers_the_faster_parse_before_fewer_tokens(tmp_path):
    """Issue 56 item 4: parse seconds are a cost -- two parsers tied on the measure, the slower one
    (37 s against 1.2 s) never ranks first; seconds within a factor of two do not decide (a cached
    parse keeps what it cost, a fresh one measures again), and cells without document files rank as
    before."""
    from rag_bench.cells import Cell

    def cell(cid: str, parser: str, seconds: float | None, tokens: float) -> Cell:
        metrics = {"generation": {"correct": 0.5}, "cost": {"generator_tokens": tokens},
                   **({"parse": {"seconds": seconds}} if seconds is not None else {})}
        return Cell(cid, tmp_path / cid, {"parser": {"name": parser}}, metrics, {})

    slow, fast = cell("a1", "pdfplumber", 37.0, 50.0), cell("b2", "pymupdf4llm", 1.2, 90.0)
    assert [c.cell_id for c in decide.rank([slow, fast], "generation/correct")] == ["b2", "a1"]
    near = cell("c3", "pypdf", 1.9, 60.0)  # 1.2 s and 1.9 s: the same cost class, tokens decide
    assert [c.cell_id for c in decide.rank([fast, near], "generation/correct")] == ["c3", "b2"]
    plain = [cell("d4", "auto", None, 90.0), cell("e5", "auto", None, 50.0)]
    assert [c.cell_id for c in decide.rank(plain, "generation/correct")] == ["e5", "d4"]
    assert "faster parse" in decide.tie_note(2, "generation/correct", 0.5, parsed=True)
    assert "parse" not in decide.tie_note(2, "generation/correct", 0.5)


def test_a_cell_is_named_among_its_experiment_as_the_leaderboard_names_it(demo_cells):
    from rag_bench.decision.decide import cell_name, pair_names
    from rag_bench.reporting.leaderboard import load_cells

    frame = load_cells(demo_cells["baseline"].path.parent)
    for cell in demo_cells.values():
        assert cell_name(cell) == dict(zip(frame["cell"], frame["label"]))[cell.cell_id]
    a, b = pair_names(demo_cells["baseline"], demo_cells["baseline"])  # the same name twice: told apart
    assert a == b and demo_cells["baseline"].cell_id in a


@pytest.mark.slow
def test_a_tie_names_the_same_best_cell_everywhere(tmp_path):
    """section k=3 and k=5 tie exactly on correct (the demo's extractive answers do not change
    between them here): every view names the same first cell, by the tie rule."""
    root = tmp_path / "exp"
    env = {**os.environ, "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / 'mlflow.db'}"}
    env.pop("RAG_BENCH_PARENT_RUN_ID", None)

    def rag_bench(*args: str) -> subprocess.CompletedProcess:
        done = subprocess.run([str(BIN / "rag-bench"), *args], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        return done

    # ranked by correct as configured (auto would rank the stand-in's cells by context or refusal)
    sweep = rag_bench("run", "-m", "chunker=section,fixed", "pipeline.k=3,5", f"output.root={root}",
                      "experiment.name=ties", "experiment.primary=generation/correct")
    exp = root / "ties"
    from rag_bench.cells import experiment_cells

    cells = experiment_cells(exp, records=False)
    names = decide.names_of(cells)
    ranked = decide.rank(cells, "generation/correct", names)
    tied = decide.tied(ranked, "generation/correct")
    assert len(tied) >= 2  # the grid really ties at the top
    best = names[ranked[0].cell_id]
    assert best.startswith("section ")

    # leaderboard: the sweep's closing table and `rag-bench leaderboard`, its first row
    assert f"ranked by generation/correct; {len(tied)} cells tied at" in sweep.stdout
    assert f"Best: {best} (generation/correct" in sweep.stdout  # the closing verdict
    board = json.loads(rag_bench("leaderboard", str(exp), "--format", "json").stdout)
    assert board["sort_by"] == "generation/correct" and board["rows"][0]["label"] == best
    assert {r["label"] for r in board["rows"]} == set(names.values())

    # MLflow: the parent run carries the primary measure and names the same best cell; cell runs the same names
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=env["MLFLOW_TRACKING_URI"])
    exp_id = client.get_experiment_by_name("ties").experiment_id
    parent = client.search_runs([exp_id], filter_string="tags.`rag_bench.role` = 'sweep'")[0]
    assert parent.data.params["best.label"] == best and parent.data.params["sweep.primary"] == "generation/correct"
    assert parent.data.metrics["primary"] == pytest.approx(ranked[0].metric("generation/correct"))
    assert "cells tied at" in parent.data.tags["mlflow.note.content"]
    assert f"Best: {best} (generation/correct" in parent.data.tags["mlflow.note.content"]
    runs = client.search_runs([exp_id], filter_string="tags.`rag_bench.role` = 'cell'")
    assert {r.info.run_name for r in runs} == set(names.values())

    # report: the header's best cell (and the tie said in its leaderboard section)
    from rag_bench.reporting.report import render_report

    page = render_report(exp, out_root=tmp_path / "reports", log_to_mlflow=False).read_text(encoding="utf-8")
    assert re.search(r"data-verdict='Best: ([^(]+) \(", page).group(1) == best
    assert f"{len(tied)} cells tied at" in page

    # compare's default pair: the baseline (defaults: section, k=5) against the same best cell
    pair = subprocess.run([str(BIN / "rag-bench"), "compare", str(exp)], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=600)
    defaults = decide.defaults_cell(cells)
    assert names[defaults.cell_id] == "section k=5"
    if defaults.cell_id == ranked[0].cell_id:
        assert pair.returncode == 2 and "is the best cell" in pair.stderr
    else:
        assert pair.returncode == 0, pair.stderr
        table = pair.stdout[pair.stdout.index("A: "):].splitlines()  # after the experiment's verdict
        assert table[:2] == ["A: section k=5", f"B: {best}"]
        assert table[2].startswith("verdict: ") and "generation/correct" in pair.stdout

    # notebook: executed as a reader would, it names the same best cell
    nb = execute_notebook(exp, tmp_path)
    text = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert f"Best: {best} (generation/correct" in text
    if defaults.cell_id != ranked[0].cell_id:  # its best-vs-baseline comparison, with the same names
        assert "the baseline section k=5 (" in text and f"Conclusion: {best} ranks first" in text


def test_tie_rule_tokens_come_from_metrics_and_equal_the_records_mean(demo_cells, tmp_path, monkeypatch):
    """metrics.json cost/generator_tokens is the float the records' tokens_in + tokens_out mean
    gives (the value the tie rule read from every cell's records.parquet before), and the tie rule
    reads it without opening the records; a cell written before the figure existed is still read
    from its records."""
    import shutil

    from rag_bench import cells
    from rag_bench.cells import load_cell
    from rag_bench.evaluation import measures

    for cell in demo_cells.values():
        stored = cell.metric(measures.GENERATOR_TOKENS.key)
        from_records = cells._mean_tokens(cell.path)
        assert stored is not None and stored > 0 and stored == from_records
    # an older cell (no figure): from its records, as before
    old = tmp_path / "old"
    shutil.copytree(demo_cells["baseline"].path, old)
    metrics = json.loads((old / "metrics.json").read_text())
    del metrics["cost"][measures.GENERATOR_TOKENS.name]
    del metrics["format"]  # a cell of format 0: upgraded as it is read (issue 51, item 6)
    (old / "metrics.json").write_text(json.dumps(metrics))
    assert decide.tokens(load_cell(old, records=False)) == demo_cells["baseline"].metric(measures.GENERATOR_TOKENS.key)
    # the figure is read, not the records
    monkeypatch.setattr(cells, "_mean_tokens", lambda *a: pytest.fail("records.parquet read for the tie rule"))
    for cell in demo_cells.values():
        assert decide.tokens(cell) == cell.metric(measures.GENERATOR_TOKENS.key)
