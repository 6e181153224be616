"""search=optuna's own logic over a fake grid (cells written by a fake launch, figures a pure
function of the cell's settings): the keys' checks, TPE vs NSGA-II, same seed -> same trials,
repeats launch nothing, an interrupted search resumes to the same trials computing only the cells
not finished, the Pareto front and the best, the cost objective without prices."""

from __future__ import annotations

import hashlib
import io
import itertools
import json
from pathlib import Path

import pytest
import yaml

from rag_bench.errors import ConfigError
from rag_bench.search import optuna_search
from rag_bench.search.optuna_search import Objective, Trial, dominates, pareto_front, parse_objectives, trial_count

AXES = {"chunker": ("fixed", "section", "sentence"), "retriever": ("bm25", "dense", "hybrid"), "pipeline.k": ("1", "3", "5")}


def grid() -> list[list[str]]:
    return [["+experiment=demo", f"chunker={c}", f"retriever={r}", f"pipeline.k={k}", "tracking=none"]
            for c, r, k in itertools.product(*AXES.values())]


def figure(job: list[str], salt: str) -> float:
    """A cell's figure: a fixed function of its overrides (so a re-run reads what the first wrote)."""
    return int(hashlib.sha256((salt + " ".join(job)).encode()).hexdigest()[:8], 16) / 16 ** 8


class FakeLaunch:
    """Writes each job's cell folder (config.yaml, metrics.json, DONE) unless it is DONE already;
    raises after ``stop_after`` launches (a sweep killed mid-way)."""

    def __init__(self, root: Path, stop_after: int | None = None, usd: bool | str = True) -> None:
        self.root, self.stop_after, self.usd = root, stop_after, usd
        self.launched: list[str] = []
        self.computed: list[str] = []

    def __call__(self, batch: list[list[str]]) -> list[Path]:
        assert len(batch) == 1  # one trial at a time
        job = batch[0]
        if self.stop_after is not None and len(self.launched) >= self.stop_after:
            raise KeyboardInterrupt("killed")
        cid = hashlib.sha256(" ".join(job).encode()).hexdigest()[:12]
        self.launched.append(cid)
        folder = self.root / cid
        if not (folder / "DONE").is_file():
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "config.yaml").write_text(yaml.safe_dump({"experiment": {"primary": "retrieval/ndcg@10"}}))
            priced = self.usd is True or (isinstance(self.usd, str) and self.usd not in job)  # usd: the unpriced one
            cost = {"usd_per_question": figure(job, "usd")} if priced else {"unpriced": "generator model 'x' has no price"}
            (folder / "metrics.json").write_text(json.dumps({
                "retrieval": {"ndcg@10": figure(job, "ndcg")},
                "latency": {"retrieve_p50_ms": 10 * figure(job, "ms"), "e2e_p50_ms": None}, "cost": cost}))
            (folder / "DONE").write_text("")
            self.computed.append(cid)
        return [folder]


def search(root: Path, launch: FakeLaunch, **kw) -> tuple[list[Trial], dict]:
    path = root / ".hydra" / "search.json"
    trials = optuna_search.run_trials(grid(), launch, summary_path=path, out=io.StringIO(), **kw)
    return trials, json.loads(path.read_text())


def test_keys_are_checked_with_a_fix():
    assert parse_objectives(["primary", "latency", "cost"]) == ("primary", "latency", "cost")
    assert parse_objectives("primary,retrieval/mrr") == ("primary", "retrieval/mrr")
    for bad in ([], ["primary", "primary"], ["speed"]):
        with pytest.raises(ConfigError, match="fix: search.objectives="):
            parse_objectives(bad)
    assert trial_count(20, 8) == 8 and trial_count(5, 27) == 5
    for bad in (0, -1, "many"):
        with pytest.raises(ConfigError, match="fix: search.n_trials="):
            trial_count(bad, 8)


def test_same_seed_same_trials_and_every_trial_a_grid_cell(tmp_path):
    first, summary = search(tmp_path / "a", FakeLaunch(tmp_path / "a"), n_trials=12, seed=3)
    again, _ = search(tmp_path / "b", FakeLaunch(tmp_path / "b"), n_trials=12, seed=3)
    other, _ = search(tmp_path / "c", FakeLaunch(tmp_path / "c"), n_trials=12, seed=4)
    assert [(t.params, t.cell, t.values) for t in first] == [(t.params, t.cell, t.values) for t in again]
    assert [t.params for t in first] != [t.params for t in other]
    assert summary["sampler"] == "TPE" and len(summary["trials"]) == 12 and summary["grid_cells"] == 27
    for t in first:  # each trial names one of the grid's jobs, and its values are that cell's figures
        job = next(j for j in grid() if all(f"{k}={v}" in j for k, v in t.params.items()))
        assert t.values == (figure(job, "ndcg"),)


def test_a_repeated_point_launches_nothing_and_is_counted_apart(tmp_path):
    launch = FakeLaunch(tmp_path)
    trials, summary = search(tmp_path, launch, n_trials=27, seed=0)
    distinct = {t.cell for t in trials}
    assert len(launch.launched) == len(distinct) == summary["distinct"]  # one launch per distinct cell
    repeats = [t for t in trials if t.repeat_of]
    assert len(repeats) == 27 - len(distinct) > 0  # TPE repeats categorical points on a 27-cell grid
    for t in repeats:
        assert trials[t.repeat_of - 1].cell == t.cell and not t.computed
    assert summary["computed"] == len(distinct)


def test_an_interrupted_search_resumes_to_the_same_trials_computing_only_the_rest(tmp_path):
    whole, _ = search(tmp_path / "whole", FakeLaunch(tmp_path / "whole"), n_trials=10, seed=1)
    killed = FakeLaunch(tmp_path / "r", stop_after=4)
    with pytest.raises(KeyboardInterrupt):
        search(tmp_path / "r", killed, n_trials=10, seed=1)
    assert len(killed.computed) == 4
    resumed = FakeLaunch(tmp_path / "r")
    trials, summary = search(tmp_path / "r", resumed, n_trials=10, seed=1)
    assert [(t.params, t.values) for t in trials] == [(t.params, t.values) for t in whole]
    distinct = len({t.cell for t in whole})
    assert not set(resumed.computed) & set(killed.computed)  # the finished cells were read, not recomputed
    assert len(resumed.computed) == summary["computed"] == distinct - 4
    assert sum(1 for t in trials if not t.computed and not t.repeat_of) == 4  # "found done"


def test_several_objectives_search_with_nsga2_and_the_front_is_not_dominated(tmp_path):
    trials, summary = search(tmp_path, FakeLaunch(tmp_path), n_trials=16, seed=0,
                             objectives=["primary", "latency", "cost"])
    assert summary["sampler"] == "NSGA-II"
    assert [(o["key"], o["higher"]) for o in summary["objectives"]] == [
        ("retrieval/ndcg@10", True), (optuna_search.QUERY_LATENCY, False), ("cost/usd_per_question", False)]
    firsts = {t.cell: t.values for t in trials}
    front = set(summary["pareto"])
    higher = (True, False, False)
    for cell, values in firsts.items():  # brute force: a cell is on the front iff no other dominates it
        beaten = any(dominates(other, values, higher) for c, other in firsts.items() if c != cell)
        assert (cell in front) == (not beaten), cell
    assert front


def test_pareto_front_and_dominance_by_direction():
    objectives = (Objective("primary", "m", True), Objective("latency", "l", False))
    trials = [Trial(1, {}, "a", (0.9, 20.0), True), Trial(2, {}, "b", (0.8, 10.0), True),
              Trial(3, {}, "c", (0.7, 30.0), True), Trial(4, {}, "a", (0.9, 20.0), False, repeat_of=1),
              Trial(5, {}, "d", (0.95, None), True)]
    assert [t.cell for t in pareto_front(trials, objectives)] == ["a", "b"]  # c dominated, d has no latency


def test_the_best_of_one_objective_is_the_leaderboards_first(tmp_path):
    from rag_bench.decision import decide
    from rag_bench.search.halving import stored_cell

    trials, summary = search(tmp_path, FakeLaunch(tmp_path), n_trials=8, seed=2)
    cells = [stored_cell(tmp_path / c) for c in {t.cell for t in trials}]
    assert summary["best"] == [decide.rank(cells, "retrieval/ndcg@10")[0].cell_id]


def test_a_cost_objective_on_unpriced_cells_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match=r"trial 1's .*\(generator model 'x' has no price\) -- fix: price every model"):
        search(tmp_path / "a", FakeLaunch(tmp_path / "a", usd=False), n_trials=4, objectives=["primary", "cost"])
    # a grid priced in part (its dense cells unpriced): the search stops at the first unpriced trial
    # rather than rank the priced cells only
    launch = FakeLaunch(tmp_path / "b", usd="retriever=dense")
    with pytest.raises(ConfigError, match="new experiment.name") as error:
        search(tmp_path / "b", launch, n_trials=27, seed=0, objectives=["primary", "cost"])
    cid = str(error.value).split("cell ")[1].split(" ")[0]
    assert cid == launch.launched[-1] and (tmp_path / "b" / cid / "DONE").is_file()  # the cell itself is kept
    costs = [json.loads((tmp_path / "b" / c / "metrics.json").read_text())["cost"] for c in launch.launched]
    assert "unpriced" in costs[-1] and all("usd_per_question" in c for c in costs[:-1])


def test_latency_is_end_to_end_when_the_first_cell_has_it(tmp_path):
    from rag_bench.decision.decide import Cell

    cell = Cell("x", tmp_path, {}, {"retrieval": {"ndcg@10": 0.5}, "latency": {"e2e_p50_ms": 120.0,
                                                                                 "retrieve_p50_ms": 2.0}}, {})
    (latency,) = optuna_search.resolve(["latency"], cell)
    assert latency.key == optuna_search.E2E_LATENCY and not latency.higher
    assert optuna_search.value(cell, latency) == 120.0


def test_optuna_keys_compose_and_enter_neither_the_cell_id_nor_the_stored_config():
    from rag_bench.runner.config import cell_id
    from rag_bench.runner.main import stored_config
    from tests.conftest import compose_config

    grid = compose_config(["tracking=none"])
    optuna = compose_config(["tracking=none", "search=optuna", "search.n_trials=5", "search.seed=7",
                             "search.objectives=[primary,latency,cost]"])
    assert list(optuna.search.objectives) == ["primary", "latency", "cost"] and optuna.search.n_trials == 5
    defaults = compose_config(["tracking=none", "search=optuna"])
    assert list(defaults.search.objectives) == ["primary"] and defaults.search.n_trials == 20  # the defaults
    assert cell_id(grid, "fp") == cell_id(optuna, "fp")
    assert stored_config(grid, "/d") == stored_config(optuna, "/d")


def test_a_grid_of_one_cell_is_one_trial(tmp_path):
    launch = FakeLaunch(tmp_path)
    trials = optuna_search.run_trials([["+experiment=demo", "chunker=fixed"]], launch, n_trials=20, out=io.StringIO())
    assert [(t.number, t.params, t.computed) for t in trials] == [(1, {}, True)] and len(launch.launched) == 1
