"""search=optuna through the real CLI (tracking=none): every trial is the grid's cell (same id,
config.yaml, metrics.json figures, DONE); on the demo grid (+experiment=demo, 36 cells) two fresh
runs with the same seed make the same trials, and after kill -9 the same command resumes to the
same trials without recomputing the finished ones; several objectives search with NSGA-II and the
printed Pareto front is the trials' non-dominated cells; a cost objective without prices exits 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.search.sweeps import kill_after_done, setting, summary
from tests.search.test_halving_cli import cells, figures

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]
GRID = ["chunker=fixed,section", "retriever=bm25,dense", "pipeline.k=1,5"]  # 8 cells
DEMO = ["+experiment=demo"]  # 36 cells: chunker 3 x retriever 3 x reranker 2 x k 2


def command(out: Path, grid: list[str], *extra: str) -> list[str]:
    return [sys.executable, "-m", "rag_bench.cli", "run", "-m", *grid, "tracking=none", f"output.root={out}",
            "experiment.name=o", "search=optuna", *extra]


def env(failpoint: str | None = None) -> dict[str, str]:
    found = {k: v for k, v in os.environ.items() if k not in ("MLFLOW_TRACKING_URI", "RAG_BENCH_FAILPOINT")}
    if failpoint:
        found["RAG_BENCH_FAILPOINT"] = failpoint
    return found


def run(out: Path, grid: list[str], *extra: str) -> subprocess.CompletedProcess[str]:
    # this checkout's rag_bench (python -m from the repository), not an installed copy's
    return subprocess.run(command(out, grid, *extra), cwd=REPO, env=env(), capture_output=True, text=True,
                          timeout=900)


def trials(found: dict) -> list[tuple]:
    return [(t["number"], t["params"], t["cell"], t["values"]) for t in found["trials"]]



@pytest.fixture(scope="module")
def grid(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("grid")
    done = subprocess.run([sys.executable, "-m", "rag_bench.cli", "run", "-m", *GRID, "tracking=none",
                           f"output.root={out}", "experiment.name=o"], cwd=REPO, env=env(), capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return out / "o"


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("demo")
    done = run(out, DEMO, "search.n_trials=8", "search.seed=0")
    assert done.returncode == 0, done.stderr[-3000:]
    return out / "o", done.stdout


def test_every_trial_is_the_grids_cell_and_the_best_is_the_leaderboards_first(grid, tmp_path):
    from rag_bench.decision import decide
    from rag_bench.search.halving import stored_cell

    done = run(tmp_path, GRID, "search.n_trials=6")
    assert done.returncode == 0, done.stderr[-3000:]
    exp = tmp_path / "o"
    found, theirs, mine = summary(exp), cells(grid), cells(exp)
    assert len(theirs) == 8 and found["sampler"] == "TPE" and len(found["trials"]) == 6
    assert set(mine) == {t["cell"] for t in found["trials"]} and set(mine) <= set(theirs)
    for t in found["trials"]:  # the cell the sampler asked for: its settings are the trial's values
        assert all(setting(mine[t["cell"]], k) == v for k, v in t["params"].items())
    for cid, folder in mine.items():  # the grid's cell: same id, config, figures, DONE
        assert (folder / "DONE").is_file()
        assert figures(json.loads((folder / "metrics.json").read_text())) == \
            figures(json.loads((theirs[cid] / "metrics.json").read_text()))
        assert (folder / "config.yaml").read_text().replace(str(exp.parent), "ROOT") == \
            (theirs[cid] / "config.yaml").read_text().replace(str(grid.parent), "ROOT")
    (objective,) = found["objectives"]
    stored = [stored_cell(f) for f in mine.values()]
    assert objective["key"] == decide.primary_measure(stored)
    for t in found["trials"]:  # the values told are the cell's stored figures
        assert t["values"] == [decide.value_of(stored_cell(mine[t["cell"]]), objective["key"])]
    assert found["best"] == [decide.rank(stored, objective["key"])[0].cell_id]
    (best,) = [line for line in done.stdout.splitlines() if line.startswith("  best: ")]
    top = found["best"][0]
    assert best.endswith(f"-> {top} ({decide.value_of(stored_cell(mine[top]), objective['key']):.4g})")
    assert (f"cells: 6 trials, {len(mine)} distinct cells ({len(mine)} computed now) of the full grid's 8"
            in done.stdout)


def test_same_seed_same_trials_on_the_demo_grid(demo, tmp_path):
    exp, stdout = demo
    first = summary(exp)
    assert first["grid_cells"] == 36 and len(first["trials"]) == 8
    again = run(tmp_path, DEMO, "search.n_trials=8", "search.seed=0")
    assert again.returncode == 0, again.stderr[-3000:]
    assert trials(summary(tmp_path / "o")) == trials(first)  # fresh run, same seed: same cells, same values
    lines = [line for line in stdout.splitlines() if line.startswith("  trial ")]
    assert len(lines) == 8 and lines == [line for line in again.stdout.splitlines() if line.startswith("  trial ")]


def test_an_optuna_sweep_killed_mid_way_resumes_without_recomputing(demo, tmp_path):
    first = summary(demo[0])
    distinct = first["distinct"]
    assert distinct >= 4
    out = tmp_path / "out"
    # every cell pauses before its DONE; kill -9 the whole sweep once two trials' cells are done
    finished = kill_after_done(command(out, DEMO, "search.n_trials=8", "search.seed=0"), env("before_done:sleep=2"), out / "o")
    assert 2 <= len(finished) < distinct
    again = run(out, DEMO, "search.n_trials=8", "search.seed=0")
    assert again.returncode == 0, again.stderr[-3000:]
    found = summary(out / "o")
    assert trials(found) == trials(first)  # the same trials as the uninterrupted run
    assert found["computed"] == distinct - len(finished)  # the finished trials were read, not recomputed
    assert all((out / "o" / cid / "DONE").stat().st_mtime_ns == t for cid, t in finished.items())
    rerun = run(out, DEMO, "search.n_trials=8", "search.seed=0")  # everything done: nothing computed
    assert rerun.returncode == 0 and summary(out / "o")["computed"] == 0
    assert trials(summary(out / "o")) == trials(first)
    assert f"cells: 8 trials, {distinct} distinct cells (0 computed now) of the full grid's 36" in rerun.stdout


def test_primary_and_latency_search_with_nsga2_and_print_the_pareto_front(grid, tmp_path):
    from rag_bench.decision import decide
    from rag_bench.search.halving import stored_cell
    from rag_bench.search.optuna_search import dominates

    done = run(tmp_path, GRID, "search.n_trials=8", "search.objectives=[primary,latency]")
    assert done.returncode == 0, done.stderr[-3000:]
    exp = tmp_path / "o"
    found = summary(exp)
    assert found["sampler"] == "NSGA-II" and [o["name"] for o in found["objectives"]] == ["primary", "latency"]
    primary, latency = (o["key"] for o in found["objectives"])
    # read each trial cell's figures from its folder, not from the summary
    figs = {}
    for cid in {t["cell"] for t in found["trials"]}:
        metrics = json.loads((exp / cid / "metrics.json").read_text())
        lat = metrics["latency"]
        ms = lat["e2e_p50_ms"] if latency.endswith("e2e_p50_ms") else \
            lat["retrieve_p50_ms"] + (lat.get("rerank_p50_ms") or 0.0)
        figs[cid] = (decide.value_of(stored_cell(exp / cid), primary), ms)
    front = {cid for cid, v in figs.items() if not any(dominates(o, v, (True, False)) for c, o in figs.items()
                                                       if c != cid)}
    assert set(found["pareto"]) == front and front
    assert f"Pareto front ({len(front)} cell" in done.stdout
    for cid in front:
        assert any(line.strip().endswith(f"-> {cid} [{figs[cid][0]:.4g}, {figs[cid][1]:.4g}]")
                   for line in done.stdout.splitlines())


def test_a_cost_objective_without_prices_exits_2_with_a_fix(tmp_path):
    done = run(tmp_path, GRID, "search.n_trials=2", "search.objectives=[primary,cost]")
    assert done.returncode == 2
    assert "search.objectives has cost but the config sets no price" in done.stderr and "fix:" in done.stderr
    assert not list((tmp_path / "o").glob("*/DONE"))  # refused before any cell ran


def test_a_misspelt_objective_exits_2_before_any_cell_with_the_measures_near_it(tmp_path):
    """A typo (a letter O for a zero) ran every trial blind, each told no value, and exited 0."""
    done = run(tmp_path, GRID, "search.n_trials=2", "search.objectives=[retrieval/ndcg@1O]")
    assert done.returncode == 2, done.stderr[-3000:]
    assert "search.objectives: 'retrieval/ndcg@1O' is not a measure of rag_bench" in done.stderr
    assert "did you mean retrieval/ndcg@1 or retrieval/ndcg@10" in done.stderr and "fix:" in done.stderr
    assert not (tmp_path / "o").exists() or not list((tmp_path / "o").glob("*/metrics.json"))  # no cell ran
