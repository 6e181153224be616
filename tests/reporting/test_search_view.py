"""The report's halving section: every dropped cell with its round, questions seen, gap to the
leader and test, read from the sweep's summary and the dropped cells' folders."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from rag_bench.reporting import search_view


def experiment(tmp_path: Path, prune: str, guard: list[dict] | None = None) -> Path:
    exp = tmp_path / "exp"
    (exp / ".hydra").mkdir(parents=True)
    for cid, k in (("aaa", 1), ("bbb", 3), ("ccc", 5)):
        (exp / cid).mkdir()
        (exp / cid / "config.yaml").write_text(yaml.safe_dump({"retriever": {"name": "bm25"}, "pipeline": {"k": k}}))
    block = {"mode": "halving", "prune": prune, "pruned_after_round": 1, "questions": 10, "leader": "ccc",
             "behind": -0.4, "p": 0.125, "significantly_worse": False}
    summary = {"mode": "halving", "prune": prune, "keep": 1 / 3, "alpha": 0.05, "alpha_per_round": None,
               "measure": "answer/context_all", "grid_cells": 3, "questions": 30, "cell_questions": 50,
               "rounds": [{"round": 0, "questions": 10, "cells": 3, "kept": 1, "questions_computed": 30},
                          {"round": 1, "questions": 30, "cells": 1, "kept": 1, "questions_computed": 20}],
               "pruned": {"aaa": {**block, "behind": -0.5}, "bbb": block}, "dropped_not_significantly_worse": 2,
               "guard": guard or []}
    (exp / ".hydra" / "search-0123.json").write_text(json.dumps(summary))
    return exp


def test_the_section_lists_each_dropped_cell_by_name_round_gap_and_test(tmp_path):
    body = search_view.section(experiment(tmp_path, "rank"), [])
    assert "search.prune=rank" in body and "2 of the 2 dropped cells were not significantly worse" in body
    assert "50 of the full grid&#x27;s 90 (56%)" in body or "50 of the full grid's 90 (56%)" in body
    assert body.index("k=1") < body.index("k=3")  # the cell furthest behind first
    assert ">-0.500<" in body and ">-0.400<" in body and "0.125" in body and "k=5" in body  # the leader named
    assert "guard" not in body.lower()


def test_the_guard_is_shown_when_a_dropped_cell_beat_the_final_best(tmp_path):
    body = search_view.section(experiment(tmp_path, "rank", [{"cell": "aaa", "best": "ccc"}]), [])
    assert "The guard found 1 dropped cell(s)" in body and "k=1" in body


def test_no_section_without_a_halving_sweep(tmp_path):
    exp = tmp_path / "exp"
    (exp / ".hydra").mkdir(parents=True)
    (exp / ".hydra" / "search-1.json").write_text(json.dumps({"mode": "staged"}))
    (exp / ".hydra" / "search-2.json").write_text("{not json")
    assert search_view.section(exp, []) == ""
