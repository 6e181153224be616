"""Cells whose shared measures differ in a parameter are never set side by side (issue 39): a gate,
a compare and a leaderboard across cells scored with another eval.gain, relevance level, minimum
coverage, relevance mode, answer matching or ranking unit exit 2 naming the parameter."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag_bench.cli import main as cli
from tests.conftest import TINY

# parameter -> (the two settings, a measure they change that both cells report, eval.unit of each)
CASES = {
    "eval.gain": (("eval.gain=linear", "eval.gain=exponential"), "retrieval/ndcg@10"),
    "eval.relevance_level": (("eval.relevance_level=1", "eval.relevance_level=2"), "retrieval/hit@5"),
    "eval.min_coverage": (("eval.min_coverage=0.5", "eval.min_coverage=0.9"), "retrieval/ndcg@10"),
    "eval.relevance": (("eval.relevance=overlap", "eval.relevance=section"), "retrieval/mrr"),
    "eval.answer_match": (("eval.answer_match=auto", "eval.answer_match=contains"), "generation/correct"),
    "eval.unit": (("eval.unit=chunk", "eval.unit=document"), "retrieval/ndcg@10"),
}


def _cell(out: Path, *overrides: str, experiment: str = "") -> Path:
    """The one cell of ``overrides`` (in an experiment folder of its own unless ``experiment`` is given)."""
    name = experiment or "c" + str(len(list(out.glob("*"))))
    assert cli(["run", f"dataset.path={TINY}", f"output.root={out}", f"experiment.name={name}", "tracking=none",
                "chunker=section", "generator=extractive", "eval.bootstrap_resamples=20", *overrides]) == 0
    (done,) = [d for d in (out / name).glob("*/DONE")
               if all(o.split("=")[1] == str(_get(d.parent, o.split("=")[0])) for o in overrides)]
    return done.parent


def _get(cell: Path, key: str) -> object:
    import yaml

    node = yaml.safe_load((cell / "config.yaml").read_text())
    for part in key.split("."):
        node = node[part]
    return node


@pytest.fixture(scope="module")
def pairs(tmp_path_factory):
    out = tmp_path_factory.mktemp("params")
    return {param: (_cell(out, a), _cell(out, b)) for param, ((a, b), _) in CASES.items()}


@pytest.mark.parametrize("param", CASES)
def test_compare_refuses_and_names_the_parameter(pairs, param, capsys):
    a, b = pairs[param]
    capsys.readouterr()
    assert cli(["compare", str(a), str(b), "-m", CASES[param][1]]) == 2
    err = capsys.readouterr().err
    assert param in err and CASES[param][1] in err and "-- fix:" in err and "Traceback" not in err


@pytest.mark.parametrize("param", CASES)
def test_a_gate_against_a_baseline_refuses_and_names_the_parameter(pairs, param, tmp_path, capsys):
    a, b = pairs[param]
    policy = tmp_path / "policy.yaml"
    policy.write_text(f"regressions:\n  {CASES[param][1]}: {{rule: not_worse_than, max_drop: 0.05}}\n")
    junit = tmp_path / "gate.xml"
    capsys.readouterr()
    assert cli(["gate", str(b), "--policy", str(policy), "--baseline", str(a), "--junit", str(junit)]) == 2
    err = capsys.readouterr().err
    assert param in err and "Traceback" not in err and not junit.exists()  # nothing half-done


def test_cells_measured_alike_compare_and_the_unit_both_reports_the_chunk_measures(pairs, tmp_path, capsys):
    out = tmp_path / "alike"
    a = _cell(out, "pipeline.k=3")
    b = _cell(out, "pipeline.k=5", "eval.unit=both")  # retrieval/* under unit=both are the chunk measures
    capsys.readouterr()
    assert cli(["compare", str(a), str(b), "-m", "retrieval/ndcg@10", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["metrics"][0]["key"] == "retrieval/ndcg@10"


def test_the_leaderboard_does_not_rank_cells_whose_shown_measures_differ(tmp_path, capsys):
    # Two gain settings in one experiment folder: ndcg@10 means two things there, hit@5 one.
    out = tmp_path / "lb"
    _cell(out, "eval.gain=linear", experiment="both")
    _cell(out, "eval.gain=exponential", experiment="both")
    capsys.readouterr()
    assert cli(["leaderboard", str(out / "both"), "--columns", "retrieval/ndcg@10"]) == 2
    err = capsys.readouterr().err
    assert "eval.gain" in err and "--columns" in err and "Traceback" not in err
    assert cli(["leaderboard", str(out / "both"), "--columns", "retrieval/hit@5", "--sort-by", "retrieval/hit@5"]) == 0


def test_a_cell_written_before_the_measures_block_is_read_from_its_config(pairs, capsys):
    a, b = pairs["eval.gain"]
    for cell in (a, b):  # drop the block: as a cell of an earlier version (format 0, upgraded as it is read)
        m = json.loads((cell / "metrics.json").read_text())
        m.pop("measures")
        m.pop("format")
        (cell / "metrics.json").write_text(json.dumps(m))
    capsys.readouterr()
    assert cli(["compare", str(a), str(b), "-m", "retrieval/ndcg@10"]) == 2
    assert "eval.gain" in capsys.readouterr().err


def test_the_report_refuses_before_writing_anything(tmp_path, capsys):
    out = tmp_path / "rep"
    _cell(out, "eval.gain=linear", experiment="mixed")
    _cell(out, "eval.gain=exponential", experiment="mixed")
    capsys.readouterr()
    assert cli(["report", str(out / "mixed"), "--out", str(tmp_path / "reports"), "--no-mlflow"]) == 2
    assert "eval.gain" in capsys.readouterr().err and not (tmp_path / "reports").exists()
