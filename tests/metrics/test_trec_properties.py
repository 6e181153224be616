"""Random qrels and runs: every supported measure agrees with pytrec_eval (trec_eval's C code)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rag_bench.metrics.trec import SUPPORTED_MEASURES, evaluate

pytrec_eval = pytest.importorskip("pytrec_eval")

CUTOFFS = (1, 2, 3, 5, 10, 50)
WITH_CUTOFFS = {"P", "recall", "ndcg_cut", "success"}
OURS = [f"{m}.{','.join(map(str, CUTOFFS))}" if m in WITH_CUTOFFS else m
        for m in SUPPORTED_MEASURES]
THEIRS = {m for m in SUPPORTED_MEASURES if m not in WITH_CUTOFFS} | {
    f"{m}_{k}" for m in WITH_CUTOFFS for k in CUTOFFS
}

# Docnos chosen so that string order differs from numeric and case order ("d10" < "d2").
DOCNOS = ["d1", "d2", "d10", "d11", "D1", "a", "a-1", "b_2", "Z", "z9", "10", "9", "x.y", "q"]
TOPICS = ["1", "2", "10", "q7"]


@st.composite
def qrels_and_run(draw: st.DrawFn, *, ties: bool) -> tuple[dict, dict]:
    """Random qrels (levels -1..4, some topics with nothing relevant) and a run over the same
    docnos, with topics only in one of the two. Tie-free runs use distinct scores."""
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for topic in draw(st.lists(st.sampled_from(TOPICS), min_size=1, max_size=4, unique=True)):
        judged: list[str] = draw(st.lists(st.sampled_from(DOCNOS), max_size=10, unique=True))
        qrels[topic] = {doc: draw(st.integers(-1, 4)) for doc in judged}
        # No empty ranking: a file cannot express one and pytrec_eval scores it as all zeros
        # (even num_rel), while trec_eval, and we, treat the topic as absent from the run.
        retrieved = draw(st.lists(st.sampled_from(DOCNOS), min_size=1, unique=True))
        if ties:
            # Few distinct values, -0.0 vs 0.0, and values that differ only beyond float32.
            scores = st.sampled_from([0.0, -0.0, 1.0, 1.0 + 1e-9, 2.5, -3.0])
            run[topic] = {doc: draw(scores) for doc in retrieved}
        else:
            values = draw(st.permutations(range(len(retrieved))))
            run[topic] = {doc: float(v) * 0.37 - 1.0 for doc, v in zip(retrieved, values)}
    # trec_eval cannot evaluate a topic whose judgments are all negative (it sizes its level
    # table by the maximum level and fails on a zero-size table; pytrec_eval then returns
    # zeros and its caches go bad), so every topic keeps at least one level >= 0.
    qrels = {t: j for t, j in qrels.items() if j and max(j.values()) >= 0} or {"1": {"d1": 1}}
    if not run.keys() & qrels.keys():
        run[next(iter(qrels))] = {"d1": 1.0}
    return qrels, run


def compare(qrels: dict, run: dict, relevance_level: int) -> None:
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, THEIRS, relevance_level=relevance_level)
    theirs = evaluator.evaluate(run)
    ours, summary = evaluate(qrels, run, measures=OURS, relevance_level=relevance_level)
    assert ours.keys() == theirs.keys()
    for topic, values in theirs.items():
        assert ours[topic].keys() == values.keys()
        for name, want in values.items():
            assert math.isclose(ours[topic][name], want, abs_tol=1e-9), (topic, name)
    for name in THEIRS:
        want = pytrec_eval.compute_aggregated_measure(name, [v[name] for v in theirs.values()])
        assert math.isclose(summary[name], want, abs_tol=1e-9), name


@settings(max_examples=100, deadline=None)
@given(data=qrels_and_run(ties=False), relevance_level=st.integers(1, 3))
def test_tie_free_runs_match_pytrec_eval(data: tuple[dict, dict], relevance_level: int) -> None:
    compare(*data, relevance_level)


@settings(max_examples=100, deadline=None)
@given(data=qrels_and_run(ties=True), relevance_level=st.integers(1, 2))
def test_tied_runs_match_pytrec_eval(data: tuple[dict, dict], relevance_level: int) -> None:
    # Same comparator as trec_eval: score as float32 descending, then docno descending.
    compare(*data, relevance_level)
