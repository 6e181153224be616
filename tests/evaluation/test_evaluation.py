"""The evaluation of a cell: one loop over the declared scorers, every measure aggregated the same
way, the run the only thing it reads, and a metrics.json that describes its own keys."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import rag_bench
from rag_bench.data.loader import load_dataset
from rag_bench.errors import ConfigError
from rag_bench.evaluation import measures
from rag_bench.evaluation.evaluation import MEASURES, SKIPPED, Evaluation, chosen
from rag_bench.memo import SharedWork
from rag_bench.pipeline import pipeline
from rag_bench.runner.config import build_cell
from rag_bench.runner.main import compute
from tests.conftest import TINY, compose_config

ROOT = Path(rag_bench.__file__).parent
# metrics.json entries that are no measure: the tables and fields beside the measures.
NOT_MEASURES = {"n", "ci", "by_tag", "conditional", "methods", "warnings", "findings", "dataset_fingerprint", "dataset_files",
                "corpus_fingerprint",
                MEASURES, SKIPPED}


def _cell(*overrides: str):
    cfg = compose_config(["tracking=none", f"dataset.path={TINY}", "chunker=section", "retriever=bm25",
                          "eval.bootstrap_resamples=50", *overrides])
    return cfg, compute(cfg, load_dataset(TINY), "c", SharedWork())


def _numbers(metrics: dict) -> list[str]:
    return [f"{s}/{k}" for s, block in metrics.items() if s not in NOT_MEASURES and isinstance(block, dict)
            for k, v in block.items() if v is None or (isinstance(v, (int, float)) and not isinstance(v, bool))]


@pytest.mark.parametrize("overrides", [("generator=extractive", "reranker=dense", "eval.unit=both"),
                                       ("generator=none", "retriever=dense", "index=hnsw", "index.target_recall=0.9")])
def test_every_number_of_a_cell_comes_from_a_declared_scorer(overrides):
    """One scoring path: each number of metrics.json is a measure some scorer of the catalog declared
    for this run (its entry in the measures block names it) -- a number produced anywhere else fails here."""
    _, cell = _cell(*overrides)
    block = cell.metrics[MEASURES]
    numbers = _numbers(cell.metrics)
    assert numbers and [k for k in numbers if k not in block] == []
    assert {entry["scorer"] for entry in block.values()} <= set(measures.SCORERS)
    assert set(block) == set(numbers)  # and nothing described that the cell does not hold
    for key in cell.metrics["n"]:
        assert block[key]["aggregate"] == "mean" and key in cell.metrics["ci"]


def test_the_measures_block_says_what_each_key_means():
    _, cell = _cell("generator=extractive", "eval.gain=exponential", "eval.answer_match=em")
    block = cell.metrics[MEASURES]
    assert block["retrieval/ndcg@10"] == {
        "direction": "higher", "aggregate": "mean", "scorer": "retrieval",
        "params": {"eval.relevance": "overlap", "eval.min_coverage": 0.5, "eval.relevance_level": 1, "unit": "chunk",
                   "eval.gain": "exponential"},
        "definition": measures.NDCG.description}
    assert block["generation/correct"]["params"] == {"eval.answer_match": "em", "eval.f1_threshold": 0.5}
    assert block["abstention/false_refusal_rate"]["direction"] == "lower"
    assert block["counts/chunks"]["direction"] is None and block["counts/chunks"]["aggregate"] == "value"
    assert block["security/unauthorized_retrievals"]["aggregate"] == "sum"
    json.dumps(block)  # written as JSON


def test_scorers_are_chosen_by_config_in_the_catalogs_order():
    assert [s.name for s in chosen(["all"])] == list(measures.SCORERS)
    assert [s.name for s in chosen(["counts", "retrieval"])] == ["retrieval", "counts"]
    with pytest.raises(ConfigError, match=r"eval.scorers: 'retrieve' is not one of .*did you mean retrieval"):
        chosen(["retrieve"])
    _, cell = _cell("generator=extractive", "eval.scorers='retrieval,evidence'")
    assert set(cell.metrics) - NOT_MEASURES == {"retrieval", "evidence"}
    assert "hit@5" in cell.records and "correct" not in cell.records and "answer" in cell.records


def test_the_default_scorers_keep_every_cell_id():
    from rag_bench.runner.config import cell_id

    cfg = compose_config(["tracking=none"])
    assert cell_id(cfg, "f") == cell_id(compose_config(["tracking=none", "eval.scorers=all"]), "f")
    assert cell_id(cfg, "f") != cell_id(compose_config(["tracking=none", "eval.scorers=retrieval"]), "f")


def test_a_run_is_evaluated_question_by_question_as_the_pipeline_gives_it():
    cfg = compose_config(["tracking=none", f"dataset.path={TINY}", "chunker=section", "retriever=bm25",
                          "generator=extractive", "eval.bootstrap_resamples=20"])
    dataset, work = load_dataset(TINY), SharedWork()
    parts = build_cell(cfg, work)
    run = pipeline.run(parts, dataset, work)
    cell = Evaluation.from_config(cfg).evaluate(run, "c")
    assert [q.qid for q in run.questions] == list(cell.records["qid"])
    for q, (_, row) in zip(run.questions, cell.records.iterrows()):
        assert [list(s) for s in run.spans(q.ranked)] == [[s["doc_id"], s["start"], s["end"]] for s in row["chunk_spans"]]
        assert q.answer.text == row["answer"] and list(q.answer.citations) == list(row["citations"])
        assert [p.text for p in q.context] == list(row["context_texts"]) and q.answer.refused == row["refused"]


def _functions(root: Path):
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield path, node


def test_no_function_of_the_evaluation_takes_more_than_six_arguments():
    wide = []
    for path, fn in _functions(ROOT / "evaluation"):
        a = fn.args
        names = [x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs) if x.arg not in ("self", "cls")]
        if len(names) + bool(a.vararg) + bool(a.kwarg) > 6:
            wide.append(f"{path.relative_to(ROOT)}:{fn.lineno} {fn.name}({', '.join(names)})")
    assert not wide, wide


def test_measures_are_declared_in_scorer_files_only():
    """A Measure is made by the scorer that computes it (declare(), figures(), Measure(), replace()
    of a family), never elsewhere: no second path to a number."""
    makers = {"Measure", "figures"}
    outside = []
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith("evaluation/scorers/") or rel == "evaluation/scorer.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
                if name in makers:
                    outside.append(f"{rel}:{node.lineno} {name}()")
    assert not outside, outside


def test_every_family_of_the_catalog_is_declared_by_a_scorer_file():
    """60 measure families and the figures, each an object of a scorer module, with a definition."""
    import importlib
    import pkgutil

    from rag_bench.evaluation import scorers
    from rag_bench.evaluation.scorer import Measure

    owned: set[int] = set()
    for info in pkgutil.iter_modules(scorers.__path__):
        for value in vars(importlib.import_module(f"{scorers.__name__}.{info.name}")).values():
            for m in (value if isinstance(value, tuple) else (value,)):
                if isinstance(m, Measure):
                    owned.add(id(m))
    catalog = (*measures.FAMILIES, *measures.FIGURES)
    assert len(measures.FAMILIES) >= 60 and [m.key for m in catalog if id(m) not in owned] == []
    assert all(m.description for m in catalog)


def test_passage_precision_is_the_share_of_the_k_passages_that_are_relevant():
    _, cell = _cell("pipeline.k=3", "generator=none")
    r = cell.records
    col = r["passage_precision@3"].to_numpy(np.float64)
    expected = np.mean([sum(x[:3]) / len(x[:3]) for x, a, n in zip(r["relevant"], r["answerable"], r["n_relevant"])
                        if a and n > 0])
    assert cell.metrics["context"]["passage_precision@3"] == np.nanmean(col) == expected
    assert cell.metrics["n"]["context/passage_precision@3"] == int((~np.isnan(col)).sum()) > 0
    lo, hi = cell.metrics["ci"]["context/passage_precision@3"]
    assert lo <= expected <= hi


def test_hit_lift_is_what_the_reranker_changed_at_k():
    """The measure added in one scorer file: it grades the first stage's ranking from the run."""
    _, plain = _cell("generator=none")
    assert "rerank" not in plain.metrics  # no reranker, nothing to lift
    _, cell = _cell("generator=none", "reranker=dense", "pipeline.k=1")
    r = cell.records
    relevant = {qid: set() for qid in r["qid"]}
    qrels = [line.split() for line in cell.qrels_trec.splitlines()]
    for qid, _, cid, grade in qrels:
        if int(grade) >= 1:
            relevant[qid].add(cid)
    want = [float(any(c in relevant[q] for c in final[:1])) - float(any(c in relevant[q] for c in first[:1]))
            if a and n > 0 else np.nan
            for q, final, first, a, n in zip(r["qid"], r["chunk_ids"], r["retrieved_ids"], r["answerable"],
                                             r["n_relevant"])]
    np.testing.assert_array_equal(r["hit_lift@1"].to_numpy(np.float64), np.array(want))
    assert cell.metrics["rerank"]["hit_lift@1"] == pytest.approx(np.nanmean(want))
    assert cell.metrics[MEASURES]["rerank/hit_lift@1"]["scorer"] == "rerank_lift"


def test_records_keep_the_documented_column_order():
    from rag_bench.evaluation.table import LAYOUT

    _, cell = _cell("generator=extractive", "eval.unit=both", "reranker=dense")
    cols = list(cell.records.columns)
    order = ["qid", "chunk_ids", "relevant", "unauthorized_retrievals", "doc_ids", "evidence_recall@1", "failure",
             "hit@1", "doc_hit@1", "retrieved_ids", "context_ids", "correct", "citation_precision",
             "false_refusal_rate", "tokens_in", "retrieve_ms", "rerank_ms", "passage_precision@5", "hit_lift@5"]
    assert [cols.index(c) for c in order] == sorted(cols.index(c) for c in order)
    assert LAYOUT[0] == "question" and pd.api.types.is_bool_dtype(cell.records["answerable"])


def test_a_named_scorer_whose_inputs_the_run_lacks_is_refused_with_a_fix():
    """Issue 51, item 5: asking for claims on a retrieval-only run reported nothing, silently."""
    with pytest.raises(ConfigError, match=r"eval.scorers names claims, which this run cannot feed: it has no answers "
                                          r"\(nothing was generated\) -- fix: a generator .*, or leave claims out"):
        _cell("generator=none", "eval.scorers='retrieval,claims'")


def test_under_all_a_scorer_whose_inputs_the_run_lacks_is_skipped_with_the_reason():
    _, cell = _cell("generator=none")
    skipped = cell.metrics[SKIPPED]
    assert skipped["claims"] == "no answers (nothing was generated)" and skipped["judge"] == "no LLM judge scores"
    assert skipped["document"] == "no document-level evaluation" and "retrieval" not in skipped
    assert "claims" not in cell.metrics and "retrieval" in cell.metrics
    for name in skipped:  # each declares what it lacks here
        assert measures.SCORERS.get(name).requires


def test_relevance_is_found_once_per_passages_and_question_and_grades_as_without_sharing(monkeypatch):
    """Issue 57: the relevant chunks depend on the passages, the question and the grading settings,
    not on the ranking; with shared work they are found once for every ranking over one passages
    object, and each ranking is graded as without it. Other passages (equal, not the same object)
    get their own; the arrays handed out are read-only."""
    import dataclasses

    from rag_bench.evaluation import grade as grading
    from rag_bench.evaluation.settings import Settings

    cfg = compose_config(["tracking=none", f"dataset.path={TINY}", "chunker=section", "retriever=bm25"])
    dataset, work = load_dataset(TINY), SharedWork()
    run = pipeline.run(build_cell(cfg, work), dataset, work)
    other = dataclasses.replace(run, ranking_key=f"{run.ranking_key} reversed", questions=tuple(
        dataclasses.replace(q, ranked=dataclasses.replace(q.ranked, indices=q.ranked.indices[::-1],
                                                          scores=q.ranked.scores[::-1])) for q in run.questions))
    settings = Settings(ks=(1, 3), k=3)
    calls = []
    real = grading.relevant_chunks
    monkeypatch.setattr(grading, "relevant_chunks", lambda *a, **k: calls.append(1) or real(*a, **k))
    shared = [grading.grade(r, settings, work) for r in (run, other)]
    assert len(calls) == len(run.questions)  # the second ranking found none again
    for r, got in zip((run, other), shared):
        alone = grading._grade(r, settings)
        assert got.columns == alone.columns
        for a, b in zip(got.questions, alone.questions):
            assert (a.qrels, a.ideal, a.n_relevant, a.judged, a.first_relevant, a.lost) == \
                (b.qrels, b.ideal, b.n_relevant, b.judged, b.first_relevant, b.lost)
            assert np.array_equal(a.levels, b.levels) and np.array_equal(a.found, b.found)
    before = len(calls)
    copied = dataclasses.replace(run, passages=list(run.passages), ranking_key=f"{run.ranking_key} copied")
    grading.grade(copied, settings, work)
    assert len(calls) - before == len(run.questions)  # not the same object: found for it
    rel, grades, found = grading.relevance(run, settings, work)(run.questions[0].question)
    assert not (rel.flags.writeable or grades.flags.writeable or found.flags.writeable)
