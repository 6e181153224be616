"""The evaluation of a cell: its ranking units follow eval.unit; a run reads question by question."""

from rag_bench.evaluation.evaluation import RANKING_UNITS, Evaluation
from rag_bench.evaluation.scorers.chunk_ranking import CHUNK
from rag_bench.evaluation.scorers.document_ranking import DOCUMENT
from rag_bench.runner.config import UNITS
from tests.conftest import TINY, compose_config


def test_every_eval_unit_names_its_ranking_scorers():
    assert RANKING_UNITS.keys() == UNITS.keys()
    for name, units in RANKING_UNITS.items():
        assert tuple(u.name for u in units) == UNITS[name]


def test_the_chunk_ranking_columns_are_kept_when_only_documents_are_reported():
    ev = Evaluation.from_config(compose_config(["tracking=none", f"dataset.path={TINY}", "eval.unit=document"]))
    assert ev.units == (DOCUMENT,) and ev.scored_units == (CHUNK, DOCUMENT)


def test_a_run_reads_question_by_question_as_spans_and_evaluates_as_the_pipeline_does():
    import pandas as pd

    from rag_bench.data.loader import load_dataset
    from rag_bench.evaluation.run import SystemRun
    from rag_bench.memo import SharedWork
    from rag_bench.runner import stages
    from rag_bench.runner.config import build
    from rag_bench.runner.pipeline import run_pipeline

    cfg = compose_config(["tracking=none", f"dataset.path={TINY}", "chunker=section", "retriever=bm25",
                          "generator=extractive", "eval.bootstrap_resamples=20"])
    dataset, work = load_dataset(TINY), SharedWork()
    cell = run_pipeline(cfg, dataset, "c", work)
    questions = list(dataset.questions)
    chunked = stages.chunk(dataset=dataset, key="chunks", work=work, chunker=build(cfg.chunker, "chunker"))
    indexed = stages.index(dataset=dataset, chunked=chunked, key="index", include_archived=False, work=work,
                           retriever=build(cfg.retriever, "retriever"))
    retrieved = stages.retrieve(indexed=indexed, questions=questions, depth=10, work=work)
    reranked = stages.rerank(reranker=build(cfg.reranker, "reranker"), key=None, retrieved=retrieved,
                             indexed=indexed, questions=questions, work=work)
    answered = stages.answer(generator=build(cfg.generator, "generator"), questions=questions, reranked=reranked,
                             indexed=indexed, parents={}, k=5, expand_parents=False, token_budget=2000)
    run = SystemRun(corpus=dataset, chunks=chunked.chunks, indexed=indexed, retrieved=retrieved, reranked=reranked,
                    answered=answered, index_name="flat")
    per_q = run.questions()
    assert [q.qid for q in per_q] == list(cell.records["qid"])
    for q, (_, row) in zip(per_q, cell.records.iterrows()):
        assert [list(s) for s in q.ranked] == [[s["doc_id"], s["start"], s["end"]] for s in row["chunk_spans"]]
        assert q.answer == row["answer"] and list(q.citations) == list(row["citations"])
        assert list(q.context) == list(row["context_texts"]) and q.refused == row["refused"]
    again = Evaluation.from_config(cfg).evaluate(run, dataset, "c")
    same = [c for c in cell.records.columns if not c.endswith(("_ms", "_s")) and c != "generation_cached"]
    pd.testing.assert_frame_equal(again.records[same], cell.records[same])
    for section in ("retrieval", "document", "evidence", "generation", "citation", "abstention", "context"):
        assert again.metrics.get(section) == cell.metrics.get(section)
