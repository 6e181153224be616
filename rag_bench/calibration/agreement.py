"""Agreement statistics between two raters (a person and a measure, or two people), pure functions.

- :func:`cohen_kappa`: Cohen's kappa, unweighted for binary labels or quadratically weighted for
  grades; the same number as scikit-learn's ``cohen_kappa_score`` given the same category list
  (``labels=``), tested equal on fixed vectors.
- :func:`spearman`: Spearman's rank correlation (scipy), for graded labels.
- :func:`bootstrap_ci`: a percentile bootstrap over items for any of them (items resampled with
  replacement), and :func:`kappa_ci`, kappa's interval.

Kappa is undefined (NaN) when the expected disagreement is 0: both raters gave one and the same
category to every item. It is reported as ``n/a``, never as 1.

When there is no interval (an :class:`Interval` with a ``reason``) rather than a degenerate one:

- fewer than :data:`MIN_ITEMS` labelled items: a percentile bootstrap of a handful of items does
  not hold its 95 % (and kappa's PPI sibling needs as many: ppi.MIN_LABELLED);
- more than the CI's tail share (2.5 %) of the resamples leave the statistic undefined (for kappa:
  resamples of one category only): where they would fall is unknown, so the percentile is too.
  Fewer are counted (``undefined``) and left out, as before;
- every resample gives one value (one rater constant: kappa 0 in every resample): the spread of
  the resamples says nothing about the sampling error.

No disagreement at all (kappa 1) is the one case the bootstrap cannot bound however many items
there are (every resample agrees too): kappa's lower bound is then exact, from the Clopper-Pearson
bound on the share of disagreements: with none in n items, that share is at most
``1 - 0.025^(1/n)`` (95 %), and kappa at least ``1 - that / chance``, where ``chance`` is the
share two raters with the observed category rates disagree on by chance (``1 - sum p_c^2``;
for grades, the disagreements are assumed to look like chance ones).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np


def confusion(a: Sequence[int], b: Sequence[int], categories: Sequence[int]) -> np.ndarray:
    """Counts: rows rater ``a``'s category, columns rater ``b``'s, in ``categories`` order."""
    index = {c: i for i, c in enumerate(categories)}
    m = np.zeros((len(categories), len(categories)), dtype=np.int64)
    for x, y in zip(a, b, strict=True):
        m[index[int(x)], index[int(y)]] += 1
    return m


def cohen_kappa(a: Sequence[int], b: Sequence[int], *, categories: Sequence[int] | None = None,
                weights: str | None = None) -> float:
    """Cohen's kappa of two raters over the same items; ``weights="quadratic"`` for ordinal grades
    (disagreement weight (i - j)^2 between category positions i and j)."""
    if len(a) != len(b):
        raise ValueError("both raters must rate the same items")
    if len(a) == 0:
        return float("nan")
    cats = sorted({int(x) for x in (*a, *b)}) if categories is None else [int(c) for c in categories]
    observed = confusion(a, b, cats).astype(float)
    k = len(cats)
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0)) / observed.sum()
    w: np.ndarray
    if weights is None:
        w = 1.0 - np.eye(k)
    elif weights == "quadratic":
        i = np.arange(k)
        w = (i[:, None] - i[None, :]) ** 2.0
    else:
        raise ValueError(f"weights must be None or 'quadratic', not {weights!r}")
    denominator = float((w * expected).sum())
    if denominator == 0.0:
        return float("nan")
    return float(1.0 - (w * observed).sum() / denominator)


def spearman(a: Sequence[float], b: Sequence[float]) -> float:
    """Spearman's rho (NaN when either side is constant)."""
    from scipy.stats import spearmanr

    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(x) < 2 or np.all(x == x[0]) or np.all(y == y[0]):
        return float("nan")
    return float(spearmanr(x, y).statistic)


MIN_ITEMS = 10  # fewer labelled items: no interval (see the module docstring)


@dataclass(frozen=True)
class Interval:
    """A confidence interval, or why there is none (``low``/``high`` NaN, ``reason`` set)."""

    low: float = float("nan")
    high: float = float("nan")
    reason: str = ""
    undefined: int = 0  # bootstrap resamples on which the statistic was undefined (left out)
    method: str = ""  # "bootstrap", or "exact" (no disagreement seen)

    @property
    def defined(self) -> bool:
        """Whether there is an interval."""
        return not (math.isnan(self.low) or math.isnan(self.high))

    @property
    def bounds(self) -> tuple[float, float]:
        """``(low, high)``, NaN when undefined."""
        return self.low, self.high


def bootstrap_ci(statistic: Callable[[np.ndarray, np.ndarray], float], a: Sequence[float], b: Sequence[float], *,
                 n_resamples: int = 2000, seed: int = 0, confidence: float = 0.95) -> Interval:
    """Percentile CI of ``statistic(a, b)`` over items resampled with replacement, or no interval
    (and why) below :data:`MIN_ITEMS` items, when more than the tail share of resamples leave the
    statistic undefined, or when every resample gives the same value."""
    x, y = np.asarray(a), np.asarray(b)
    n = len(x)
    if n < MIN_ITEMS:
        return Interval(reason=f"{n} labelled answers, fewer than the {MIN_ITEMS} an interval needs")
    rng = np.random.default_rng(seed)
    reps = np.array([statistic(x[idx], y[idx]) for idx in rng.integers(0, n, size=(n_resamples, n))])
    undefined = int(np.isnan(reps).sum())
    tail = (1.0 - confidence) / 2.0
    if undefined > tail * n_resamples:
        return Interval(reason=f"{undefined} of {n_resamples} resamples have no value (one category only): too few "
                        "answers of the rarer kind", undefined=undefined)
    lo, hi = np.percentile(reps[~np.isnan(reps)], [tail * 100.0, 100.0 - tail * 100.0])
    if lo == hi:
        return Interval(reason=f"every resample gives {lo:.2f}, so their spread does not measure the error "
                        "(one side gives one verdict to every answer)", undefined=undefined)
    return Interval(float(lo), float(hi), undefined=undefined, method="bootstrap")


def chance_disagreement(m: np.ndarray) -> float:
    """The share of items two raters with the category rates of confusion matrix ``m`` (rows: one
    rater, columns: the other) disagree on by chance."""
    total = float(m.sum())
    return float(1.0 - (m.sum(axis=1) / total) @ (m.sum(axis=0) / total)) if total else float("nan")


def no_disagreement_low(n: int, chance: float, confidence: float = 0.95) -> float:
    """Kappa's lower bound when ``n`` items show no disagreement: the Clopper-Pearson upper bound of
    the disagreement share (``1 - tail^(1/n)``) over the ``chance`` share, floored at -1."""
    share = 1.0 - ((1.0 - confidence) / 2.0) ** (1.0 / n)
    return max(-1.0, 1.0 - share / chance)


def items_without_disagreement(min_kappa: float, chance: float, confidence: float = 0.95) -> int | None:
    """The items that, all agreeing, show kappa >= ``min_kappa`` (:func:`no_disagreement_low`);
    None when no number can (``min_kappa`` 1, or no chance disagreement)."""
    room = (1.0 - min_kappa) * chance
    if room <= 0 or not math.isfinite(room):
        return None
    if room >= 1:
        return 1
    return math.ceil(math.log((1.0 - confidence) / 2.0) / math.log(1.0 - room))


def kappa_ci(a: Sequence[int], b: Sequence[int], *, categories: Sequence[int], weights: str | None = None,
             n_resamples: int = 2000, seed: int = 0, confidence: float = 0.95) -> Interval:
    """Kappa's interval by the rule of the module docstring: none below :data:`MIN_ITEMS` items or
    where kappa is undefined; exact when the items show no disagreement; else the bootstrap's."""
    n = len(a)
    if n < MIN_ITEMS:
        return Interval(reason=f"{n} labelled answers, fewer than the {MIN_ITEMS} an interval needs")
    cats = [int(c) for c in categories]
    k = cohen_kappa(a, b, categories=cats, weights=weights)
    if math.isnan(k):
        return Interval(reason="kappa is undefined: both sides give one and the same verdict to every answer")
    m = confusion(a, b, cats)
    if int(np.trace(m)) == n:
        return Interval(no_disagreement_low(n, chance_disagreement(m), confidence), 1.0, method="exact")
    return bootstrap_ci(lambda x, y: cohen_kappa(x.tolist(), y.tolist(), categories=cats, weights=weights), a, b,
                        n_resamples=n_resamples, seed=seed, confidence=confidence)
