"""Ranking kernels: golden values derived by hand, edge cases, and properties over a registry."""

from __future__ import annotations

import doctest
import math
from collections.abc import Callable

import numpy as np
import pytest

from rag_bench.metrics import ranking
from rag_bench.metrics.ranking import (
    average_precision,
    hit_at_k,
    mean_over,
    ndcg_at_k,
    precision_at_k,
    r_precision,
    ranking_metrics,
    recall_at_k,
    reciprocal_rank,
)

NAN = float("nan")


def d(rank: int) -> float:
    """Discount of a rank: 1 / log2(rank + 1)."""
    return 1.0 / math.log2(rank + 1)


# --------------------------------------------------------------------------- golden values

# One question, five retrieved items. Judged: two items of level 1 and one of level 2, one of
# the level-1 items never retrieved; so n_relevant = 3 and the ideal list is [2, 1, 1].
#   rank:   1  2  3  4  5
#   level:  0  1  0  2  0
LEVELS = np.array([[0, 1, 0, 2, 0]])
N_REL = np.array([3])
IDEAL = np.array([[2, 1, 1]])


@pytest.mark.parametrize(
    ("k", "expected"),
    [
        (1, 0.0),  # rank 1 is not relevant
        (2, 1.0),  # rank 2 is
        (50, 1.0),  # k beyond depth looks at everything
    ],
)
def test_hit_golden(k: int, expected: float) -> None:
    assert hit_at_k(LEVELS, n_relevant=N_REL, k=k)[0] == expected


@pytest.mark.parametrize(
    ("k", "expected"),
    [
        (1, 0 / 1),
        (2, 1 / 2),  # one relevant in the top 2
        (5, 2 / 5),  # ranks 2 and 4
        (10, 2 / 10),  # divides by k although only 5 were retrieved
    ],
)
def test_precision_golden(k: int, expected: float) -> None:
    assert precision_at_k(LEVELS, n_relevant=N_REL, k=k)[0] == pytest.approx(expected)


@pytest.mark.parametrize(("k", "expected"), [(1, 0.0), (2, 1 / 3), (4, 2 / 3), (100, 2 / 3)])
def test_recall_golden(k: int, expected: float) -> None:
    # Denominator 3: the relevant item that was never retrieved still counts.
    assert recall_at_k(LEVELS, n_relevant=N_REL, k=k)[0] == pytest.approx(expected)


@pytest.mark.parametrize(("k", "expected"), [(None, 1 / 2), (1, 0.0), (2, 1 / 2), (9, 1 / 2)])
def test_reciprocal_rank_golden(k: int | None, expected: float) -> None:
    # First relevant item at rank 2.
    assert reciprocal_rank(LEVELS, n_relevant=N_REL, k=k)[0] == pytest.approx(expected)


def test_average_precision_golden() -> None:
    # Precision at the relevant ranks: P@2 = 1/2, P@4 = 2/4; the missed one adds 0.
    # AP = (1/2 + 2/4) / 3 = 1/3.
    assert average_precision(LEVELS, n_relevant=N_REL)[0] == pytest.approx(1 / 3)


def test_r_precision_golden() -> None:
    # R = 3; the top 3 hold one relevant item (rank 2).
    assert r_precision(LEVELS, n_relevant=N_REL)[0] == pytest.approx(1 / 3)


@pytest.mark.parametrize(
    ("k", "gain", "expected"),
    [
        # DCG = 1*d(2) + 2*d(4); ideal [2, 1, 1] -> 2*d(1) + 1*d(2) + 1*d(3).
        (None, "linear", (d(2) + 2 * d(4)) / (2 * d(1) + d(2) + d(3))),
        # Cut at 2: DCG = 1*d(2); ideal cut at 2 = 2*d(1) + 1*d(2).
        (2, "linear", d(2) / (2 * d(1) + d(2))),
        # Exponential gains 2^l - 1: level 1 -> 1, level 2 -> 3.
        (None, "exponential", (d(2) + 3 * d(4)) / (3 * d(1) + d(2) + d(3))),
        # Cut at 1: nothing gained at rank 1.
        (1, "linear", 0.0),
    ],
)
def test_ndcg_golden(k: int | None, gain: str, expected: float) -> None:
    assert ndcg_at_k(LEVELS, IDEAL, k=k, gain=gain)[0] == pytest.approx(expected)


def test_ndcg_numeric_value() -> None:
    # Same as the first case above, numerically: (0.63093 + 0.86135) / (2 + 0.63093 + 0.5).
    assert ndcg_at_k(LEVELS, IDEAL)[0] == pytest.approx(1.49228 / 3.13093, abs=1e-5)


def test_relevance_level_threshold() -> None:
    # With relevance_level=2 only the level-2 item (rank 4) is relevant; one such item exists.
    assert reciprocal_rank(LEVELS, n_relevant=[1], relevance_level=2)[0] == pytest.approx(1 / 4)
    assert precision_at_k(LEVELS, n_relevant=[1], k=4, relevance_level=2)[0] == pytest.approx(1 / 4)
    assert average_precision(LEVELS, n_relevant=[1], relevance_level=2)[0] == pytest.approx(1 / 4)


# --------------------------------------------------------------------------- edge cases


def test_negative_levels_are_neither_relevant_nor_gain() -> None:
    # Rank 1 is judged -2 (worse than non-relevant), rank 2 is relevant; ideal [1, -2].
    levels, n_rel, ideal = np.array([[-2, 1]]), np.array([1]), np.array([[1, -2, 0]])
    assert hit_at_k(levels, n_relevant=n_rel, k=1)[0] == 0.0
    assert reciprocal_rank(levels, n_relevant=n_rel)[0] == pytest.approx(1 / 2)
    # DCG = 0 + 1*d(2); the -2 neither subtracts nor counts in the ideal: IDCG = 1*d(1).
    assert ndcg_at_k(levels, ideal)[0] == pytest.approx(d(2))
    assert ndcg_at_k(levels, ideal, gain="exponential")[0] == pytest.approx(d(2))


def test_all_relevant_scores_one() -> None:
    # Four relevant items, all retrieved first: every metric is perfect, except recall below
    # the number of relevant items, which is k / 4.
    levels = np.ones((2, 4), dtype=int)
    n_rel = np.array([4, 4])
    out = ranking_metrics(levels=levels, n_relevant=n_rel, ideal=levels, ks=[1, 2, 4])
    np.testing.assert_allclose(out.pop("recall@1"), 1 / 4)
    np.testing.assert_allclose(out.pop("recall@2"), 2 / 4)
    for name, values in out.items():
        np.testing.assert_allclose(values, 1.0, err_msg=name)
    np.testing.assert_allclose(r_precision(levels, n_relevant=n_rel), 1.0)


def test_padding_changes_nothing() -> None:
    # A row of 2 retrieved items padded to depth 6 gives the same values as depth 2.
    short = np.array([[1, 0]])
    padded = np.array([[1, 0, 0, 0, 0, 0]])
    ideal = np.array([[1, 1]])
    for name, metric in METRICS.items():
        np.testing.assert_allclose(
            metric(padded, np.array([2]), ideal), metric(short, np.array([2]), ideal),
            err_msg=name,
        )


def test_empty_ranking_scores_zero() -> None:
    # Depth 0 (a question with nothing retrieved) is defined and worth 0.
    empty = np.zeros((1, 0), dtype=int)
    for name, metric in METRICS.items():
        assert metric(empty, np.array([1]), np.array([[1]]))[0] == 0.0, name


def test_no_relevant_gives_nan_everywhere() -> None:
    levels, ideal = np.array([[0, 0, -1]]), np.array([[0, 0, -1]])
    for name, metric in METRICS.items():
        assert np.isnan(metric(levels, np.array([0]), ideal)[0]), name


def test_ranking_metrics_shares_the_denominator() -> None:
    # Level 1 is below relevance_level=2: no relevant item, so every metric is NaN, even
    # nDCG, whose graded gain alone would be defined (ndcg_at_k gives 1.0 here).
    levels, ideal = np.array([[1, 0]]), np.array([[1]])
    assert ndcg_at_k(levels, ideal)[0] == 1.0
    out = ranking_metrics(levels=levels, n_relevant=[0], ideal=ideal, ks=[1], relevance_level=2)
    assert all(np.isnan(v[0]) for v in out.values())


def test_ranking_metrics_keys_and_values() -> None:
    out = ranking_metrics(levels=LEVELS, n_relevant=N_REL, ideal=IDEAL, ks=[5, 1, 5])
    assert set(out) == {
        f"{m}@{k}" for m in ("hit", "precision", "recall", "mrr", "ndcg") for k in (1, 5)
    } | {"mrr", "ndcg", "map"}
    assert out["map"][0] == pytest.approx(1 / 3)
    assert out["precision@5"][0] == pytest.approx(2 / 5)
    assert out["ndcg@1"][0] == 0.0


def test_mean_over_ignores_nan() -> None:
    assert mean_over(np.array([1.0, NAN, 0.5])) == (0.75, 2)
    mean, n = mean_over(np.array([NAN, NAN]))
    assert math.isnan(mean) and n == 0
    mean, n = mean_over(np.array([]))
    assert math.isnan(mean) and n == 0


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize("k", [0, -1, 1.5, True, "3"])
@pytest.mark.parametrize("kernel", [hit_at_k, precision_at_k, recall_at_k])
def test_bad_k_raises(kernel: Callable[..., np.ndarray], k: object) -> None:
    with pytest.raises(ValueError, match="k must be a positive integer"):
        kernel(LEVELS, n_relevant=N_REL, k=k)


@pytest.mark.parametrize("k", [0, -3])
def test_bad_k_raises_for_optional_cutoffs(k: int) -> None:
    with pytest.raises(ValueError, match=f"k must be a positive integer or None, got {k}"):
        reciprocal_rank(LEVELS, n_relevant=N_REL, k=k)
    with pytest.raises(ValueError, match="k must be"):
        ndcg_at_k(LEVELS, IDEAL, k=k)
    with pytest.raises(ValueError, match="k must be"):
        ranking_metrics(levels=LEVELS, n_relevant=N_REL, ideal=IDEAL, ks=[5, k])


def test_bad_gain_raises() -> None:
    expected = r"gain must be one of \['exponential', 'linear'\], got 'log'"
    with pytest.raises(ValueError, match=expected):
        ndcg_at_k(LEVELS, IDEAL, gain="log")


@pytest.mark.parametrize("level", [0, -1, 1.5])
def test_bad_relevance_level_raises(level: object) -> None:
    with pytest.raises(ValueError, match="relevance_level must be an integer >= 1"):
        hit_at_k(LEVELS, n_relevant=N_REL, k=1, relevance_level=level)  # type: ignore[arg-type]


def test_shape_errors_name_the_argument() -> None:
    with pytest.raises(ValueError, match="levels must be a 2-D array"):
        hit_at_k([1, 0], n_relevant=[1], k=1)
    with pytest.raises(ValueError, match=r"n_relevant must have shape \(1,\)"):
        hit_at_k(LEVELS, n_relevant=[1, 2], k=1)
    with pytest.raises(ValueError, match="ideal must have one row per question"):
        ndcg_at_k(LEVELS, np.zeros((2, 3)))
    with pytest.raises(ValueError, match="ideal must be sorted in descending order"):
        ndcg_at_k(LEVELS, [[1, 2]])
    with pytest.raises(ValueError, match="ks must be a non-empty sequence"):
        ranking_metrics(levels=LEVELS, n_relevant=N_REL, ideal=IDEAL, ks=[])


# --------------------------------------------------------------------------- properties

Metric = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]

#: Every per-question metric with one fixed set of parameters, for the property checks.
METRICS: dict[str, Metric] = {
    "hit@3": lambda lv, n, ideal: hit_at_k(lv, n_relevant=n, k=3),
    "precision@3": lambda lv, n, ideal: precision_at_k(lv, n_relevant=n, k=3),
    "recall@3": lambda lv, n, ideal: recall_at_k(lv, n_relevant=n, k=3),
    "recall@3/l2": lambda lv, n, ideal: recall_at_k(lv, n_relevant=n, k=3, relevance_level=2),
    "mrr": lambda lv, n, ideal: reciprocal_rank(lv, n_relevant=n),
    "mrr@2": lambda lv, n, ideal: reciprocal_rank(lv, n_relevant=n, k=2),
    "ndcg": lambda lv, n, ideal: ndcg_at_k(lv, ideal),
    "ndcg@3": lambda lv, n, ideal: ndcg_at_k(lv, ideal, k=3),
    "ndcg_exp@3": lambda lv, n, ideal: ndcg_at_k(lv, ideal, k=3, gain="exponential"),
    "map": lambda lv, n, ideal: average_precision(lv, n_relevant=n),
    "rprec": lambda lv, n, ideal: r_precision(lv, n_relevant=n),
}


def random_questions(seed: int, n_q: int = 40) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Consistent random inputs: each question judges some items, retrieves some of them
    (in random order) mixed with unjudged ones, and the arrays are derived from that."""
    rng = np.random.default_rng(seed)
    depth, pool = 8, 12
    levels = np.zeros((n_q, depth), dtype=int)
    ideal = np.zeros((n_q, pool), dtype=int)
    n_rel = np.zeros(n_q, dtype=int)
    for i in range(n_q):
        judged = rng.integers(-1, 4, size=rng.integers(0, pool + 1))
        n_ret = rng.integers(0, depth + 1)
        items = np.concatenate([judged, np.zeros(depth, dtype=int)])  # + unjudged items
        levels[i, :n_ret] = rng.permutation(items)[:n_ret]
        ideal[i, : len(judged)] = np.sort(judged)[::-1]
        n_rel[i] = int((judged >= 1).sum())
    return levels, n_rel, ideal


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("name", sorted(METRICS))
def test_values_lie_in_unit_interval(name: str, seed: int) -> None:
    values = METRICS[name](*random_questions(seed))
    defined = values[~np.isnan(values)]
    assert defined.size > 0
    assert np.all((defined >= 0.0) & (defined <= 1.0 + 1e-12))


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("name", sorted(METRICS))
def test_invariant_to_question_order(name: str, seed: int) -> None:
    levels, n_rel, ideal = random_questions(seed)
    perm = np.random.default_rng(seed + 100).permutation(len(n_rel))
    np.testing.assert_array_equal(
        METRICS[name](levels, n_rel, ideal)[perm],
        METRICS[name](levels[perm], n_rel[perm], ideal[perm]),
    )


@pytest.mark.parametrize("name", sorted(METRICS))
def test_nan_exactly_where_nothing_is_relevant(name: str) -> None:
    levels, n_rel, ideal = random_questions(7)
    values = METRICS[name](levels, n_rel, ideal)
    if name.startswith("ndcg"):
        # nDCG is undefined where no judged item has a positive level.
        np.testing.assert_array_equal(np.isnan(values), (ideal <= 0).all(axis=1))
    elif name.endswith("/l2"):
        assert np.all(np.isnan(values[n_rel == 0]))
    else:
        np.testing.assert_array_equal(np.isnan(values), n_rel == 0)


def test_docstring_examples() -> None:
    result = doctest.testmod(ranking)
    assert result.attempted > 0 and result.failed == 0
