"""rag-bench compare on real cells: paired statistics, Holm, flips, JSON, bad input."""

from __future__ import annotations

import json

from rag_bench.cli import main as cli
from rag_bench.reporting.compare import compare_cells


def test_regression_is_significant_noise_is_not(demo_cells):
    bad = compare_cells(demo_cells["baseline"], demo_cells["regression"], metrics=["hit@5", "ndcg@10", "mrr@10"])
    assert all(r["diff"] < 0 and r["significant"] for r in bad["metrics"])
    assert all(r["ci"][1] < 0 for r in bad["metrics"])
    assert len(bad["flips"]["right_to_wrong"]) > len(bad["flips"]["wrong_to_right"])
    assert bad["flips"]["metric"] == "hit@5"
    noise = compare_cells(demo_cells["baseline"], demo_cells["noise"], metrics=["hit@5", "ndcg@10", "mrr@10"])
    assert not any(r["significant"] for r in noise["metrics"])
    for r in noise["metrics"]:
        assert r["ci"][0] <= r["diff"] <= r["ci"][1] and r["p_holm"] >= r["p"]


def test_cli_table_and_json(demo_cells, capsys):
    a, b = str(demo_cells["baseline"].path), str(demo_cells["regression"].path)
    assert cli(["compare", a, b, "-m", "hit@5"]) == 0
    out = capsys.readouterr().out
    assert "hit@5" in out and "right in A, wrong in B" in out
    assert cli(["compare", a, b, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["questions"] == 81 and {m["metric"] for m in data["metrics"]} >= {"hit@1", "map", "complete@5"}


def test_bad_input(demo_cells, tmp_path, capsys):
    assert cli(["compare", str(demo_cells["baseline"].path), str(tmp_path / "nope")]) == 2
    assert cli(["compare", str(demo_cells["baseline"].path), str(demo_cells["noise"].path), "-m", "vibes@3"]) == 2
    assert "unknown per-question metric" in capsys.readouterr().err
