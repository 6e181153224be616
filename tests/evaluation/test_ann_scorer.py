"""The ann scorer reports an index's figures under their measures and says when index.target_recall
could not be reached (issue 40 item 14: metrics.json had tuned_reached false and nothing else said so)."""

from __future__ import annotations

from rag_bench.domain import Dataset, Question, Ranking
from rag_bench.evaluation.evaluation import aggregate
from rag_bench.evaluation.grade import Grades
from rag_bench.evaluation.run import QuestionRun, SystemRun
from rag_bench.evaluation.scorer import ScoringInput, Settings
from rag_bench.evaluation.scorers import ann
from rag_bench.indexing.ann_report import AnnReport
from rag_bench.indexing.tuning import TunePoint, TuneResult


def _run(reached: bool) -> SystemRun:
    tuning = TuneResult(knob="ef_search", target=0.95, k=10, chosen=1024, reached=reached,
                        curve=(TunePoint(512, 0.91, 0.2), TunePoint(1024, 0.929, 0.3)), n=8, held_out_n=8,
                        held_out_recall=0.92)
    report = AnnReport("hnsw", {5: 0.93, 10: 0.929}, 0.3, 0.5, 0.1, 0.2, 1.0, 0.1, 1000, 800, 2, tuning)
    q = Question("q1", "?", False)
    empty = Ranking("q1", (), ())
    return SystemRun(Dataset("d", "", "native", {}, (q,)), [], (QuestionRun(q, empty, empty),), ann=report,
                     index_name="hnsw_m4_ef1")


def test_an_unreachable_target_is_a_warning_naming_the_knob_and_the_fix():
    settings = Settings(ks=(5, 10), k=5)
    run = _run(reached=False)
    (part,) = ann.SCORER.score(ScoringInput(run, settings, Grades((), {})))
    (warning,) = part.warnings
    assert "index.target_recall=0.95 was not reached on index hnsw_m4_ef1" in warning
    assert "ef_search=1024" in warning and "0.929" in warning and "-- fix:" in warning
    metrics = aggregate({"qid": ["q1"]}, [(m, "ann") for m in ann.SCORER.measures(run, settings)], [part], settings)
    assert metrics["ann"]["tuned_reached"] is False and metrics["ann"]["target_recall"] == 0.95
    assert metrics["ann"]["tune_recall@10"] == 0.929 and metrics["ann"]["ann_recall@10"] == 0.929


def test_a_reached_target_says_nothing():
    (part,) = ann.SCORER.score(ScoringInput(_run(reached=True), Settings(ks=(5, 10), k=5), Grades((), {})))
    assert part.warnings == ()
