"""The runner as typed stages: shared work held by one object, no stage mutates its inputs."""

from __future__ import annotations

import pandas as pd

from rag_bench.data.loader import load_dataset
from rag_bench.evaluation.results import Reranked, Scored
from rag_bench.evaluation.scorers.answer import score_answers
from rag_bench.evaluation.scoring import score
from rag_bench.memo import SharedWork
from rag_bench.runner import stages
from rag_bench.runner.pipeline import run_pipeline
from tests.conftest import TINY, compose_config


def _cfg(*overrides: str):
    return compose_config(["tracking=none", f"dataset.path={TINY}", "chunker=section", *overrides])


def _stable(metrics: dict) -> dict:
    return {k: v for k, v in metrics.items() if k not in ("latency", "cost")}


def test_cells_differing_in_k_share_one_retrieval_and_a_fresh_object_shares_nothing():
    dataset = load_dataset(TINY)
    work = SharedWork()
    first = run_pipeline(_cfg("pipeline.k=3"), dataset, "a", work)
    after_first = work.stats()
    assert after_first["rankings"]["entries"] == 1 and after_first["rankings"]["bytes"] > 0
    assert after_first["indexes"]["entries"] == 1 and after_first["chunks"]["entries"] == 1
    second = run_pipeline(_cfg("pipeline.k=5"), dataset, "b", work)
    assert work.stats()["rankings"]["entries"] == 1  # same depth D = max(eval.ks, k): one retrieval
    assert first.records["chunk_ids"].tolist() == second.records["chunk_ids"].tolist()
    alone = run_pipeline(_cfg("pipeline.k=5"), dataset, "b", SharedWork())
    assert _stable(alone.metrics) == _stable(second.metrics)
    assert alone.run_trec == second.run_trec and alone.qrels_trec == second.qrels_trec
    work.clear()
    assert all(v["entries"] == 0 for v in work.stats().values())


def test_generation_does_not_touch_the_scored_frame():
    dataset = load_dataset(TINY)
    cfg = _cfg("generator=extractive")
    work = SharedWork()
    result = run_pipeline(cfg, dataset, "c", work)
    assert "answer" in result.records and "failure" in result.records
    # Re-run the stages by hand on the shared work and check the inputs after each.
    from rag_bench.runner.config import build

    questions = list(dataset.questions)
    key = next(iter(work._caches["indexes"]))
    retriever, searchable, access = work._caches["indexes"][key]
    from rag_bench.evaluation.results import Indexed

    indexed = Indexed(retriever, searchable, access, key, 0.0)
    retrieved = stages.retrieve(indexed=indexed, questions=questions, depth=10, work=work)
    reranked = Reranked(retrieved.rankings)
    scored = score(questions=questions, dataset=dataset, indexed=indexed, retrieved=retrieved,
                          reranked=reranked, ks=[1, 3, 5, 10], k=5, min_coverage=0.5, relevance="overlap",
                          gain="linear")
    before = scored.frame.copy(deep=True)
    answered = stages.answer(generator=build(cfg.generator, "generator"), questions=questions, reranked=reranked,
                             indexed=indexed, parents={}, k=5, expand_parents=False, token_budget=2000)
    generated = score_answers(answered=answered, questions=questions, retrieval_labels=list(scored.frame["failure"]),
                              min_coverage=0.5)
    pd.testing.assert_frame_equal(scored.frame, before)
    assert list(scored.frame.columns) == list(before.columns)  # no answer columns were added to it
    assert isinstance(scored, Scored) and len(generated.frame) == len(questions)


def test_shared_work_pickles_empty_for_worker_processes():
    """joblib and submitit ship the Hydra app (and its SharedWork) to workers: it must pickle, and
    a worker starts from nothing rather than a copy of the parent's indexes."""
    import pickle

    work = SharedWork()
    work.get_or("chunks", "k", lambda: [1, 2, 3])
    copy = pickle.loads(pickle.dumps(work))
    assert copy.stats()["chunks"]["entries"] == 0 and copy.get_or("chunks", "k", lambda: "fresh") == "fresh"


def test_cells_differing_in_k_share_the_k_independent_scoring_and_score_as_alone():
    """One shared RankedScores per final ranking; the k-dependent columns (evidence at a k outside
    eval.ks, the retrieval label) are the same as scoring each cell alone, in the same column order."""
    dataset = load_dataset(TINY)
    work = SharedWork()
    for k in (3, 4, 7):  # 4 and 7 are not in eval.ks: evidence@4/@7 columns, labels at 4/7
        shared = run_pipeline(_cfg(f"pipeline.k={k}"), dataset, "a", work)
        alone = run_pipeline(_cfg(f"pipeline.k={k}"), dataset, "a", SharedWork())
        timing = ["retrieve_ms", "rerank_ms", "generate_s", "generation_cached"]
        pd.testing.assert_frame_equal(shared.records.drop(columns=timing, errors="ignore"),
                                      alone.records.drop(columns=timing, errors="ignore"))
        assert _stable(shared.metrics) == _stable(alone.metrics)
        if k != 3:
            assert f"evidence_recall@{k}" in shared.records and f"complete@{k}" in shared.records
    assert work.stats()["scored"]["entries"] == 1
    labels = {k: run_pipeline(_cfg(f"pipeline.k={k}"), dataset, "a", work).records["failure"].tolist() for k in (1, 10)}
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
    test = run_pipeline(cfg("test"), load_dataset(root, split="test"), "t", work)
    dev = run_pipeline(cfg("dev"), load_dataset(root, split="dev"), "d", work)
    alone = run_pipeline(cfg("dev"), load_dataset(root, split="dev"), "d", SharedWork())
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
    cells = [run_pipeline(_cfg("retriever=dense", f"pipeline.k={k}"), dataset, f"k{k}", work) for k in (3, 5)]
    assert calls == [len(dataset.questions)]
    assert cells[0].metrics["ann"] == cells[1].metrics["ann"] and cells[0].metrics["ann"]["ann_recall@5"] == 1.0
    alone = run_pipeline(_cfg("retriever=dense", "pipeline.k=5"), dataset, "k5", SharedWork())
    recalls = [{k: v for k, v in m["ann"].items() if k.startswith("ann_recall")} for m in (alone.metrics, cells[1].metrics)]
    assert recalls[0] == recalls[1] and len(recalls[0]) == 4 and len(calls) == 2
