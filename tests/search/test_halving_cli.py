"""search=halving through the real CLI on the demo set: the surviving cells are the grid's
cells (same ids, config.yaml, metrics.json figures), the pruned cells keep their partial results
marked, and after kill -9 the same command resumes without recomputing the rounds already done."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]
# k=1 hands the generator one passage: far fewer questions get all their evidence (the primary
# measure, answer/context_all, with the extractive stand-in) than at k=5 or 10.
GRID = ["chunker=section", "retriever=bm25", "pipeline.k=1,5,10"]


def run(out: Path, *extra: str, failpoint: str | None = None, grid: list[str] = GRID,
        cache: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("MLFLOW_TRACKING_URI", "RAG_BENCH_FAILPOINT")}
    if failpoint:
        env["RAG_BENCH_FAILPOINT"] = failpoint
    if cache is not None:
        env["RAG_BENCH_CACHE"] = str(cache)
    # this checkout's rag_bench (python -m from the repository), not an installed copy's
    return subprocess.run([sys.executable, "-m", "rag_bench.cli", "run", "-m", *grid, "tracking=none",
                           f"output.root={out}", "experiment.name=h", *extra], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600)


RUN_KEYS = ("latency", "embedding_requests", "embedding_cache_hits", "embeddings_computed", "generations_cached")


def figures(metrics: object) -> object:
    """metrics.json without timings and the caches' counts (the run's, not the cell's figures)."""
    if isinstance(metrics, dict):
        return {k: figures(v) for k, v in metrics.items() if k not in RUN_KEYS and not k.endswith(("_s", "_ms"))}
    return metrics


def record_figures(cell: Path) -> pd.DataFrame:
    """records.parquet without timings and cache flags (``claims``, nested arrays, compared as text)."""
    frame = pd.read_parquet(cell / "records.parquet")
    frame = frame[[c for c in frame.columns if not c.endswith(("_ms", "_s", "cached"))]]
    return frame.assign(claims=frame["claims"].astype(str)) if "claims" in frame else frame


def cells(exp: Path) -> dict[str, Path]:
    return {p.name: p for p in exp.iterdir() if p.is_dir() and not p.name.startswith(".")}


@pytest.fixture(scope="module")
def grid(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("grid")
    done = run(out)
    assert done.returncode == 0, done.stderr[-3000:]
    return out / "h"


@pytest.fixture(scope="module")
def halving(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("halving")
    done = run(out, "search.mode=halving")
    assert done.returncode == 0, done.stderr[-3000:]
    return out / "h", done.stdout


def summary(exp: Path) -> dict:
    return json.loads(next((exp / ".hydra").glob("search-*.json")).read_text())


def test_survivors_are_the_grids_cells_and_the_pruned_are_marked(grid, halving):
    exp, stdout = halving
    found = summary(exp)
    assert found["pruned"], f"nothing pruned: {found['rounds']}"
    assert set(cells(exp)) == set(cells(grid))  # every trial at its grid cell's id and folder
    for cid in found["survivors"]:
        mine, theirs = cells(exp)[cid], cells(grid)[cid]
        assert (mine / "DONE").is_file() and not (mine / "PARTIAL").exists()
        ours = json.loads((mine / "metrics.json").read_text())
        assert "search" not in ours and figures(ours) == figures(json.loads((theirs / "metrics.json").read_text()))
        # config.yaml the same but for where it was written
        assert (mine / "config.yaml").read_text().replace(str(exp.parent), "ROOT") == \
            (theirs / "config.yaml").read_text().replace(str(theirs.parent.parent), "ROOT")
        pd.testing.assert_frame_equal(record_figures(mine), record_figures(theirs))
    for cid, block in found["pruned"].items():
        folder = cells(exp)[cid]
        assert not (folder / "DONE").exists() and (folder / "PARTIAL").is_file()
        marked = json.loads((folder / "metrics.json").read_text())["search"]
        assert marked == block and marked["behind"] < 0 and marked["p"] < marked["alpha"] == 0.025
        records = pd.read_parquet(folder / "records.parquet")
        assert len(records) == marked["questions"] < demo_questions()  # its partial results: the round's only
    assert "Successive halving (search=halving):" in stdout and "cell-questions computed:" in stdout
    status = subprocess.run([sys.executable, "-m", "rag_bench.cli", "status", str(exp)], cwd=REPO, capture_output=True,
                            text=True, timeout=120)
    assert f"{len(found['pruned'])} pruned" in status.stdout and "missing" not in status.stdout  # not "run it again"
    rounds = found["rounds"]
    n = demo_questions()  # rounds of a quarter and a half, stratified (tags x answerable), then all
    assert [r["questions"] for r in rounds][-1] == n and n / 4 - 3 <= rounds[0]["questions"] <= n / 4 + 3 \
        and n / 2 - 3 <= rounds[1]["questions"] <= n / 2 + 3
    # Incremental rounds: a survivor's later round ran only the questions new to it (its folder says
    # so, from what the runner did), the cell-questions counted are those.
    assert found["cell_questions"] == sum(r["questions_computed"] for r in rounds)
    assert rounds[0]["questions_computed"] == rounds[0]["cells"] * rounds[0]["questions"]
    assert rounds[1]["questions_computed"] == rounds[1]["cells"] * (rounds[1]["questions"] - rounds[0]["questions"])
    assert rounds[2]["questions_computed"] == rounds[2]["cells"] * (n - rounds[1]["questions"])
    for cid in found["survivors"]:
        done = json.loads((cells(exp)[cid] / "DONE").read_text())
        assert done["search"] == {"questions_computed": n - rounds[1]["questions"],
                                  "questions_reused": rounds[1]["questions"]}
        assert not (cells(exp)[cid] / "round-runs.pickle").exists()
    for cid, block in found["pruned"].items():
        marker = json.loads((cells(exp)[cid] / "PARTIAL").read_text())
        if block["pruned_after_round"] == 2:
            assert (marker["computed"], marker["reused"]) == (rounds[1]["questions"] - rounds[0]["questions"],
                                                              rounds[0]["questions"])


def demo_questions() -> int:
    from rag_bench.runner.config import DEMO_DATASET

    return sum(1 for line in (DEMO_DATASET / "questions.jsonl").read_text(encoding="utf-8").splitlines() if line.strip())


def test_grid_mode_is_unchanged_by_the_search_key(grid, tmp_path):
    # the default (search=grid) names search nowhere: no search block, no search key in config.yaml
    for folder in cells(grid).values():
        assert "search" not in json.loads((folder / "metrics.json").read_text())
        assert "\nsearch:" not in (folder / "config.yaml").read_text()
        assert not (folder / "PARTIAL").exists()


def test_a_halving_sweep_killed_mid_way_resumes_without_recomputing(grid, tmp_path):
    out = tmp_path / "out"
    killed = run(out, "search=halving", failpoint="cell_written")  # the first cell of the last round
    assert killed.returncode != 0
    exp = out / "h"
    first = {cid: (p / "PARTIAL").stat().st_mtime_ns for cid, p in cells(exp).items()
                             if (p / "PARTIAL").exists()}
    assert first, "rounds before the last left their PARTIAL cells"
    again = run(out, "search=halving")
    assert again.returncode == 0, again.stderr[-3000:]
    found = summary(exp)
    for cid in found["pruned"]:  # a pruned cell's round was not computed again
        assert (cells(exp)[cid] / "PARTIAL").stat().st_mtime_ns == first[cid]
    # Computed again before the last round: only survivors whose round results the last round had
    # already replaced when the kill came (the cell being written and the one computed meanwhile).
    assert all(r["computed"] <= min(2, len(found["survivors"])) for r in found["rounds"][:-1]), found["rounds"]
    assert sum(r["computed"] for r in found["rounds"][:-1]) < sum(r["cells"] for r in found["rounds"][:-1])
    theirs = cells(grid)
    for cid in found["survivors"]:
        assert figures(json.loads((cells(exp)[cid] / "metrics.json").read_text())) == \
            figures(json.loads((theirs[cid] / "metrics.json").read_text()))
    # the survivors whose round-2 results the kill left in place merged them: only their new questions ran
    rounds, n = found["rounds"], demo_questions()
    merged = [cid for cid in found["survivors"]
              if json.loads((cells(exp)[cid] / "DONE").read_text()).get("search", {}).get("questions_computed")
              == n - rounds[1]["questions"]]
    assert len(merged) >= len(found["survivors"]) - 2 and merged, found
    rerun = run(out, "search=halving")  # everything done: nothing computed
    assert rerun.returncode == 0 and all(r["computed"] == 0 for r in summary(exp)["rounds"])


def test_an_unknown_search_mode_fails_before_any_cell(tmp_path):
    done = run(tmp_path, "search=halfing")
    assert done.returncode == 2 and "search has no option 'halfing'" in done.stderr
    assert "fix: did you mean search=halving? (search's options: grid, halving, optuna, staged)" in done.stderr
    old = run(tmp_path, "search.mode=halfing")  # the spelling before search was a config group: an alias
    assert old.returncode == 2 and "note: search.mode=halfing is spelled search=halfing now" in old.stderr
    assert "did you mean search=halving?" in old.stderr
    assert not list(tmp_path.glob("h/*/DONE"))


@pytest.mark.parametrize(("mode", "typo", "listed"), [
    ("halving", "search.prun=rank", "valid keys of search: rounds, alpha, prune, keep, seed, round (did you mean "
                                    "search.prune?)"),
    ("staged", "search.n_trials=4", "valid keys of search: finalists"),  # optuna's setting under staged
])
def test_a_search_setting_the_mode_lacks_fails_at_compose_with_the_valid_ones(tmp_path, mode, typo, listed):
    done = run(tmp_path, f"search={mode}", typo)
    assert done.returncode == 2 and f"Could not override '{typo.split('=')[0]}'" in done.stderr
    assert listed in done.stderr
    assert not (tmp_path / "h").exists()


def test_a_search_setting_of_the_wrong_type_is_refused_before_any_cell(tmp_path):
    done = run(tmp_path, "search=halving", "search.alpha=nan")
    assert done.returncode == 2 and "search.alpha must be finite, got nan" in done.stderr
    assert not list(tmp_path.glob("h/*/DONE")) and not list(tmp_path.glob("h/*/PARTIAL"))


def test_a_halving_grid_over_two_datasets_is_refused(tmp_path):
    from rag_bench.runner.config import DEMO_DATASET
    from tests.conftest import TINY

    done = run(tmp_path, "search=halving", f"dataset.path={TINY},{DEMO_DATASET}")
    assert done.returncode == 2 and "spans 2 datasets" in done.stderr and "fix: one halving sweep per dataset" \
        in done.stderr
    assert not list(tmp_path.glob("h/*/DONE")) and not list(tmp_path.glob("h/*/PARTIAL"))


def test_a_halving_grid_over_two_splits_is_refused(tmp_path):
    """Each round's questions are drawn from one split: a grid over dataset.split would compare the
    other split's cells on no question at all."""
    import shutil

    from tests.conftest import REPO as ROOT

    data = tmp_path / "beir"
    shutil.copytree(ROOT / "tests" / "fixtures" / "beir_graded", data)
    shutil.copy(data / "qrels" / "test.tsv", data / "qrels" / "dev.tsv")
    done = run(tmp_path, "search=halving", f"dataset.path={data}", "dataset.split=test,dev")
    assert done.returncode == 2 and "spans 2 datasets or splits" in done.stderr and "fix: one halving sweep per " \
        "dataset and split" in done.stderr
    assert not list(tmp_path.glob("h/*/DONE")) and not list(tmp_path.glob("h/*/PARTIAL"))


def test_rank_pruning_keeps_the_top_third_and_says_which_dropped_cells_were_not_significantly_worse(grid, tmp_path):
    done = run(tmp_path, "search=halving", "search.prune=rank")
    assert done.returncode == 0, done.stderr[-3000:]
    exp = tmp_path / "h"
    found = summary(exp)
    n = demo_questions()
    rounds = found["rounds"]
    # the rank rule's own default rounds (a ninth, a third, all) and keep (1/3: of 3 cells, 1)
    assert found["prune"] == "rank" and found["keep"] == pytest.approx(1 / 3)
    assert [r["cells"] for r in rounds] == [3, 1, 1] and [r["kept"] for r in rounds] == [1, 1, 1]
    assert n / 9 - 3 <= rounds[0]["questions"] <= n / 9 + 3 and n / 3 - 3 <= rounds[1]["questions"] <= n / 3 + 3
    # incremental: the survivor ran each question once, the pruned cells their first round's
    assert found["cell_questions"] == 3 * rounds[0]["questions"] + (n - rounds[0]["questions"])
    (survivor,) = found["survivors"]
    theirs = cells(grid)[survivor]
    ours = json.loads((cells(exp)[survivor] / "metrics.json").read_text())
    assert figures(ours) == figures(json.loads((theirs / "metrics.json").read_text()))
    pd.testing.assert_frame_equal(record_figures(cells(exp)[survivor]), record_figures(theirs))
    assert json.loads((cells(exp)[survivor] / "DONE").read_text())["search"] == {
        "questions_computed": n - rounds[1]["questions"], "questions_reused": rounds[1]["questions"]}
    assert len(found["pruned"]) == 2
    for block in found["pruned"].values():
        assert block["prune"] == "rank" and block["pruned_after_round"] == 1 and block["leader"] == survivor
        assert 0 < block["p"] <= 1 and block["behind"] <= 0
        assert block["significantly_worse"] == (block["p"] <= 0.05 and block["behind"] < 0)
    not_worse = sum(not b["significantly_worse"] for b in found["pruned"].values())
    assert found["dropped_not_significantly_worse"] == not_worse
    assert f"{not_worse} were NOT significantly worse than the round's leader" in done.stdout
    assert isinstance(found["guard"], list) and "guard:" in done.stdout



def test_a_merged_cell_reports_its_approximate_index_on_every_question_as_the_grid_does(tmp_path):
    # An IVF index (no recall target): the ANN report (recall@k, underfill) is computed on the
    # questions a run sees; the last round runs only the new ones, and the report must still be
    # the whole cell's (pipeline.run report_on), like every other figure.
    ivf = ["chunker=section", "retriever=dense", "index=ivf", "pipeline.k=1,5,10"]
    assert run(tmp_path / "grid", grid=ivf).returncode == 0
    done = run(tmp_path / "halving", "search=halving", grid=ivf)
    assert done.returncode == 0, done.stderr[-3000:]
    found, theirs = summary(tmp_path / "halving" / "h"), cells(tmp_path / "grid" / "h")
    assert found["survivors"] and found["rounds"][-1]["questions_computed"] < \
        found["rounds"][-1]["computed"] * found["rounds"][-1]["questions"]  # merged, not recomputed
    for cid in found["survivors"]:
        ours = json.loads((cells(tmp_path / "halving" / "h")[cid] / "metrics.json").read_text())
        assert "ann_recall@10" in ours["ann"]
        assert figures(ours) == figures(json.loads((theirs[cid] / "metrics.json").read_text()))


class Planted:
    """Unpickling this creates a file: the proof that a pickle from a cell folder was executed."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def test_a_pickle_signed_with_a_planted_key_is_never_run_on_resume(tmp_path):
    """Issue 52, item 1: the rounds' runs were HMAC-signed pickles under <cache>/round-runs.key, a key
    accepted whatever its owner and mode -- whoever could write the cache signed a pickle whose
    __reduce__ ran on resume. The runs are data now: no pickle is read, no key file is made."""
    import hashlib
    import hmac
    import pickle

    out, cache = tmp_path / "out", tmp_path / "cache"
    killed = run(out, "search=halving", failpoint="cell_written", cache=cache)  # the first cell of the last round
    assert killed.returncode != 0
    partial = [p for p in cells(out / "h").values() if (p / "PARTIAL").exists()]
    assert partial and all((p / "question-runs.jsonl").is_file() for p in partial)
    assert not (cache / "round-runs.key").exists() and not list(out.rglob("*.pickle"))
    key = b"k" * 32
    (cache / "round-runs.key").write_bytes(key)
    (cache / "round-runs.key").chmod(0o666)  # anyone's
    proof = tmp_path / "executed"
    data = pickle.dumps((Planted(str(proof)),))
    for folder in partial:  # the old file name, signed under the planted key, and the new name
        (folder / "round-runs.pickle").write_bytes(hmac.new(key, data, hashlib.sha256).digest() + data)
        (folder / "question-runs.jsonl").write_bytes(hmac.new(key, data, hashlib.sha256).digest() + data)
    again = run(out, "search=halving", cache=cache)
    assert again.returncode == 0, again.stderr[-3000:]
    assert not proof.exists(), "a pickle from a cell folder was executed"
    from rag_bench.evaluation import run_io

    done = [p for p in cells(out / "h").values() if (p / "DONE").exists()]
    assert done and all(run_io.load_run((p / run_io.FILE).read_text()).questions for p in done)  # rewritten as data
