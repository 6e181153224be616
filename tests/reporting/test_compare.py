"""rag-bench compare on real cells: paired statistics, Holm over the declared family, the verdict,
answer flips, the default pair of an experiment, canonical measure names, bad input."""

from __future__ import annotations

import json

from rag_bench.cli import main as cli
from rag_bench.reporting.compare import compare_cells, family, verdict


def test_regression_is_significant_noise_is_not(demo_cells):
    bad = compare_cells(demo_cells["baseline"], demo_cells["regression"], metrics=["hit@5", "ndcg@10", "mrr@10"],
                        flip_metric="hit@5")
    assert all(r["diff"] < 0 and r["significant"] for r in bad["metrics"])
    assert all(r["ci"][1] < 0 for r in bad["metrics"])
    assert len(bad["flips"]["right_to_wrong"]) > len(bad["flips"]["wrong_to_right"])
    assert bad["flips"]["metric"] == "hit@5"
    assert bad["verdict"].startswith("B worse on hit@5 ")
    # the primary measure's finding leads the line
    led = compare_cells(demo_cells["baseline"], demo_cells["regression"], metrics=["hit@5", "ndcg@10", "mrr@10"],
                        primary="retrieval/mrr@10")
    assert led["verdict"].startswith("B worse on mrr@10 -0.378 ")
    noise = compare_cells(demo_cells["baseline"], demo_cells["noise"], metrics=["hit@5", "ndcg@10", "mrr@10"])
    assert not any(r["significant"] for r in noise["metrics"])
    for r in noise["metrics"]:
        assert r["ci"][0] <= r["diff"] <= r["ci"][1] and r["p_holm"] >= r["p"]


def test_default_is_the_main_measure_of_each_stage_with_holm_over_that_family_only(demo_cells):
    a, b = demo_cells["baseline"], demo_cells["regression"]
    result = compare_cells(a, b)
    keys = [r["key"] for r in result["metrics"]]
    assert keys == [c.key for c in family(5)]  # the demo cells generate: every stage is there
    assert {"generation/correct", "generation/exact_match", "generation/token_f1", "citation/citation_precision",
            "abstention/false_refusal_rate", "abstention/correct_refusal_rate", "retrieval/ndcg@10",
            "latency/retrieve_ms", "cost/tokens"} <= set(keys)
    # Holm over these 10 measures: the smallest p is multiplied by 10, not by 31 retrieval cutoffs
    ps = sorted(r["p"] for r in result["metrics"])
    assert min(r["p_holm"] for r in result["metrics"]) == min(1.0, round(ps[0] * len(keys), 12))
    # answer flips: 'fixed' means right in B (answered right or correctly refused), never a false refusal
    flips = result["flips"]
    assert flips["metric"].startswith("answer")
    assert all(f["failure_b"] in ("correct", "correct_refusal") for f in flips["wrong_to_right"])
    assert all(f["failure_a"] in ("correct", "correct_refusal") for f in flips["right_to_wrong"])
    assert flips["right_to_wrong"] or flips["wrong_to_right"]


def test_verdict_names_each_significant_change_in_its_direction():
    rows = [{"metric": "false_refusal_rate", "higher_is_better": False, "diff": -0.1, "ci": [-0.2, -0.05],
             "p_holm": 0.0004, "significant": True},
            {"metric": "correct", "higher_is_better": True, "diff": 0.0, "ci": [0, 0], "p_holm": 1.0,
             "significant": False}]
    assert verdict(rows) == ("B better on false_refusal_rate -0.100 [-0.200, -0.050], p < 0.001 after Holm; "
                             "no significant change elsewhere")
    assert verdict(rows[1:]) == "no significant change on any of the 1 measures compared (Holm-adjusted)"


def test_cli_prints_answer_measures_and_a_verdict_by_default(demo_cells, capsys):
    a, b = str(demo_cells["baseline"].path), str(demo_cells["regression"].path)
    assert cli(["compare", a, b]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[2].startswith("verdict: B worse on ")
    for key in ("generation/correct", "generation/exact_match", "generation/token_f1", "citation/citation_precision",
                "abstention/false_refusal_rate"):
        assert key in out
    # one name per cell: the values on the axes the experiment sweeps, as the leaderboard names them
    from rag_bench.reporting.leaderboard import load_cells

    frame = load_cells(demo_cells["baseline"].path.parent)
    name = dict(zip(frame["cell"], frame["label"]))
    assert out.splitlines()[0] == f"A: {name[demo_cells['baseline'].cell_id]}"
    assert out.splitlines()[1] == f"B: {name[demo_cells['regression'].cell_id]}"
    # -m takes the gate's canonical names
    assert cli(["compare", a, b, "-m", "generation/correct", "-m", "retrieval/hit@5", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [m["key"] for m in data["metrics"]] == ["generation/correct", "retrieval/hit@5"]
    assert data["questions"] == 90 and data["verdict"]
    # every measure, strict JSON: an undefined figure is null, never NaN (which no JSON reader but Python's takes)
    assert cli(["compare", a, b, "--json"]) == 0
    data = json.loads(capsys.readouterr().out, parse_constant=_no_constant)
    assert len(data["metrics"]) > 10


def _no_constant(name):
    raise AssertionError(f"{name} is not JSON")


def test_json_writes_an_undefined_figure_as_null(demo_cells, capsys, monkeypatch):
    """A p-value or an interval of no defined value (e.g. two cells without a figure) came out as NaN."""
    from rag_bench.reporting import compare

    real = compare.compare_cells

    def undefined_p(*args, **kwargs):
        result = real(*args, **kwargs)
        result["metrics"][0]["p"] = float("nan")
        return result

    monkeypatch.setattr(compare, "compare_cells", undefined_p)
    a, b = str(demo_cells["baseline"].path), str(demo_cells["regression"].path)
    assert cli(["compare", a, b, "--json"]) == 0
    data = json.loads(capsys.readouterr().out, parse_constant=_no_constant)
    assert data["metrics"][0]["p"] is None


def test_experiment_folder_compares_the_defaults_cell_with_the_best(demo_cells, capsys):
    from rag_bench.cells import experiment_cells
    from rag_bench.decision import decide

    exp = demo_cells["baseline"].path.parent
    cells = experiment_cells(exp, records=False)
    # baseline = section chunker, bm25 at its default k1: the config's defaults on every swept axis
    assert decide.defaults_cell(cells).cell_id == demo_cells["baseline"].cell_id
    key = decide.primary_measure(cells)
    assert key == "answer/context_all"  # the extractive generator is a stand-in: not ranked by its answers
    best = decide.rank(cells, key)[0]
    # k1=1.3 and k1=1.5 tie: the cheaper (measured latency) is best, so either may be
    code = cli(["compare", str(exp), "--json"])
    captured = capsys.readouterr()
    if best.cell_id == demo_cells["baseline"].cell_id:
        assert code == 2 and "is the best cell" in captured.err
    else:
        data = json.loads(captured.out)
        assert code == 0 and (data["a_cell"], data["b_cell"]) == (demo_cells["baseline"].cell_id, best.cell_id)
        assert f"best by {key}" in captured.err
        assert data["experiment_verdict"]["best"] == best.cell_id  # the experiment's verdict, with the pair
    # --baseline by cell id or name; the best cell itself is refused (nothing to compare), as is an unknown cell
    assert cli(["compare", str(exp), "--baseline", demo_cells["regression"].cell_id, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["a_cell"], data["b_cell"]) == (demo_cells["regression"].cell_id, best.cell_id)
    assert cli(["compare", str(exp), "--baseline", decide.cell_name(best)]) == 2
    assert "is the best cell" in capsys.readouterr().err
    assert cli(["compare", str(exp), "--baseline", "no-such-cell"]) == 2


def test_bad_input(demo_cells, tmp_path, capsys):
    assert cli(["compare", str(demo_cells["baseline"].path), str(tmp_path / "nope")]) == 2
    assert cli(["compare", str(demo_cells["baseline"].path), str(demo_cells["noise"].path), "-m", "vibes@3"]) == 2
    assert "unknown per-question metric" in capsys.readouterr().err
    assert cli(["compare", str(demo_cells["baseline"].path), str(demo_cells["noise"].path), "-m",
                "generation/corect"]) == 2
    assert "did you mean generation/correct" in capsys.readouterr().err
