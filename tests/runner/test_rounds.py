"""search.mode=halving, the pure parts: the rounds, their stratified nested question subsets, the
subset dataset, the pruning decision, what counts as a round already done (resume)."""

from __future__ import annotations

import json
import math
from collections import Counter

import numpy as np
import pytest

from rag_bench.domain import Dataset, Question
from rag_bench.errors import ConfigError
from rag_bench.runner.main import round_covered
from rag_bench.runner.rounds import (
    PARTIAL,
    RoundSummary,
    parse_rounds,
    prune,
    round_alpha,
    round_questions,
    stratum,
    subset_dataset,
    summary,
)


def questions(n: int = 200) -> list[Question]:
    tags = [("lexical",), ("semantic",), ("lexical", "multi"), ()]
    return [Question(f"q{i:03d}", "?", answerable=i % 5 != 0, tags=tags[i % 4]) for i in range(n)]


def test_rounds_read_as_increasing_fractions_ending_at_one():
    assert parse_rounds([0.25, 0.5, 1]) == (0.25, 0.5, 1.0)
    assert parse_rounds("0.1,1") == (0.1, 1.0)
    for bad in ([0.5, 0.25, 1], [0.25, 0.5], [0, 1], [0.5, 1.5], [], "x,1"):
        with pytest.raises(ConfigError, match="fix: search.rounds="):
            parse_rounds(bad)


def test_alpha_is_split_over_the_rounds_that_prune():
    assert round_alpha(0.05, 3) == pytest.approx(0.025)
    assert round_alpha(0.05, 4) == pytest.approx(0.05 / 3)
    assert round_alpha(0.05, 1) == 0.05  # a single round prunes nothing: nothing to split
    with pytest.raises(ConfigError, match="search.alpha"):
        round_alpha(1.5, 3)


def test_round_subsets_are_nested_and_grow_to_every_question():
    qs = questions()
    subsets = [set(round_questions(qs, f, 7)) for f in (0.1, 0.25, 0.5, 0.75)]
    assert all(a <= b for a, b in zip(subsets, subsets[1:]))
    assert round_questions(qs, 1.0, 7) == tuple(q.qid for q in qs)


def test_round_subsets_keep_each_stratum_in_proportion():
    qs = questions()
    sizes = Counter(stratum(q) for q in qs)
    for fraction in (0.25, 0.5):
        chosen = set(round_questions(qs, fraction, 3))
        seen = Counter(stratum(q) for q in qs if q.qid in chosen)
        for key, size in sizes.items():  # each stratum: fraction x size, rounded up or down
            assert math.floor(fraction * size) <= seen[key] <= math.ceil(fraction * size), key
        assert {a for _, a in seen} == {True, False}  # answerable and unanswerable both seen


def test_round_subsets_are_seeded_and_independent_of_file_order():
    qs = questions()
    assert round_questions(qs, 0.25, 0) == round_questions(qs, 0.25, 0)
    assert set(round_questions(list(reversed(qs)), 0.25, 0)) == set(round_questions(qs, 0.25, 0))
    assert set(round_questions(qs, 0.25, 0)) != set(round_questions(qs, 0.25, 1))


def test_subset_dataset_keeps_the_corpus_key_and_changes_the_questions_key():
    qs = questions(20)
    dataset = Dataset("d", "/d", "native", questions=tuple(qs), fingerprint="f" * 16)
    ids = round_questions(qs, 0.5, 0)
    sub = subset_dataset(dataset, ids)
    assert [q.qid for q in sub.questions] == list(ids)
    # chunks and indexes (keyed by the corpus) are shared; rankings (keyed by the fingerprint) are not
    assert sub.corpus_key == dataset.corpus_key and sub.fingerprint != dataset.fingerprint
    assert sub.fingerprint.startswith(dataset.fingerprint)


def test_prune_drops_a_clearly_worse_cell_and_keeps_the_equal_ones():
    rng = np.random.default_rng(0)
    good = (rng.random(120) < 0.8).astype(float)
    also_good = good.copy()
    also_good[:3] = 1 - also_good[:3]  # three questions apart: within noise
    bad = good * (rng.random(120) < 0.3)
    leader, found = prune(np.column_stack([also_good, good, bad]), higher_is_better=True, alpha=0.025)
    assert [d.kept for d in found] == [True, True, False]
    assert found[leader].behind == 0.0 and found[2].behind < -0.4 and found[2].p < 0.025


def test_prune_reads_a_lower_is_better_measure_the_right_way_round():
    rng = np.random.default_rng(1)
    low = rng.random(100) * 0.1
    leader, found = prune(np.column_stack([low + 0.8, low]), higher_is_better=False, alpha=0.025)
    assert leader == 1 and [d.kept for d in found] == [False, True]
    assert found[0].behind == pytest.approx(-0.8)  # behind: negative is worse, whatever the direction


def test_prune_never_drops_the_leader_and_skips_undefined_questions():
    values = np.array([[1.0, 0.0], [np.nan, 1.0], [1.0, 1.0]])
    leader, found = prune(values, higher_is_better=True, alpha=0.5)
    assert leader == 0 and found[0].kept  # the NaN row is left out: cell 0 leads on the two others
    one = prune(np.ones((5, 1)), higher_is_better=True, alpha=0.025)
    assert one[0] == 0 and one[1][0].kept


def test_a_round_is_covered_by_done_or_a_partial_as_large_with_the_same_seed(tmp_path):
    cell = tmp_path / "c"
    cell.mkdir()
    assert not round_covered(cell, 0.25, 0)
    (cell / PARTIAL).write_text(json.dumps({"round": 1, "fraction": 0.5, "seed": 0}))
    assert round_covered(cell, 0.25, 0) and round_covered(cell, 0.5, 0)
    assert not round_covered(cell, 1.0, 0)  # a larger round needs more questions
    assert not round_covered(cell, 0.25, 1)  # another seed draws other questions
    (cell / PARTIAL).write_text("{not json")
    assert not round_covered(cell, 0.25, 0)
    (cell / "DONE").write_text("{}")
    assert round_covered(cell, 0.25, 5)  # the whole cell covers every round


def test_summary_counts_cell_questions_against_the_grid():
    rounds = [RoundSummary(0, 0.25, 20, 36, 10, 36, 0), RoundSummary(1, 0.5, 42, 10, 4, 10, 0),
              RoundSummary(2, 1.0, 84, 4, 4, 3, 1)]
    lines = summary(rounds, 36, 84)
    assert "kept 10, dropped 26; cell-questions computed 720" in lines[1]
    assert "(+1 cells found done)" in lines[3]
    total = 720 + 420 + 252
    assert lines[-1].endswith(f"{total} (the full grid: 3024, {total / 3024:.0%})")


def test_search_keys_enter_neither_the_cell_id_nor_the_stored_config():
    from rag_bench.runner.config import cell_id
    from rag_bench.runner.main import stored_config
    from tests.conftest import compose_config

    grid = compose_config(["tracking=none"])
    halving = compose_config(["tracking=none", "search.mode=halving", "search.rounds=[0.1,1]", "search.round=0",
                              "search.seed=3", "search.alpha=0.1"])
    assert cell_id(grid, "fp") == cell_id(halving, "fp")
    assert stored_config(grid, "/d") == stored_config(halving, "/d") and "search" not in stored_config(grid, "/d")
    assert grid.search.mode == "grid"  # the default: today's behaviour
