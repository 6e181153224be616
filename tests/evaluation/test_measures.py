"""The measure registry: one declaration per measure, and every consumer agrees with it."""

from __future__ import annotations

import json

import pytest

from rag_bench.evaluation import measures
from rag_bench.evaluation.scorers.chunk_ranking import ranking_measures
from rag_bench.metrics.ranking import ranking_metrics
from tests.runner.test_run_cell import run


def test_three_spellings_are_views_of_one_measure():
    m = measures.measure("retrieval/hit@5")
    assert (m.name, m.key, m.mlflow_key) == ("hit@5", "retrieval/hit@5", "retrieval.hit_at_5")
    assert measures.mlflow_name("ci/retrieval/hit@5/lo") == "ci.retrieval.hit_at_5.lo"
    assert measures.measure("retrieval/mrr").cutoff is None and measures.measure("retrieval/mrr@10").cutoff == 10


@pytest.mark.parametrize("key", ["retrieval/hit", "retrieval/map@5", "retrieval/hit@0", "retrieval/hits@5",
                                 "generation/hit@5", "evidence/complete", "nosuch/x", "retrieval/", "hit@5",
                                 "judge/judge_faithfulness@3"])
def test_names_that_are_not_measures(key):
    assert measures.measure(key) is None


def test_every_family_is_declared_once_with_a_direction_and_description():
    pairs = [(f.section, f.family) for f in measures.FAMILIES]
    assert len(pairs) == len(set(pairs))
    assert all(f.description for f in measures.FAMILIES)
    lower = {f.key for f in measures.FAMILIES if f.higher_is_better is False}
    assert {"abstention/false_refusal_rate", "abstention/unsupported_answer_rate", "citation/invalid_citations",
            "security/unauthorized_retrievals", "generation/unparseable"} <= lower
    assert measures.higher_is_better("latency/retrieve_p95_ms") is False
    assert measures.higher_is_better("retrieval/ndcg@10") is True


def test_ranking_kernels_produce_exactly_the_registered_names():
    import numpy as np

    out = ranking_metrics(levels=np.array([[1.0, 0.0]]), n_relevant=np.array([1.0]), ideal=np.array([[1.0]]),
                          ks=[1, 2])
    assert list(out) == [m.name for m in ranking_measures([1, 2])]


def test_every_aggregate_of_a_generating_cell_is_a_registered_measure(tmp_path):
    """metrics.json keys of the measure sections, their n/ci keys and the per-question columns all
    come from the registry: a name spelled anywhere else would show up here."""
    cell = run(tmp_path, "chunker=section", "generator=extractive")
    metrics = json.loads((cell / "metrics.json").read_text())
    for section in sorted(measures.registry_sections() & set(metrics)):
        for name, value in metrics[section].items():
            if section == "ann" and name == "index":
                continue
            assert measures.measure(f"{section}/{name}") is not None, f"{section}/{name}"
    assert all(measures.measure(k) is not None for k in metrics["n"]) and set(metrics["n"]) == set(metrics["ci"])
    # Every section of a generating cell, except clarify: reported only for a dataset with a question
    # expecting clarify (or an answer that asked), which this one has not; injection: only for a dataset
    # whose docs.jsonl plants canaries.
    assert set(measures.QUESTION_SECTIONS) - set(metrics) == {"clarify", "injection", "query"}
    for section in set(measures.QUESTION_SECTIONS) & set(metrics):
        for name in metrics[section]:
            m = measures.measure(f"{section}/{name}")
            assert m.aggregate == "value" or m.key in metrics["n"]
    import pandas as pd

    records = pd.read_parquet(cell / "records.parquet")
    for key in metrics["n"]:
        assert measures.measure(key).name in records.columns


def _numbers(metrics: dict) -> list[str]:
    """``section/name`` of every number of metrics.json a gate rule or a sort can name."""
    skip = {"ci", "n", "by_tag", "conditional", "methods", "warnings", "measures"}
    return [f"{s}/{k}" for s, block in metrics.items() if s not in skip and isinstance(block, dict)
            for k, v in block.items() if isinstance(v, (int, float)) and not isinstance(v, bool)]


def test_every_number_of_a_cell_declares_its_direction(tmp_path):
    """Counts once defaulted to "higher is better" (a rise of counts/unlocated_passages passed a
    not_worse_than rule); now any number without a declared direction raises."""
    cell = run(tmp_path, "chunker=section", "generator=extractive")
    metrics = json.loads((cell / "metrics.json").read_text())
    keys = _numbers(metrics)
    assert {"counts/chunks", "cost/embedding_requests", "failures/correct", "latency/retrieve_p50_ms"} <= set(keys)
    for key in keys:
        measures.direction(key)  # raises when undeclared


def test_counts_of_what_went_wrong_are_lower_is_better_and_sizes_have_no_direction():
    lower = ["counts/unlocated_passages", "counts/duplicate_passages", "counts/passages_not_in_claimed_doc",
             "counts/endpoint_failures", "counts/judge_failures", "counts/unparseable", "counts/retries",
             "counts/excluded_no_relevant_chunk", "citation/invalid_citations", "security/unauthorized_retrievals",
             "failures/chunking", "failures/hallucinated_answer", "ann/underfill_fallbacks"]
    assert [k for k in lower if measures.direction(k) is not False] == []
    assert measures.direction("failures/correct") is True and measures.direction("failures/correct_refusal") is True
    for key in ("counts/chunks", "counts/questions", "cost/embedding_cache_hits", "generation/answer_words"):
        assert measures.direction(key) is None
        with pytest.raises(ValueError, match="descriptive"):
            measures.higher_is_better(key)
    for key in ("counts/nope", "ann/index", "nosuch/x", "latency/", "n/retrieval/hit@5"):
        with pytest.raises(ValueError, match="declares no direction"):
            measures.direction(key)


def test_every_failure_label_declares_its_direction():
    from rag_bench.failure_labels import GENERATION_CELL_LABELS, RETRIEVAL_LABELS

    assert [m.name for m in measures.FAILURES] == list(GENERATION_CELL_LABELS)
    assert set(RETRIEVAL_LABELS) <= set(GENERATION_CELL_LABELS)
    from rag_bench.evaluation.scorers import attribution

    assert set(attribution._MEANINGS) == set(GENERATION_CELL_LABELS)  # no meaning left for a dropped label
