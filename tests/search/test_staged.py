"""The pure parts of search=staged: the axes of a grid, each stage's trials, the finalists' command."""

from __future__ import annotations

import itertools

from rag_bench.search.staged import Axis, Stage, axes, finalists_command, stage_trials, summary


def grid() -> list[list[str]]:
    # as the sweeper expands it: stage order (chunker, retriever, k), the last axis fastest, a constant key
    return [["+experiment=demo", f"chunker={c}", f"retriever={r}", f"pipeline.k={k}", "tracking=none"]
            for c, r, k in itertools.product(("fixed", "section", "sentence"), ("bm25", "dense"), ("3", "5"))]


def test_axes_are_the_swept_keys_in_stage_order_with_values_as_given():
    assert axes(grid()) == (Axis("chunker", ("fixed", "section", "sentence")), Axis("retriever", ("bm25", "dense")),
                            Axis("pipeline.k", ("3", "5")))
    assert axes([["chunker=a", "k=1"]]) == ()  # one cell: nothing to search


def test_each_stage_varies_its_axis_with_earlier_axes_chosen_and_later_at_defaults():
    jobs, found = grid(), axes(grid())
    first = stage_trials(jobs, found, 0, {})
    assert [jobs[i][1:4] for i in first] == [["chunker=fixed", "retriever=bm25", "pipeline.k=3"],
                                             ["chunker=section", "retriever=bm25", "pipeline.k=3"],
                                             ["chunker=sentence", "retriever=bm25", "pipeline.k=3"]]
    second = stage_trials(jobs, found, 1, {"chunker": "section"})
    assert [jobs[i][1:4] for i in second] == [["chunker=section", "retriever=bm25", "pipeline.k=3"],
                                              ["chunker=section", "retriever=dense", "pipeline.k=3"]]
    third = stage_trials(jobs, found, 2, {"chunker": "section", "retriever": "dense"})
    assert [jobs[i][1:4] for i in third] == [["chunker=section", "retriever=dense", "pipeline.k=3"],
                                             ["chunker=section", "retriever=dense", "pipeline.k=5"]]
    # the trials are the grid's own jobs (same overrides: same cells), and stages share one trial each
    assert set(first) & set(second) == {first[1]} and set(second) & set(third) == {second[1]}
    assert len(set(first) | set(second) | set(third)) == 3 + 1 + 1  # of the grid's 12


def test_finalists_command_is_the_grid_of_the_top_values_without_search_keys():
    jobs = [[*job, "search=staged"] for job in grid()]
    command = finalists_command(jobs[0], axes(jobs), {"chunker": ["section", "fixed"], "retriever": ["dense", "bm25"],
                                                      "pipeline.k": ["5", "3"]})
    assert command == ("rag-bench run -m +experiment=demo tracking=none chunker=section,fixed retriever=dense,bm25 "
                       "pipeline.k=5,3")


def test_summary_says_it_cannot_see_interactions_and_counts_cells_against_the_grid():
    stages = [Stage("chunker", ("a", "b"), (0.5, None), ("a", "b"), "a", 2, 0)]
    lines = summary(stages, "answer/context_all", 2, 2, 8, "rag-bench run -m chunker=a,b", 2)
    assert "  stage 1: chunker (a 0.5000, b -) -> a; 2 cells computed" in lines
    assert "  cells: 2 trials (2 computed now) of the full grid's 8 (25%)" in lines
    assert any("cannot see interactions" in line for line in lines)
    assert lines[-1].endswith("(top 2 per axis): rag-bench run -m chunker=a,b")
