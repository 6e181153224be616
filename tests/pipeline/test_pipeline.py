"""The pipeline as typed stages: shared work held by one object, a run the evaluation reads and
never changes."""

from __future__ import annotations

import copy

import pandas as pd
import pytest

from rag_bench.data.loader import load_dataset
from rag_bench.errors import ConfigError
from rag_bench.memo import SharedWork
from rag_bench.pipeline import pipeline
from rag_bench.runner.config import build_cell
from rag_bench.runner.main import compute
from tests.conftest import TINY, compose_config


def _cfg(*overrides: str):
    return compose_config(["tracking=none", f"dataset.path={TINY}", "chunker=section", *overrides])


def _stable(metrics: dict) -> dict:
    return {k: v for k, v in metrics.items() if k not in ("latency", "cost", "measures")}


def test_cells_differing_in_k_share_one_retrieval_and_a_fresh_object_shares_nothing():
    dataset = load_dataset(TINY)
    work = SharedWork()
    first = compute(_cfg("pipeline.k=3"), dataset, "a", work)
    after_first = work.stats()
    assert after_first["rankings"]["entries"] == 1 and after_first["rankings"]["bytes"] > 0
    assert after_first["indexes"]["entries"] == 1 and after_first["chunks"]["entries"] == 1
    second = compute(_cfg("pipeline.k=5"), dataset, "b", work)
    assert work.stats()["rankings"]["entries"] == 1  # same depth D = max(eval.ks, k): one retrieval
    assert first.records["chunk_ids"].tolist() == second.records["chunk_ids"].tolist()
    alone = compute(_cfg("pipeline.k=5"), dataset, "b", SharedWork())
    assert _stable(alone.metrics) == _stable(second.metrics)
    assert alone.run_trec == second.run_trec and alone.qrels_trec == second.qrels_trec
    work.clear()
    assert all(v["entries"] == 0 for v in work.stats().values())


def test_the_retrieval_depth_is_settled_when_the_cell_is_built():
    """D = max(eval.ks, pipeline.k, reranker.depth), once, in the cell's settings (the pipeline and
    --plan read it); a plugin reranker's bad depth is refused there, before any dataset is loaded
    or anything chunked (it was refused between indexing and retrieval)."""
    assert build_cell(_cfg("eval.ks=[1,3]", "pipeline.k=4"), SharedWork()).settings.depth == 4
    plugin = "hydra.searchpath=[pkg://tests.bad_inputs.hostile_plugins.conf]"
    assert build_cell(_cfg(plugin, "reranker=hostile", "reranker.depth=30"), SharedWork()).settings.depth == 30
    with pytest.raises(ConfigError, match=r"reranker.depth must be an integer >= 1, got 0 -- fix: reranker.depth=20"):
        build_cell(_cfg(plugin, "reranker=hostile", "reranker.depth=0"), SharedWork())


def test_the_generators_traits_are_checked_when_the_cell_is_built_and_the_run_carries_them():
    """Like the depth: what the generator declares of itself (a stand-in, its refusal key) is asked
    and checked once when it is built, not after every stage has run; the run carries it."""
    dataset = load_dataset(TINY)
    work = SharedWork()
    parts = build_cell(_cfg("generator=extractive"), work)
    assert parts.traits is not None and parts.traits.stand_in and parts.traits.refusal_setting == "generator.threshold"
    assert pipeline.run(parts, dataset, work).generator == parts.traits
    assert build_cell(_cfg("generator=none"), work).traits is None


def test_the_evaluation_reads_the_run_and_changes_nothing_of_it():
    dataset = load_dataset(TINY)
    cfg = _cfg("generator=extractive")
    work = SharedWork()
    parts = build_cell(cfg, work)
    run = pipeline.run(parts, dataset, work)
    before = copy.deepcopy(run.questions)
    shared = parts.evaluation.evaluate(run, "c", work)
    alone = parts.evaluation.evaluate(run, "c", None)
    assert run.questions == before  # every question's rankings, context, generation and answer
    assert "answer" in shared.records and "failure" in shared.records
    same = [c for c in shared.records.columns if not c.endswith(("_ms", "_s"))]
    pd.testing.assert_frame_equal(shared.records[same], alone.records[same])
    assert _stable(shared.metrics) == _stable(alone.metrics)


def test_shared_work_pickles_empty_for_worker_processes():
    """joblib and submitit ship the Hydra app (and its SharedWork) to workers: it must pickle, and
    a worker starts from nothing rather than a copy of the parent's indexes."""
    import pickle

    work = SharedWork()
    work.get_or("chunks", "k", lambda: [1, 2, 3])
    copy_ = pickle.loads(pickle.dumps(work))
    assert copy_.stats()["chunks"]["entries"] == 0 and copy_.get_or("chunks", "k", lambda: "fresh") == "fresh"


def test_cells_differing_in_k_share_the_k_independent_scoring_and_score_as_alone():
    """One grading and one k-independent part per scorer per final ranking; the k-dependent columns (evidence at a k outside
    eval.ks, the retrieval label) are the same as scoring each cell alone, in the same column order."""
    dataset = load_dataset(TINY)
    work = SharedWork()
    entries = []
    for k in (3, 4, 7):  # 4 and 7 are not in eval.ks: evidence@4/@7 columns, labels at 4/7
        shared = compute(_cfg(f"pipeline.k={k}"), dataset, "a", work)
        alone = compute(_cfg(f"pipeline.k={k}"), dataset, "a", SharedWork())
        timing = ["retrieve_ms", "rerank_ms", "generate_s", "generation_cached"]
        pd.testing.assert_frame_equal(shared.records.drop(columns=timing, errors="ignore"),
                                      alone.records.drop(columns=timing, errors="ignore"))
        assert _stable(shared.metrics) == _stable(alone.metrics)
        if k != 3:
            assert f"evidence_recall@{k}" in shared.records and f"complete@{k}" in shared.records
        entries.append(work.stats()["scored"]["entries"])
    assert work.stats()["graded"]["entries"] == 1 and entries[0] == entries[1] == entries[2] > 0
    labels = {k: compute(_cfg(f"pipeline.k={k}"), dataset, "a", work).records["failure"].tolist() for k in (1, 10)}
    assert labels[1].count("ranking") >= labels[10].count("ranking")  # a smaller k loses more to ranking


def test_a_sweep_over_the_split_shares_the_index_but_never_the_rankings(tmp_path):
    """Two splits of one BEIR corpus in one process: the second split's cell scores its own
    questions, as it does alone (the fingerprint is the corpus's files, the same for both)."""
    import shutil

    root = tmp_path / "beir"
    shutil.copytree(TINY.parent / "beir_graded", root)
    (root / "qrels" / "dev.tsv").write_text("query-id\tcorpus-id\tscore\nq4\td5\t2\nq3\td4\t1\nq2\td3\t2\n")

    def cfg(split: str):
        return compose_config(["tracking=none", f"dataset.path={root}", f"dataset.split={split}", "chunker=section",
                               "retriever=dense", "generator=none", "index=hnsw"])

    work = SharedWork()
    test = compute(cfg("test"), load_dataset(root, split="test"), "t", work)
    dev = compute(cfg("dev"), load_dataset(root, split="dev"), "d", work)
    alone = compute(cfg("dev"), load_dataset(root, split="dev"), "d", SharedWork())
    assert dev.records["qid"].tolist() == alone.records["qid"].tolist() == ["q2", "q3", "q4"]
    assert dev.records["chunk_ids"].tolist() == alone.records["chunk_ids"].tolist()
    assert dev.run_trec == alone.run_trec
    assert {k: v for k, v in _stable(dev.metrics).items() if k != "ann"} == \
        {k: v for k, v in _stable(alone.metrics).items() if k != "ann"}

    def recalls(m: dict) -> dict:  # the ANN report is over the split's questions too (timings aside)
        return {k: v for k, v in m["ann"].items() if "recall" in k or k == "queries"}
    assert recalls(dev.metrics) == recalls(alone.metrics)
    assert len(test.records) != len(dev.records) and work.stats()["indexes"]["entries"] == 1


def test_the_index_is_laid_open_once_per_index_and_question_set(monkeypatch):
    # tune() and ann() share one ann_probe per (index, questions): each call computes every
    # question's vector and access mask, which each cell of a sweep paid twice before.
    from rag_bench.retrieval.dense import DenseRetriever

    calls = []
    real = DenseRetriever.ann_probe

    def counted(self, questions, access):
        calls.append(len(questions))
        return real(self, questions, access)

    monkeypatch.setattr(DenseRetriever, "ann_probe", counted)
    dataset = load_dataset(TINY)
    work = SharedWork()
    cells = [compute(_cfg("retriever=dense", f"pipeline.k={k}"), dataset, f"k{k}", work) for k in (3, 5)]
    assert calls == [len(dataset.questions)]
    assert cells[0].metrics["ann"] == cells[1].metrics["ann"] and cells[0].metrics["ann"]["ann_recall@5"] == 1.0
    alone = compute(_cfg("retriever=dense", "pipeline.k=5"), dataset, "k5", SharedWork())
    recalls = [{k: v for k, v in m["ann"].items() if k.startswith("ann_recall")} for m in (alone.metrics, cells[1].metrics)]
    assert recalls[0] == recalls[1] and len(recalls[0]) == 4 and len(calls) == 2


def test_a_questions_retrieval_latency_is_the_retrievers_call_alone(monkeypatch):
    """retrieve_ms (and latency/retrieve_s) time the retriever's search, not our checks of its ranking
    (issue 57: the checks had moved inside the timer, adding ~60 % to bm25's figure on squad2-normans)."""
    import time as time_module

    from rag_bench.pipeline import contracts, stages
    from rag_bench.pipeline.results import Indexed
    from rag_bench.retrieval.base import AccessFilter
    from rag_bench.retrieval.bm25 import Bm25Retriever

    dataset = load_dataset(TINY)
    chunks = stages.chunk(dataset=dataset, key="k", chunker=build_cell(_cfg(), SharedWork()).chunker,
                          work=SharedWork()).chunks
    retriever = Bm25Retriever()
    retriever.fit(chunks)
    real = contracts.check_ranking

    def slow_check(*args, **kwargs):
        time_module.sleep(0.05)
        return real(*args, **kwargs)

    monkeypatch.setattr(contracts, "check_ranking", slow_check)
    indexed = Indexed(retriever, chunks, AccessFilter(chunks, dataset.documents), "key", 0.0)
    got = stages.retrieve(indexed=indexed, questions=dataset.questions[:3], depth=3, work=SharedWork())
    assert len(got.rankings) == 3 and max(got.latency_ms) < 40
