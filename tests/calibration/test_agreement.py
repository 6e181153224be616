"""Kappa equals scikit-learn's; PPI equals a hand derivation and the ppi-python package's numbers."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from rag_bench.calibration.agreement import (
    bootstrap_ci,
    chance_disagreement,
    cohen_kappa,
    confusion,
    items_without_disagreement,
    kappa_ci,
    no_disagreement_low,
    spearman,
)
from rag_bench.calibration.labels import answer_digest, label_digest, load_labels
from rag_bench.calibration.ppi import ppi_mean
from rag_bench.errors import DataError

A = [1, 0, 1, 1, 0, 1, 1, 0, 1, 1, 0, 0, 1, 1, 1]
B = [1, 0, 1, 0, 0, 1, 1, 1, 1, 1, 0, 1, 1, 0, 1]
GA = [0, 1, 2, 3, 4, 4, 3, 2, 2, 1, 0, 3, 4, 2, 1]
GB = [0, 2, 2, 3, 3, 4, 2, 2, 1, 1, 1, 3, 4, 3, 0]


def test_binary_kappa_equals_sklearn():
    assert cohen_kappa(A, B) == pytest.approx(cohen_kappa_score(A, B), abs=1e-12)


def test_quadratic_kappa_equals_sklearn_even_with_a_grade_nobody_used():
    assert cohen_kappa(GA, GB, weights="quadratic") == pytest.approx(
        cohen_kappa_score(GA, GB, weights="quadratic"), abs=1e-12)
    a, b = [0, 1, 1, 4, 4, 0], [0, 1, 0, 4, 3, 1]  # grade 2 unused: positions must come from the scale
    cats = list(range(5))
    assert cohen_kappa(a, b, categories=cats, weights="quadratic") == pytest.approx(
        cohen_kappa_score(a, b, labels=cats, weights="quadratic"), abs=1e-12)


def test_kappa_of_constant_raters_is_undefined_not_one():
    assert math.isnan(cohen_kappa([1, 1, 1], [1, 1, 1]))
    assert confusion([1, 0, 1], [1, 1, 1], [0, 1]).tolist() == [[0, 1], [0, 2]]


def test_spearman_and_bootstrap_ci_bracket_the_estimate():
    rho = spearman(GA, GB)
    lo, hi = bootstrap_ci(spearman, GA, GB, n_resamples=500, seed=1).bounds
    assert lo <= rho <= hi and -1 <= lo < hi <= 1
    k = cohen_kappa(A, B)
    klo, khi = bootstrap_ci(lambda x, y: cohen_kappa(x, y), A, B, n_resamples=500).bounds
    assert klo <= k <= khi


def test_kappa_ci_keeps_the_bootstrap_numbers_where_the_labels_are_enough():
    """On 15 answers with disagreements: the percentile bootstrap exactly as before this rule."""
    rng = np.random.default_rng(0)
    x, y = np.asarray(A), np.asarray(B)
    reps = np.array([cohen_kappa(x[i].tolist(), y[i].tolist(), categories=[0, 1])
                     for i in rng.integers(0, len(x), size=(2000, len(x)))])
    tail = (1.0 - 0.95) / 2.0 * 100.0  # 2.5000000000000022, as the former code computed it
    want = np.percentile(reps[~np.isnan(reps)], [tail, 100.0 - tail])
    ci = kappa_ci(A, B, categories=[0, 1])
    assert ci.method == "bootstrap" and ci.bounds == (float(want[0]), float(want[1])) and ci.reason == ""


def test_kappa_ci_is_none_below_min_items_or_where_too_many_resamples_are_undefined():
    assert kappa_ci([1, 0, 1, 0], [1, 0, 1, 0], categories=[0, 1]).reason.startswith("4 labelled answers, fewer than")
    assert "kappa is undefined" in kappa_ci([1] * 12, [1] * 12, categories=[0, 1]).reason
    # 19 agreeing "no" and one disagreement: (19/20)^20 = 36 % of the resamples hold one category only
    rare = kappa_ci([0] * 19 + [1], [0] * 20, categories=[0, 1])
    assert not rare.defined and "resamples have no value" in rare.reason and rare.undefined > 50
    # one rater constant: kappa 0 in every resample, a zero-width interval that measures nothing
    flat = kappa_ci([0, 1] * 10, [0] * 20, categories=[0, 1])
    assert not flat.defined and flat.reason.startswith("every resample gives 0.00")


def test_without_disagreement_the_lower_bound_is_exact_and_tells_how_many_labels_a_bar_needs():
    ci = kappa_ci([0, 1] * 20, [0, 1] * 20, categories=[0, 1])
    # no disagreement in 40: share <= 1 - 0.025^(1/40) (Clopper-Pearson), chance share 0.5
    assert ci.method == "exact" and ci.high == 1.0
    assert ci.low == pytest.approx(1 - (1 - 0.025 ** (1 / 40)) / 0.5, abs=1e-12)
    for bar in (0.6, 0.8, 0.95):
        need = items_without_disagreement(bar, 0.5)
        assert need is not None and no_disagreement_low(need, 0.5) >= bar > no_disagreement_low(need - 1, 0.5)
    assert items_without_disagreement(1.0, 0.5) is None
    assert chance_disagreement(np.array([[20, 0], [0, 20]])) == 0.5


# ppi-python 0.2.3 (pip install ppi-python, in a separate venv), on these vectors:
#   ppi_mean_pointestimate(Y, Yhat, Yhat_unlabeled, lam=1) -> 0.75
#   ppi_mean_ci(Y, Yhat, Yhat_unlabeled, alpha=0.05, lam=1) -> (0.4140791, 1.0859209)
Y = [1, 0, 1, 1, 0, 1, 1, 0, 1, 1]
YHAT = [1, 0, 1, 0, 0, 1, 1, 1, 1, 1]
YHAT_ALL = [1, 1, 0, 1, 1, 1, 0, 1, 1, 1, 0, 1, 1, 0, 1, 1, 1, 1, 0, 1]


def test_ppi_mean_equals_the_hand_derivation_and_ppi_python():
    est = ppi_mean(YHAT_ALL, Y, YHAT)
    # by hand: mean(YHAT_ALL) = 15/20 = 0.75; rectifier Y - YHAT = (0,0,0,1,0,0,0,-1,0,0), mean 0
    assert est.raw_mean == 0.75 and est.mean == 0.75
    # se^2 = var(YHAT_ALL)/20 + var(rectifier)/10 = (0.75*0.25)/20 + 0.2/10 = 0.009375 + 0.02
    se = math.sqrt(0.1875 / 20 + 0.2 / 10)
    assert est.high - est.mean == pytest.approx(1.959963984540054 * se, abs=1e-12)
    assert (est.low, est.high) == pytest.approx((0.4140791, 1.0859209), abs=1e-7)
    assert (est.n_labelled, est.n_all) == (10, 20)


def test_a_biased_measure_is_corrected():
    rng = np.random.default_rng(0)
    truth = rng.random(4000) < 0.6
    auto = truth | (rng.random(4000) < 0.3)  # says yes too often: raw mean ~0.72
    labelled = rng.choice(4000, 400, replace=False)
    est = ppi_mean(auto.astype(float), truth[labelled].astype(float), auto[labelled].astype(float))
    assert est.raw_mean > 0.68 and est.low <= truth.mean() <= est.high


def _write(tmp_path, rows):
    path = tmp_path / "labels.jsonl"
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n")
    return path


def test_labels_load_and_follow_their_answer(tmp_path):
    d = answer_digest("45 days [1]")
    labels = load_labels(_write(tmp_path, [
        {"qid": "q1", "answer_sha256": d, "measure": "correct", "value": True, "labeller": "a"},
        {"qid": "q1", "cell": "c1", "measure": "faithfulness", "value": 3, "scale": 4, "labeller": "b"}]))
    assert [(x.value, x.score) for x in labels] == [(1, 1.0), (3, 0.75)]
    assert labels[0].applies_to("any-cell", "q1", label_digest("45 days [1]"))
    assert not labels[0].applies_to("c", "q1", label_digest("46 days"))
    assert labels[1].applies_to("c1", "q1", label_digest("whatever"))
    assert not labels[1].applies_to("c2", "q1", label_digest("whatever"))
    assert not labels[1].applies_to("c1", "q1", label_digest(""))  # no answer: no label judges it


def test_bad_labels_are_named_by_line_and_field(tmp_path):
    path = _write(tmp_path, [
        {"qid": "q1", "measure": "corect", "value": 1, "labeller": "a", "cell": "c"},
        {"qid": 7, "measure": "correct", "value": 2, "labeller": "a", "cell": "c"},
        {"qid": "q2", "measure": "correct", "value": 1, "labeller": ""},
        {"qid": "q3", "measure": "correct", "value": 1, "labeller": "a", "answer_sha256": "xyz", "colour": 1},
        "not json",
        {"qid": "q4", "measure": "correct", "value": 1, "labeller": "a", "cell": "c"},
        {"qid": "q4", "measure": "correct", "value": 0, "labeller": "a", "cell": "c"},
    ])
    with pytest.raises(DataError) as err:
        load_labels(path)
    text = str(err.value)
    for needle in ("labels.jsonl:1: [measure]", "labels.jsonl:2: [qid]", "labels.jsonl:2: [value]",
                   "labels.jsonl:3: [labeller]", "labels.jsonl:3: [answer_sha256] no answer named",
                   "labels.jsonl:4: [colour] unknown field", "labels.jsonl:4: [answer_sha256] not 64",
                   "labels.jsonl:5:", "malformed JSON", "labels.jsonl:7: [labeller]", "on line 6"):
        assert needle in text, (needle, text)
    assert "-- fix:" in text


def test_ppi_needs_enough_labels_and_stays_inside_the_measures_range():
    # the review's case: one label where the measure said 0 and the person 1 gave mean 1.5, CI [1.39, 1.61]
    auto_all = [0, 1, 0, 1, 1, 0, 0, 1] * 10
    few = ppi_mean(auto_all, [1], [0], min_labelled=10, bounds=(0.0, 1.0))
    assert math.isnan(few.mean) and few.raw_mean == 0.5 and few.n_labelled == 1
    many = ppi_mean(auto_all, [1] * 10, [0] * 5 + [1] * 5, min_labelled=10, bounds=(0.0, 1.0))
    assert 0.0 <= many.low <= many.mean <= many.high <= 1.0 and many.mean == 1.0
    assert ppi_mean(auto_all, [1] * 10, [0] * 5 + [1] * 5).mean == pytest.approx(1.0)  # unclipped: as ppi-python
