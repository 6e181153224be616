"""The verdict (rag_bench.decision.verdict) on cells built in memory: best, the set not
significantly worse, best vs baseline, what it says when it cannot test, the stand-in rule."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from rag_bench.cells import Cell
from rag_bench.decision.verdict import verdict
from rag_bench.evaluation import measures

CORRECT_ALL = measures.CORRECT_ALL
N = 200


def _cell(cid: str, values, tmp_path, *, stand_in=None, refusals=None, k=5) -> Cell:
    values = np.asarray(values, dtype=float)
    metrics = {"answer": {"correct_all": float(np.nanmean(values)), "context_all": float(np.nanmean(values))},
               "ci": {CORRECT_ALL.key: [float(np.nanmean(values)) - 0.05, float(np.nanmean(values)) + 0.05]}}
    if stand_in is not None:
        metrics["methods"] = {"generator_stand_in": stand_in, "refusal_setting": "generator.threshold"}
    if refusals is not None:
        metrics["refusals"] = {"evidence_in_context": refusals[1], "refused": refusals[0]}
    records = pd.DataFrame({"qid": [f"q{i}" for i in range(len(values))], CORRECT_ALL.column: values,
                            measures.CONTEXT_ALL.column: values})
    return Cell(cid, tmp_path / cid, {"pipeline": {"k": k}}, metrics, {}, [records])


def _bern(rate, seed, n=N):
    return (np.random.default_rng(seed).random(n) < rate).astype(float)


def test_best_the_indistinguishable_set_and_the_baseline(tmp_path):
    good = _bern(0.7, 0)
    twin = good.copy()
    twin[:3] = 1 - twin[:3]  # three questions differ: cannot be told from the best
    cells = [_cell("base", _bern(0.4, 1), tmp_path, k=3), _cell("best", good, tmp_path), _cell("twin", twin, tmp_path)]
    v = verdict(cells, key=CORRECT_ALL.key, baseline="base", names={"base": "B", "best": "A", "twin": "T"})
    best = "best" if good.mean() >= twin.mean() else "twin"
    assert v.best == best and set(v.close) == {"best", "twin"} and v.n == N and not v.untested
    assert v.versus is not None and v.versus.cell == "base" and v.versus.significant and v.versus.better
    assert v.versus.p < 0.001 and v.versus.diff == pytest.approx(cells[[c.cell_id for c in cells].index(best)]
                                                                  .metric(CORRECT_ALL.key) - cells[0].metric(CORRECT_ALL.key))
    text = v.text()
    assert text.startswith(f"Best: {v.best_name} (answer/correct_all ") and "2 of 3 cells not significantly worse" in text
    assert "significantly better than the baseline B" in text and "p = < 0.001" not in text
    assert v.as_dict()["text"] == text and "model confidence set" in v.as_dict()["method"]


def test_the_best_that_is_the_baseline_and_one_cell(tmp_path):
    only = [_cell("a", _bern(0.5, 2), tmp_path)]
    one = verdict(only, key=CORRECT_ALL.key)
    assert one.text().endswith("— the only cell")
    # nothing was compared: no method line ("in the 95% model confidence set ... over 0 questions")
    assert one.method == "" and not any("confidence set" in line for line in one.lines())
    cells = [_cell("a", _bern(0.8, 3), tmp_path), _cell("b", _bern(0.2, 4), tmp_path)]
    v = verdict(cells, key=CORRECT_ALL.key, baseline="a")
    assert v.versus is None and v.baseline_note.startswith("it is the baseline")
    assert "every other of the 2 cells significantly worse" in v.text()


def test_a_measure_without_per_question_values_is_said_untested(tmp_path):
    cells = [_cell("a", _bern(0.8, 5), tmp_path), _cell("b", _bern(0.2, 6), tmp_path)]
    for c in cells:
        c.metrics["latency"] = {"retrieve_p50_ms": 1.0 if c.cell_id == "a" else 2.0}
    v = verdict(cells, key="latency/retrieve_p50_ms", baseline="b")
    assert v.best == "a" and v.close == ("a",) and "no per-question values" in v.untested
    assert "not tested against the other 1 cells" in v.text()


def test_unanswerable_refusals_decide_over_a_sliver_of_answerable_ones(tmp_path):
    """The issue's squad2-normans case on all-question correctness: A refuses the unanswerable
    questions it should and answers as well on the answerable ones; B answers three more answerable
    questions and every unanswerable one. A is best and B outside the set."""
    rng = np.random.default_rng(7)
    answerable = (rng.random(100) < 0.6).astype(float)
    b_answerable = answerable.copy()
    b_answerable[np.flatnonzero(answerable == 0)[:3]] = 1.0
    a = np.concatenate([answerable, (rng.random(100) < 0.8).astype(float)])  # refuses 80% of unanswerables
    b = np.concatenate([b_answerable, np.zeros(100)])  # answers every unanswerable question
    v = verdict([_cell("a", a, tmp_path), _cell("b", b, tmp_path)], key=CORRECT_ALL.key, baseline="b")
    assert v.best == "a" and v.close == ("a",) and v.versus.significant and v.versus.better


def test_auto_passes_over_a_stand_ins_answers_and_the_warning_is_said_once(tmp_path):
    cells = [_cell("a", _bern(0.6, 8), tmp_path, stand_in=True, refusals=(10, 40)),
             _cell("b", _bern(0.6, 9), tmp_path, stand_in=True, refusals=(20, 40))]
    v = verdict(cells, baseline="a")
    assert v.measure == "answer/context_all" and "stand-in" in v.reason
    (warning,) = v.findings  # a finding of the verdict's, not a console warning
    assert f"finding: {warning}" in v.lines()
    assert "refused 30 of the 80 answerable questions" in warning and "over the 2 stand-in cells, 25%-50% by cell" \
        in warning and "generator.threshold" in warning
    model = [_cell("a", _bern(0.6, 8), tmp_path, stand_in=False), _cell("b", _bern(0.6, 9), tmp_path, stand_in=False)]
    assert verdict(model, baseline="a").measure == "answer/correct_all"
    assert verdict(model, baseline="a").findings == ()


def test_the_cells_findings_about_the_data_are_said_once_by_the_verdict(tmp_path):
    """A finding every cell repeats (the data set's clarify questions a stand-in cannot ask) is one line of
    the verdict; one only some cells found says in how many."""
    cells = [_cell(c, _bern(0.6, s), tmp_path) for c, s in (("a", 8), ("b", 9), ("c", 10))]
    for c in cells:
        c.metrics["findings"] = ["3 question(s) expect a clarifying question"]
    cells[0].metrics["findings"].append("hidden text surfaced in document 'x'")
    v = verdict(cells, baseline="a")
    assert v.findings == ("3 question(s) expect a clarifying question",
                          "hidden text surfaced in document 'x' (in 1 of 3 cells)")
    assert [line for line in v.lines() if line.startswith(("finding: ", "warning: "))] == [
        f"finding: {f}" for f in v.findings]
