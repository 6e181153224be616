"""Can a retrieval-score threshold tell answerable from unanswerable questions?"""

from __future__ import annotations

import numpy as np


def auroc(scores: np.ndarray, positive: np.ndarray) -> float:
    """Area under the ROC curve of ``scores`` for ``positive`` (Mann-Whitney, ties count half).

    NaN when either class is empty.

    >>> auroc(np.array([0.9, 0.8, 0.3, 0.1]), np.array([True, True, False, False]))
    1.0
    >>> auroc(np.array([0.5, 0.5]), np.array([True, False]))
    0.5
    """
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(positive, dtype=bool)
    pos, neg = s[y], s[~y]
    if pos.size == 0 or neg.size == 0:
        return float("nan")
    greater = (pos[:, None] > neg[None, :]).sum()
    ties = (pos[:, None] == neg[None, :]).sum()
    return float((greater + 0.5 * ties) / (pos.size * neg.size))


def best_f1_threshold(scores: np.ndarray, positive: np.ndarray) -> tuple[float, float]:
    """Threshold t maximising F1 of "answerable iff score >= t", and that F1.

    Candidates are the observed scores; ties in F1 go to the higher threshold.

    >>> best_f1_threshold(np.array([0.9, 0.8, 0.3, 0.1]), np.array([True, True, False, False]))
    (0.8, 1.0)
    """
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(positive, dtype=bool)
    if s.size == 0 or not y.any():
        return float("nan"), float("nan")
    # Every candidate's counts at once: predicted = #(s >= t), true positives = #(positives >= t).
    candidates = np.unique(s)[::-1]
    predicted = s.size - np.searchsorted(np.sort(s), candidates, side="left")
    positives = np.sort(s[y])
    tp = positives.size - np.searchsorted(positives, candidates, side="left")
    f1s = 2 * tp / (predicted + positives.size)
    best_t, best_f1 = float("nan"), -1.0
    for t, f1 in zip(candidates.tolist(), f1s.tolist()):
        if f1 > best_f1 + 1e-12:
            best_t, best_f1 = t, f1
    return best_t, best_f1
