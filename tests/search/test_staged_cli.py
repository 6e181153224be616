"""search=staged through the real CLI on the demo set (tracking=none): every trial is the
grid's cell (same id, config.yaml, metrics.json figures), each stage varies one axis with the
earlier ones at their chosen value and the later ones at their default, the printed choice is the
best of each stage on the primary measure, and after kill -9 the same command resumes without
recomputing the finished trials."""

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
GRID = ["chunker=fixed,section", "retriever=bm25,dense", "pipeline.k=1,5"]  # 8 cells, stage order as typed
AXES = {"chunker": ("fixed", "section"), "retriever": ("bm25", "dense"), "pipeline.k": ("1", "5")}


def command(out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "rag_bench.cli", "run", "-m", *GRID, "tracking=none", f"output.root={out}",
            "experiment.name=s", *extra]


def env(failpoint: str | None = None) -> dict[str, str]:
    found = {k: v for k, v in os.environ.items() if k not in ("MLFLOW_TRACKING_URI", "RAG_BENCH_FAILPOINT")}
    if failpoint:
        found["RAG_BENCH_FAILPOINT"] = failpoint
    return found


def run(out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    # this checkout's rag_bench (python -m from the repository), not an installed copy's
    return subprocess.run(command(out, *extra), cwd=REPO, env=env(), capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def grid(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("grid")
    done = run(out)
    assert done.returncode == 0, done.stderr[-3000:]
    return out / "s"


@pytest.fixture(scope="module")
def staged(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("staged")
    done = run(out, "search=staged")
    assert done.returncode == 0, done.stderr[-3000:]
    return out / "s", done.stdout


def test_every_trial_is_the_grids_cell_and_the_printed_choice_is_each_stages_best(grid, staged):
    from rag_bench.decision import decide

    exp, stdout = staged
    found, theirs, mine = summary(exp), cells(grid), cells(exp)
    assert len(theirs) == 8 and set(mine) == set(found["trials"]) and set(mine) < set(theirs)
    for cid, folder in mine.items():  # the grid's cell: same id, config, figures, DONE
        assert (folder / "DONE").is_file()
        assert figures(json.loads((folder / "metrics.json").read_text())) == \
            figures(json.loads((theirs[cid] / "metrics.json").read_text()))
        assert (folder / "config.yaml").read_text().replace(str(exp.parent), "ROOT") == \
            (theirs[cid] / "config.yaml").read_text().replace(str(grid.parent), "ROOT")
    measure = found["measure"]
    chosen: dict[str, str] = {}
    assert [s["axis"] for s in found["stages"]] == list(AXES)  # pipeline order: chunker, retriever, k
    for number, (axis, values) in enumerate(AXES.items()):
        # the stage's cells in the grid: its axis varies, earlier axes at their choice, later at the default
        frozen = {**chosen, **{a: v[0] for a, v in list(AXES.items())[number + 1:]}}
        stage = {setting(f, axis): f for f in theirs.values() if all(setting(f, a) == v for a, v in frozen.items())}
        assert set(stage) == set(values) and {f.name for f in stage.values()} <= set(mine)
        value = {v: decide.value_of(_cell(f), measure) for v, f in stage.items()}
        best = found["stages"][number]["chosen"]
        ranked_first = max(value.values()) if decide.higher_is_better(measure) else min(value.values())
        assert value[best] == ranked_first, (axis, value, best)  # the best on the grid's own figures
        chosen[axis] = best
    assert found["chosen"] == chosen
    assert f"  chosen: {', '.join(f'{a}={v}' for a, v in chosen.items())}" in stdout
    assert f"cells: {len(mine)} trials ({len(mine)} computed now) of the full grid's 8" in stdout
    assert "cannot see interactions" in stdout
    finalists = " ".join(f"{a}={','.join(found['finalists'][a])}" for a in AXES)
    assert f"(top 2 per axis): rag-bench run -m tracking=none output.root={exp.parent} experiment.name=s {finalists}" \
        in stdout
    assert all(sorted(found["finalists"][a]) == sorted(v) for a, v in AXES.items())  # 2 values: both finalists


def _cell(folder: Path):
    from rag_bench.search.halving import stored_cell

    return stored_cell(folder)


def test_a_staged_sweep_killed_mid_way_resumes_without_recomputing(staged, tmp_path):
    out = tmp_path / "out"
    # every cell pauses before its DONE; kill -9 the whole sweep once two trials are done
    finished = kill_after_done(command(out, "search=staged"), env("before_done:sleep=2"), out / "s")
    trials = len(summary(staged[0])["trials"])
    assert 2 <= len(finished) < trials
    again = run(out, "search=staged")
    assert again.returncode == 0, again.stderr[-3000:]
    found = summary(out / "s")
    assert found["chosen"] == summary(staged[0])["chosen"] and len(found["trials"]) == trials
    assert found["computed"] == trials - len(finished)  # the finished trials were read, not recomputed
    assert all((out / "s" / cid / "DONE").stat().st_mtime_ns == t for cid, t in finished.items())
    rerun = run(out, "search=staged")  # everything done: nothing computed
    assert rerun.returncode == 0 and summary(out / "s")["computed"] == 0
    assert f"cells: {trials} trials (0 computed now) of the full grid's 8" in rerun.stdout
