"""Graded relevance end to end and document-level evaluation on a BEIR-layout set with graded
qrels (tests/fixtures/beir_graded, written by us): the cell's numbers equal pytrec_eval's on the
cell's own TREC files, in both units and with exponential gain."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import pytrec_eval

from tests.conftest import REPO
from tests.runner.test_run_cell import run

GRADED = REPO / "tests" / "fixtures" / "beir_graded"
# Fixed 80-character windows: several chunks per document, so the document ranking differs from
# the chunk ranking (a document appears once, at its best chunk).
GRID = ("chunker=fixed", "chunker.size=80", "chunker.overlap=0", "generator=none", "eval.ks=[1,3,5,10]")
PAIRS = [("ndcg@10", "ndcg_cut_10"), ("ndcg@5", "ndcg_cut_5"), ("ndcg", "ndcg"), ("map", "map"),
         ("mrr", "recip_rank"), ("precision@5", "P_5"), ("recall@10", "recall_10"), ("hit@1", "success_1")]


def _read(path: Path, run: bool) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for line in path.read_text().splitlines():
        parts = line.split()
        if run:
            out.setdefault(parts[0], {})[parts[2]] = float(parts[4])
        else:
            out.setdefault(parts[0], {})[parts[2]] = int(parts[3])
    return out


def _trec(qrels: dict, run_: dict, measures: set[str], **kw: int) -> dict[str, float]:
    """Means over the evaluated queries of every measure pytrec_eval reports (``ndcg_cut_10``, ...)."""
    per_q = pytrec_eval.RelevanceEvaluator(qrels, measures, **kw).evaluate(run_)
    names = next(iter(per_q.values())).keys()
    return {m: float(np.mean([v[m] for v in per_q.values()])) for m in names}


def _check(metrics: dict, section: str, qrels: dict, run_: dict) -> None:
    ref = _trec(qrels, run_, {"ndcg_cut", "ndcg", "map", "recip_rank", "P", "recall", "success"})
    for ours, theirs in PAIRS:
        assert metrics[section][ours] == pytest.approx(ref[theirs], abs=1e-12), (section, ours)


def test_graded_ndcg_equals_pytrec_eval_in_both_units(tmp_path):
    cell = run(tmp_path, *GRID, "eval.unit=both", dataset=GRADED)
    metrics = json.loads((cell / "metrics.json").read_text())
    qrels_doc = _read(cell / "qrels.document.trec", run=False)
    assert qrels_doc["q1"] == {"d1": 2, "d2": 1} and "q5" not in qrels_doc  # grades kept; grade 0 is no judgment
    _check(metrics, "document", qrels_doc, _read(cell / "run.document.trec", run=True))
    qrels_chunk = _read(cell / "qrels.trec", run=False)
    assert set(qrels_chunk["q1"].values()) == {1, 2}  # chunks carry their document's grade
    _check(metrics, "retrieval", qrels_chunk, _read(cell / "run.trec", run=True))
    assert metrics["counts"]["excluded_no_relevant"] == 1 and metrics["counts"]["unanswerable"] == 0
    assert metrics["n"]["document/ndcg@10"] == 4 and metrics["failures"]["unjudged"] == 1
    records = pd.read_parquet(cell / "records.parquet").set_index("qid")
    assert records.loc["q5", "failure"] == "unjudged" and math.isnan(records.loc["q5", "doc_ndcg@10"])
    assert len(records.loc["q1", "doc_ids"]) == len(set(records.loc["q1", "doc_ids"]))


def test_exponential_gain_is_graded_ndcg_with_gains_2_pow_grade_minus_1(tmp_path):
    linear = json.loads((run(tmp_path / "lin", *GRID, "eval.unit=document", dataset=GRADED) / "metrics.json")
                        .read_text())
    cell = run(tmp_path / "exp", *GRID, "eval.unit=document", "eval.gain=exponential", dataset=GRADED)
    metrics = json.loads((cell / "metrics.json").read_text())
    assert "retrieval" not in metrics and metrics["document"]["ndcg@10"] != linear["document"]["ndcg@10"]
    qrels = {q: {d: 2 ** g - 1 for d, g in docs.items()} for q, docs in
             _read(cell / "qrels.document.trec", run=False).items()}
    ref = _trec(qrels, _read(cell / "run.document.trec", run=True), {"ndcg_cut", "ndcg"})
    assert metrics["document"]["ndcg@10"] == pytest.approx(ref["ndcg_cut_10"], abs=1e-12)
    assert metrics["document"]["ndcg"] == pytest.approx(ref["ndcg"], abs=1e-12)
    assert metrics["document"]["map"] == linear["document"]["map"]  # binary measures ignore the gain


def test_relevance_level_counts_only_higher_grades_for_binary_measures(tmp_path):
    cell = run(tmp_path, *GRID, "eval.unit=document", "eval.relevance_level=2", dataset=GRADED)
    metrics = json.loads((cell / "metrics.json").read_text())
    qrels = _read(cell / "qrels.document.trec", run=False)
    ref = _trec(qrels, _read(cell / "run.document.trec", run=True), {"map", "P", "recall"}, relevance_level=2)
    assert metrics["document"]["map"] == pytest.approx(ref["map"], abs=1e-12)
    assert metrics["document"]["recall@10"] == pytest.approx(ref["recall_10"], abs=1e-12)
    assert metrics["document"]["precision@5"] == pytest.approx(ref["P_5"], abs=1e-12)


def test_native_evidence_may_carry_a_grade(tmp_path):
    from rag_bench.cli import main as cli

    src = REPO / "tests" / "fixtures" / "tiny"
    import shutil

    ds = tmp_path / "graded"
    shutil.copytree(src, ds)
    lines = (ds / "questions.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    first["evidence"][0]["grade"] = 3
    lines[0] = json.dumps(first)
    (ds / "questions.jsonl").write_text("\n".join(lines) + "\n")
    cell = run(tmp_path / "out", "chunker=section", "generator=none", dataset=ds)
    assert any(line.split()[0] == first["id"] and line.split()[3] == "3"
               for line in (cell / "qrels.trec").read_text().splitlines())
    first["evidence"][0]["grade"] = 0
    lines[0] = json.dumps(first)
    (ds / "questions.jsonl").write_text("\n".join(lines) + "\n")
    assert cli(["validate", str(ds)]) == 2


def test_degenerate_numbers_come_with_a_warning(tmp_path):
    """A BEIR set has no answers: correctness is averaged over no question, and the cell says so."""
    cell = run(tmp_path, "chunker=section", "generator=extractive", "eval.unit=both", dataset=GRADED)
    warnings = json.loads((cell / "metrics.json").read_text())["warnings"]
    assert warnings == ["generation/correct is computed on 0 questions (no question has facts or references)"]


def test_a_retriever_that_matches_nothing_is_flagged():
    from rag_bench.domain import Dataset, Question, Ranking
    from rag_bench.evaluation.grade import Grades
    from rag_bench.evaluation.run import QuestionRun, SystemRun
    from rag_bench.evaluation.scorer import Settings
    from rag_bench.evaluation.scorers.chunk_ranking import _warnings

    def run(answerable: list[bool], index: str = "flat") -> SystemRun:
        qs = [Question(f"q{i}", "?", a) for i, a in enumerate(answerable)]
        empty = Ranking("q", (), ())
        return SystemRun(Dataset("d", "", "native", {}, tuple(qs)), [], tuple(QuestionRun(q, empty, empty) for q in qs),
                         index_name=index)

    scores = {"scores": [[0.0, -1e-7], [2.5, 1.0], [0.0], [0.0]]}
    settings = Settings(ks=(5,), k=5)
    (warning,) = _warnings(run([True, True, True, False]), Grades((), scores), {}, settings)
    # The unanswerable question that matched nothing is retrieval working, not a sign of a bad setting.
    assert warning.startswith("2 of 3 answerable questions have a top retrieval score of 0")
    assert "retriever.language" in warning
    (warning,) = _warnings(run([True, True, True, False], "external"), Grades((), scores), {}, settings)
    assert "BM25" not in warning and "retriever.language" not in warning and "passages the system returned" in warning
    only = {"scores": [[1.0], [2.5], [0.0], [0.0]]}
    assert _warnings(run([True, True, False, False]), Grades((), only), {}, settings) == []


def test_a_question_without_evidence_at_the_relevance_level_is_unjudged(tmp_path):
    """At eval.relevance_level=2 a question whose evidence is all grade 1 is left out and labelled
    unjudged (it was labelled retrieval_miss although its grade-1 chunk ranked first)."""
    import shutil

    data = tmp_path / "graded"
    shutil.copytree(GRADED, data)
    qrels = data / "qrels" / "test.tsv"
    qrels.write_text(qrels.read_text() + "q6\td6\t1\n")
    (data / "queries.jsonl").write_text((data / "queries.jsonl").read_text()
                                        + '{"_id": "q6", "text": "stores open at nine on weekdays"}\n')
    cell = run(tmp_path / "out", *GRID, "eval.relevance_level=2", dataset=data)
    records = pd.read_parquet(cell / "records.parquet").set_index("qid")
    assert records.loc["q6", "failure"] == "unjudged" and math.isnan(records.loc["q6", "ndcg@10"])
    assert records.loc["q1", "failure"] != "unjudged"


def test_the_console_line_of_a_cell_fits_120_characters_and_keeps_a_security_alert():
    from rag_bench.runner.main import console_short, n_legend

    metrics = {"retrieval": {"hit@5": 0.934, "mrr": 0.746},
               "generation": {"correct": 0.262, "squad_exact": 0.21, "squad_f1": 0.298},
               "security": {"unauthorized_retrievals": 0}}
    line = "cell 0123456789ab done: " + console_short(metrics, "section hybrid rr=dense k=5")
    assert line.endswith("section hybrid rr=dense k=5 | hit@5=0.934 mrr=0.746 correct=0.262 squad_em=0.210 "
                         "squad_f1=0.298")
    # A long label is never cut (it was: "…fixed den…"): the measures go on a second line, both within 120.
    label = "recursive_400 hybrid rr=cross_encoder " * 2 + "fixed dense"
    long = "cell 0123456789ab done: " + console_short(metrics, label)
    head, tail = long.split("\n")
    assert head == f"cell 0123456789ab done: {label}" and "…" not in long
    assert tail == "    | hit@5=0.934 mrr=0.746 correct=0.262 squad_em=0.210 squad_f1=0.298"
    assert max(len(head), len(tail)) <= 120
    # Over different questions: the sweep's legend says each measure's n once, and the lines leave them out.
    metrics["n"] = {"retrieval/hit@5": 65, "retrieval/mrr": 65, "generation/correct": 62,
                    "generation/squad_exact": 82, "generation/squad_f1": 82}
    assert n_legend(metrics) == "(n: hit@5 mrr over 65 questions; correct over 62; squad_em squad_f1 over 82)"
    demo = "cell 0123456789ab done: " + console_short(metrics, "sentence hybrid rr=dense k=5", n_said=True)
    assert "\n" not in demo and len(demo) <= 120 and "(n=" not in demo
    assert "(n=65)" in console_short(metrics, "x")  # a line with no legend above keeps them
    metrics["security"]["unauthorized_retrievals"] = 3
    assert console_short(metrics, "x").endswith("SECURITY: 3 unauthorized retrieval(s)")
    del metrics["generation"]  # a retrieval-only cell: no answer measures shown
    assert console_short(metrics, "x").startswith("x | hit@5=0.934 mrr=0.746 |")
