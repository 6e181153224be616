"""search=halving, the pure parts: the rounds, their stratified nested question subsets, the
subset dataset, the pruning decision, what counts as a round already done (resume)."""

from __future__ import annotations

import json
import math
from collections import Counter

import numpy as np
import pytest

from rag_bench.domain import Dataset, Question
from rag_bench.errors import ConfigError
from rag_bench.runner.rounds import (
    PARTIAL,
    RoundSummary,
    check_keep,
    check_prune,
    guard,
    keep_count,
    parse_rounds,
    prune,
    prune_rank,
    round_alpha,
    round_questions,
    rounds_of,
    stratum,
    subset_dataset,
    summary,
)
from rag_bench.search.round_cells import round_covered


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


def test_summary_counts_the_cell_questions_the_runner_ran_against_the_grid():
    # incremental rounds: a survivor's later round runs only its new questions (22 = 42 - 20, 42 = 84 - 42)
    rounds = [RoundSummary(0, 0.25, 20, 36, 10, 36, 0, 720), RoundSummary(1, 0.5, 42, 10, 4, 10, 0, 220),
              RoundSummary(2, 1.0, 84, 4, 4, 3, 1, 126, 0)]
    lines = summary(rounds, 36, 84)
    assert "kept 10, dropped 26; cell-questions computed 720 (36 cells run)" in lines[1]
    assert "cell-questions computed 220 (10 cells run)" in lines[2]
    assert "(+1 cells found done)" in lines[3]
    total = 720 + 220 + 126
    assert lines[-1].endswith(f"{total} (the full grid: 3024, {total / 3024:.0%})")
    ranked = RoundSummary(0, 1 / 9, 10, 36, 12, 36, 0, 360, 20).line()
    assert "dropped 24 (20 of them NOT significantly worse than the leader)" in ranked


def test_rank_keeps_the_textbook_count_by_mean_never_fewer_than_one():
    assert [keep_count(n, 1 / 3) for n in (1, 2, 3, 8, 9, 36, 351)] == [1, 1, 1, 2, 3, 12, 117]
    assert keep_count(10, 0.5) == 5 and keep_count(3, 0.9) == 2
    rng = np.random.default_rng(0)
    means = np.linspace(0.2, 0.8, 9)  # cell 8 best, then 7, 6 ...
    values = (rng.random((300, 9)) < means).astype(float)
    leader, found = prune_rank(values, higher_is_better=True, keep=1 / 3)
    order = np.argsort(-values.mean(axis=0))
    assert leader == order[0] and sorted(i for i, d in enumerate(found) if d.kept) == sorted(order[:3].tolist())
    assert found[leader].p == 1.0 and found[leader].behind == 0.0
    assert all(d.behind <= 0 for d in found)
    one = prune_rank(values[:, :2], higher_is_better=True, keep=1 / 3)[1]
    assert [d.kept for d in one] == [False, True]  # of 2 cells, 1 kept (never 0)
    single = prune_rank(np.ones((4, 1)), higher_is_better=True, keep=1 / 3)
    assert single[0] == 0 and single[1][0].kept


def test_rank_reads_a_lower_is_better_measure_the_right_way_round():
    values = np.column_stack([np.full(20, 3.0), np.full(20, 1.0), np.full(20, 2.0)])
    leader, found = prune_rank(values, higher_is_better=False, keep=1 / 3)
    assert leader == 1 and [d.kept for d in found] == [False, True, False]
    assert found[0].behind == pytest.approx(-2.0)


def test_rank_breaks_a_tie_at_the_cut_by_the_paired_test_then_the_grid_order():
    # cells 1, 2 and 3 have the same mean (0.5), below the leader's (0.7); the paired test tells
    # cell 2 apart from the leader least (p 0.34: 7 questions worse, 3 better) and cells 1 and 3
    # more (p 0.125: 4 questions worse, none better).
    lead = np.array([1.0] * 14 + [0.0] * 6)
    near = lead.copy()
    near[:4] = 0.0
    far = np.array([1.0, 0.0] * 10)
    values = np.column_stack([lead, near, far, near, np.zeros(20), np.zeros(20)])
    leader, found = prune_rank(values, higher_is_better=True, keep=1 / 3)
    assert leader == 0 and [d.kept for d in found] == [True, False, True, False, False, False]
    assert found[2].p > found[1].p == found[3].p
    # the same p too: the earlier cell in the grid's order
    again = prune_rank(np.column_stack([lead, near, near]), higher_is_better=True, keep=2 / 3)[1]
    assert [d.kept for d in again] == [True, True, False]
    # independent of the cells' order but for that last rule: the same cell wins when moved
    moved = prune_rank(values[:, [3, 2, 1, 0, 4, 5]], higher_is_better=True, keep=1 / 3)[1]
    assert [d.kept for d in moved] == [False, True, False, True, False, False]


def test_rank_records_each_dropped_cells_paired_p_even_when_not_significantly_worse():
    rng = np.random.default_rng(3)
    base = (rng.random(40) < 0.6).astype(float)
    close = base.copy()
    close[:2] = 1 - close[:2]
    far = np.zeros(40)
    _, found = prune_rank(np.column_stack([base, close, far]), higher_is_better=True, keep=1 / 3)
    assert [d.kept for d in found] in ([True, False, False], [False, True, False])
    dropped = [d for d in found if not d.kept]
    assert max(d.p for d in dropped) > 0.05 and min(d.p for d in dropped) < 0.001


def test_the_guard_flags_a_pruned_cell_significantly_better_than_the_final_best_where_it_ran():
    rng = np.random.default_rng(5)
    best = (rng.random(60) < 0.5).astype(float)
    lucky = np.full(60, np.nan)
    lucky[:20] = 1.0  # pruned after 20 questions, on which it beat the final best
    unlucky = np.full(60, np.nan)
    unlucky[:20] = best[:20]  # the same as the best where it ran
    worse = np.full(60, np.nan)
    worse[:20] = 0.0
    values = np.column_stack([best, lucky, unlucky, worse])
    found = guard(values, 0, [1, 2, 3], higher_is_better=True, alpha=0.05)
    assert [g.cell for g in found] == [1] and found[0].questions == 20 and found[0].p <= 0.05
    assert found[0].ahead == pytest.approx(1 - best[:20].mean())
    # lower is better: the same data read the other way round flags the cell that was worse above
    assert [g.cell for g in guard(values, 0, [1, 2, 3], higher_is_better=False, alpha=0.05)] == [3]
    assert guard(values, 0, [], higher_is_better=True, alpha=0.05) == []


def test_rounds_default_by_the_prune_rule_and_bad_keys_are_refused():
    assert rounds_of({"prune": "significance", "rounds": None}) == (0.25, 0.5, 1.0)
    assert rounds_of({"prune": "rank", "rounds": None}) == (1 / 9, 1 / 3, 1.0)
    assert rounds_of({"prune": "rank", "rounds": [0.5, 1]}) == (0.5, 1.0)  # given rounds win
    with pytest.raises(ConfigError, match="fix: search.prune=significance|rank"):
        check_prune("top")
    for bad in (0, 1, 1.5, "x"):
        with pytest.raises(ConfigError, match="fix: search.keep="):
            check_keep(bad)
    assert check_keep("0.5") == 0.5


def test_search_keys_enter_neither_the_cell_id_nor_the_stored_config():
    from rag_bench.runner.config import cell_id
    from rag_bench.runner.main import stored_config
    from tests.conftest import compose_config

    grid = compose_config(["tracking=none"])
    halving = compose_config(["tracking=none", "search=halving", "search.rounds=[0.1,1]", "search.round=0",
                              "search.seed=3", "search.alpha=0.1", "budget.max_llm_calls=9"])
    assert cell_id(grid, "fp") == cell_id(halving, "fp")
    assert stored_config(grid, "/d") == stored_config(halving, "/d") and "search" not in stored_config(grid, "/d")
    assert "budget" not in stored_config(grid, "/d")
    assert grid.search._target_ == "rag_bench.search.grid.Grid"  # the default: today's behaviour
