"""``search=halving``: the pure parts (docs/search.md) -- the rounds, each round's stratified
question subset, a subset dataset, and the pruning decision.

Every round sees a larger, nested subset of the questions (the first round's questions are in the
second's, and so on, up to all of them), drawn per stratum (a question's tags and whether it is
answerable), seeded. After each round but the last, the cells still in are compared on the primary
measure over that round's questions with the model confidence set of
:mod:`rag_bench.stats.confidence_set` (the test the verdict uses for "not significantly worse than
the best"): the cells outside it are pruned. The error of pruning the truly best cell is spent
Bonferroni-style: ``alpha / (rounds - 1)`` per pruning round, so the best is pruned in some round
with probability at most ``alpha``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from rag_bench.domain import Dataset, Question
from rag_bench.errors import ConfigError
from rag_bench.stats.confidence_set import model_confidence_set
from rag_bench.stats.paired import randomisation_p

PARTIAL = "PARTIAL"  # the marker of a cell folder holding a round's results on a subset (no DONE)


PRUNES = ("significance", "rank")
# search.rounds when not given, by search.prune: significance, the first slice's quarter and half;
# rank, successive halving's geometric rounds for eta = 3 (a ninth, a third, all).
ROUNDS = {"significance": (0.25, 0.5, 1.0), "rank": (1 / 9, 1 / 3, 1.0)}


def check_prune(prune: Any) -> str:
    """``search.prune`` checked: one of :data:`PRUNES`."""
    if str(prune) not in PRUNES:
        raise ConfigError(f"search.prune={prune!r}: unknown -- fix: search.prune={'|'.join(PRUNES)}")
    return str(prune)


def check_keep(keep: Any) -> float:
    """``search.keep`` checked: a fraction in (0, 1)."""
    try:
        value = float(keep)
    except (TypeError, ValueError):
        value = float("nan")
    if not 0 < value < 1:
        raise ConfigError(f"search.keep={keep!r}: must be a fraction in (0, 1) -- fix: search.keep=0.3333")
    return value


def rounds_of(search: Any) -> tuple[float, ...]:
    """The fractions of a ``search`` config node: its ``rounds``, or :data:`ROUNDS` of its ``prune``.

    >>> rounds_of({"prune": "rank", "rounds": None})
    (0.1111111111111111, 0.3333333333333333, 1.0)
    """
    rounds = search.get("rounds")
    return parse_rounds(ROUNDS[check_prune(search.get("prune", "significance"))] if rounds is None else rounds)


def parse_rounds(rounds: Any) -> tuple[float, ...]:
    """The fractions of ``search.rounds`` (a list; a comma-separated string is read too):
    increasing, in (0, 1], the last 1.

    >>> parse_rounds([0.25, 0.5, 1])
    (0.25, 0.5, 1.0)
    >>> parse_rounds("1")
    (1.0,)
    """
    items = str(rounds).split(",") if isinstance(rounds, str) else list(rounds) if rounds is not None else []
    try:
        fractions = tuple(float(f) for f in items if str(f).strip())
    except (TypeError, ValueError):
        fractions = ()
    ok = bool(fractions) and fractions[-1] == 1.0 and all(0 < f <= 1 for f in fractions) \
        and all(a < b for a, b in zip(fractions, fractions[1:]))
    if not ok:
        raise ConfigError(f"search.rounds={list(items)!r}: must be increasing fractions of the questions in (0, 1], "
                          "the last 1 -- fix: search.rounds=[0.25,0.5,1]")
    return fractions


def round_alpha(alpha: float, rounds: int) -> float:
    """The error each pruning round spends: ``alpha`` split evenly over the rounds that prune
    (every round but the last).

    >>> round_alpha(0.05, 3)
    0.025
    """
    if not 0 < alpha < 1:
        raise ConfigError(f"search.alpha={alpha!r}: must be in (0, 1) -- fix: search.alpha=0.05")
    return alpha / max(rounds - 1, 1)


def stratum(question: Question) -> tuple[tuple[str, ...], bool]:
    """What a round's draw keeps in proportion: the question's tags and whether it is answerable."""
    return tuple(sorted(question.tags)), bool(question.answerable)


def _order(qid: str, seed: int) -> str:
    return hashlib.sha256(f"{seed}\0{qid}".encode()).hexdigest()


def _uniform(key: str) -> float:
    return int(hashlib.sha256(key.encode()).hexdigest()[:13], 16) / 16 ** 13


def round_questions(questions: Sequence[Question], fraction: float, seed: int) -> tuple[str, ...]:
    """The question ids a round with ``fraction`` of the questions sees, in dataset order.

    Stratified systematic sampling: within each stratum (:func:`stratum`) of ``size`` questions,
    the questions in an order seeded by ``seed`` (a hash of seed and id: the same questions whatever
    their order in the file) get ``u = (rank + offset) / size`` with a seeded offset in [0, 1) per
    stratum, and the round takes those with ``u < fraction``: ``fraction * size`` questions of each
    stratum rounded up or down (exactly that in expectation), and the subsets of growing fractions
    are nested (a question seen in one round is seen in every later one).

    >>> qs = [Question(f"q{i}", "?", answerable=i % 4 != 0) for i in range(8)]
    >>> round_questions(qs, 0.5, 0)
    ('q2', 'q4', 'q5', 'q7')
    >>> set(round_questions(qs, 0.25, 0)) <= set(round_questions(qs, 0.5, 0))
    True
    """
    if fraction >= 1:
        return tuple(q.qid for q in questions)
    groups: dict[tuple[tuple[str, ...], bool], list[str]] = {}
    for q in questions:
        groups.setdefault(stratum(q), []).append(q.qid)
    chosen: set[str] = set()
    for key, ids in groups.items():
        ranked = sorted(ids, key=lambda i: _order(i, seed))
        offset = _uniform(f"{seed}\0{key!r}")
        chosen.update(qid for rank, qid in enumerate(ranked) if (rank + offset) / len(ranked) < fraction)
    return tuple(q.qid for q in questions if q.qid in chosen)


def questions_digest(qids: Sequence[str]) -> str:
    """A short digest of a set of question ids."""
    return hashlib.sha256("\0".join(sorted(qids)).encode()).hexdigest()[:12]


def subset_dataset(dataset: Dataset, qids: Sequence[str]) -> Dataset:
    """``dataset`` with only the questions ``qids``. Its fingerprint gains the subset's digest (what
    a sweep's in-process work on questions is keyed by: a round's rankings are never taken for the
    whole set's); the corpus keeps its own (chunks and indexes are shared with the whole set's)."""
    keep = set(qids)
    return replace(dataset, questions=tuple(q for q in dataset.questions if q.qid in keep),
                   fingerprint=f"{dataset.fingerprint}~{questions_digest(qids)}", corpus_fingerprint=dataset.corpus_key)


@dataclass(frozen=True)
class Decision:
    """A cell's fate after a round: ``kept``; ``behind`` its mean on the round's questions minus
    the leader's (in the measure's better direction: negative is worse); ``p`` its model
    confidence set p-value (pruned when below the round's alpha)."""

    kept: bool
    behind: float
    p: float


def _complete(values: np.ndarray, higher_is_better: bool) -> tuple[np.ndarray, np.ndarray]:
    """``values`` (questions x cells) without the questions some cell has no value for, and each
    cell's mean in the measure's better direction (higher is better)."""
    v = np.asarray(values, dtype=np.float64)
    v = v[~np.isnan(v).any(axis=1)] if v.size else v
    if v.ndim != 2 or v.shape[1] == 0:
        raise ValueError(f"values must be (questions, cells) with at least one cell, got shape {v.shape}")
    sign = 1.0 if higher_is_better else -1.0
    return v, (v.mean(axis=0) * sign if len(v) else np.zeros(v.shape[1]))


def prune(values: np.ndarray, *, higher_is_better: bool, alpha: float, seed: int = 0,
          n_resamples: int = 2000) -> tuple[int, list[Decision]]:
    """The leader (index of the best mean) and each cell's :class:`Decision` from ``values``
    (questions x cells, NaN where undefined: such questions are left out, as the verdict does):
    kept when in the ``1 - alpha`` model confidence set. The leader is always kept.

    >>> rng = np.random.default_rng(0)
    >>> good = (rng.random(80) < 0.8).astype(float)
    >>> leader, found = prune(np.column_stack([good, good * (rng.random(80) < 0.3)]), higher_is_better=True,
    ...                       alpha=0.025)
    >>> leader, [d.kept for d in found]
    (0, [True, False])
    """
    v, means = _complete(values, higher_is_better)
    leader = int(np.argmax(means))
    found = model_confidence_set(v, higher_is_better=higher_is_better, alpha=alpha, n_resamples=n_resamples,
                                 seed=seed)
    decisions = [Decision(bool(found.included[i]) or i == leader, float(means[i] - means[leader]),
                          float(found.p_values[i])) for i in range(v.shape[1])]
    return leader, decisions


def keep_count(cells: int, keep: float) -> int:
    """How many of ``cells`` a rank round keeps: ``floor(cells * keep)`` (Hyperband's ``n / eta``),
    never fewer than 1.

    >>> keep_count(36, 1 / 3), keep_count(2, 1 / 3), keep_count(351, 1 / 3)
    (12, 1, 117)
    """
    return max(1, int(np.floor(cells * keep + 1e-9)))


def paired_p(a: np.ndarray, b: np.ndarray, *, seed: int = 0) -> float:
    """The verdict's paired test (:func:`rag_bench.stats.paired.randomisation_p`, two-sided) of two
    cells' per-question values, on the questions where both are defined."""
    both = ~(np.isnan(a) | np.isnan(b))
    return randomisation_p(a[both], b[both], n_resamples=10000, seed=seed)


def prune_rank(values: np.ndarray, *, higher_is_better: bool, keep: float, seed: int = 0) -> tuple[int, list[Decision]]:
    """Classic successive halving (Hyperband's rule, docs/search.md): the leader (index of the best
    mean; the first such cell on a tie) and each cell's :class:`Decision` from ``values`` (questions
    x cells; questions where a cell is undefined are left out, as in :func:`prune`): exactly
    :func:`keep_count` cells kept, the best means. ``p`` is each cell's paired test against the
    leader (:func:`paired_p`; 1 for the leader): recorded -- a dropped cell may well be not
    significantly worse -- and used only to break a tie at the cut: of cells with the same mean, the
    one the test least tells apart from the leader (the larger ``p``) is kept, then the earlier
    cell (the grid's order). Deterministic, and the count is the textbook's whatever the ties (on a
    small first round of a 0/1 measure, ties are the rule: keeping them all would keep about half).

    >>> v = np.array([[1, 1, 0, 0, 1], [1, 0, 1, 0, 1], [1, 1, 1, 0, 0]], dtype=float)
    >>> leader, found = prune_rank(v, higher_is_better=True, keep=0.4)
    >>> leader, [d.kept for d in found]
    (0, [True, True, False, False, False])
    """
    v, means = _complete(values, higher_is_better)
    leader = int(np.argsort(-means, kind="stable")[0])
    p = [1.0 if i == leader else paired_p(v[:, leader], v[:, i], seed=seed) for i in range(v.shape[1])]
    order = sorted(range(v.shape[1]), key=lambda i: (-means[i], -p[i], i))
    kept = set(order[:keep_count(v.shape[1], keep)])
    return leader, [Decision(i in kept, float(means[i] - means[leader]), p[i]) for i in range(v.shape[1])]


@dataclass(frozen=True)
class Regret:
    """A pruned cell found significantly better than the sweep's final best on the questions it
    saw (:func:`guard`): its mean minus the best's there (positive: better), the paired test's p."""

    cell: int
    questions: int
    ahead: float
    p: float


def guard(values: np.ndarray, best: int, pruned: Sequence[int], *, higher_is_better: bool, alpha: float,
          seed: int = 0) -> list[Regret]:
    """The pruned cells (column indices of ``values``: questions x cells, NaN where a cell has no
    value, e.g. a question its round did not see) significantly better than the final ``best`` on
    the questions each saw: the verdict's paired test (:func:`paired_p`) at ``alpha``.

    >>> v = np.array([[1, 0]] * 6 + [[np.nan, 1]], dtype=float)  # the pruned cell never saw the last question
    >>> guard(v, best=1, pruned=[0], higher_is_better=True, alpha=0.05)
    [Regret(cell=0, questions=6, ahead=1.0, p=0.03125)]
    """
    v = np.asarray(values, dtype=np.float64)
    sign = 1.0 if higher_is_better else -1.0
    found = []
    for i in pruned:
        both = ~(np.isnan(v[:, i]) | np.isnan(v[:, best]))
        if not both.any():
            continue
        ahead = float((v[both, i].mean() - v[both, best].mean()) * sign)
        p = paired_p(v[:, best], v[:, i], seed=seed)
        if ahead > 0 and p <= alpha:
            found.append(Regret(i, int(both.sum()), ahead, p))
    return found


@dataclass(frozen=True)
class RoundSummary:
    """One round of a halving sweep: its fraction and questions, cells in and kept, the cells run
    in this round (``computed``), those found done on disk (``reused``), the cell-questions the
    runner really computed (``questions_computed``: each cell's questions new to it, as its folder
    reports), and of the cells dropped, how many the paired test against the leader did not find
    significantly worse (``not_worse``; rank pruning only)."""

    round: int
    fraction: float
    questions: int
    cells: int
    kept: int
    computed: int
    reused: int
    questions_computed: int = 0
    not_worse: int = 0

    def line(self) -> str:
        dropped = self.cells - self.kept
        return (f"round {self.round + 1}: {self.fraction:.0%} of the questions ({self.questions}), {self.cells} cells: "
                f"kept {self.kept}, dropped {dropped}"
                + (f" ({self.not_worse} of them NOT significantly worse than the leader)" if self.not_worse else "")
                + f"; cell-questions computed {self.questions_computed} ({self.computed} cells run)"
                + (f" (+{self.reused} cells found done)" if self.reused else ""))


def summary(rounds: Sequence[RoundSummary], grid_cells: int, all_questions: int) -> list[str]:
    """The end-of-sweep lines: each round, then the total cell-questions against the grid's."""
    total = sum(r.questions_computed for r in rounds)
    grid = grid_cells * all_questions
    return ["Successive halving (search=halving):", *(f"  {r.line()}" for r in rounds),
            f"  cell-questions computed: {total} (the full grid: {grid}, {total / grid:.0%})" if grid else ""]
