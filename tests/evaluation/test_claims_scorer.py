"""The claims scorer (rag_bench/evaluation/scorers/claims.py, issue 42): claims split with their own
citations, judged by their cited passages and by the whole context, each measure on small hand-built
runs, the undefined cases and the records column."""

from __future__ import annotations

import math

from rag_bench.domain import Answer, Dataset, Passage, Question, Ranking
from rag_bench.evaluation import measures
from rag_bench.evaluation.grade import Grades
from rag_bench.evaluation.run import QuestionRun, SystemRun
from rag_bench.evaluation.scorer import ScoringInput, Settings
from rag_bench.evaluation.scorers import claims
from rag_bench.evaluation.table import LAYOUT
from rag_bench.metrics.support import claim_citations, judge_claims, split_claims

VIKING = "Rollo was a Viking chief from Scandinavia."
NORMANDY = "Rollo became the first ruler of Normandy in 911. His son was William Longsword."
PARIS = "Paris is the capital of France and its largest city."
PASSAGES = (Passage(1, "c1", "d1", 0, len(VIKING), VIKING), Passage(2, "c2", "d2", 0, len(NORMANDY), NORMANDY),
            Passage(3, "c3", "d3", 0, len(PARIS), PARIS))


def _run(answers: list[Answer]) -> ScoringInput:
    qs, runs = [], []
    for i, a in enumerate(answers):
        q = Question(f"q{i}", "?", True)
        empty = Ranking(q.qid, (), ())
        qs.append(q)
        runs.append(QuestionRun(q, empty, empty, context=PASSAGES, answer=a))
    run = SystemRun(Dataset("d", "", "native", {}, tuple(qs)), [], tuple(runs))
    return ScoringInput(run, Settings(ks=(5,), k=3), Grades((), {}))


def _score(*answers: Answer) -> dict[str, list]:
    (part,) = claims.SCORER.score(_run(list(answers)))
    return {k: [None if isinstance(v, float) and math.isnan(v) else v for v in col] for k, col in part.columns.items()}


# --- splitting with citations -------------------------------------------------------------------------------------

def test_a_marker_belongs_to_the_claim_it_follows() -> None:
    text = "Rollo was a Viking chief [1]. Rollo became ruler of Normandy in 911 [2]."
    cs = split_claims(text)
    assert [c.text for c in cs] == ["Rollo was a Viking chief", "Rollo became ruler of Normandy in 911"]
    assert claim_citations(text, cs, [1, 2]) == ((1,), (2,))


def test_a_clause_without_a_marker_takes_the_next_marker_of_its_sentence_only() -> None:
    text = "Rollo was a Viking chief from Scandinavia; Rollo became ruler of Normandy [1, 2]. Paris is a big city."
    cs = split_claims(text)
    assert len(cs) == 3
    # the first clause shares its sentence's marker; the next sentence has none of its own
    assert claim_citations(text, cs, [1, 2]) == ((1, 2), (1, 2), ())


def test_an_answer_without_markers_cites_by_its_sources_list() -> None:
    text = "Rollo became ruler of Normandy in 911."
    assert claim_citations(text, split_claims(text), [2]) == ((2,),)
    two = "Rollo was a Viking chief. Rollo became ruler of Normandy in 911."
    assert claim_citations(two, split_claims(two), [2, 1]) == ((1, 2), (1, 2))


def test_a_marker_outside_the_valid_citations_is_dropped() -> None:
    text = "Rollo was a Viking chief [1, 7]."
    assert claim_citations(text, split_claims(text), [1]) == ((1,),)


# --- own vs context support ---------------------------------------------------------------------------------------

def test_a_claim_citing_the_wrong_passage_is_unsupported_but_supported_by_the_context() -> None:
    ps = [(p.number, p.text) for p in PASSAGES]
    (v,) = judge_claims("Rollo became ruler of Normandy in 911 [1].", [1], ps)
    assert (v.citations, v.supported, v.by_citation) == ((1,), False, (False,))
    assert v.context_supported and v.context_passage == 2
    assert NORMANDY[v.context.start:v.context.end] == NORMANDY  # the window: the whole passage (max_sentences=0)


def test_own_support_names_the_cited_passage_and_its_span() -> None:
    ps = [(p.number, p.text) for p in PASSAGES]
    (v,) = judge_claims("Rollo became ruler of Normandy in 911 [1, 2].", [1, 2], ps)
    assert v.supported and v.own_passage == 2 and v.by_citation == (False, True)
    rec = claims.claim_record(v)
    assert rec["passage"] == 2 and (rec["span_start"], rec["span_end"]) == (0, len(NORMANDY))
    assert rec["citations"] == [1, 2] and rec["by_citation"] == [False, True] and rec["supported"] is True


# --- each measure on hand-built runs ------------------------------------------------------------------------------

def test_each_measure_on_a_mixed_answer() -> None:
    # claim 1 cites the right passage; claim 2 cites a wrong one and a right one; claim 3 is uncited
    # and nothing in the context holds it (a wrong year).
    a = Answer("Rollo was a Viking chief from Scandinavia [1]. Rollo became ruler of Normandy in 911 [3, 2]. "
               "William Longsword died in 1066.", (1, 2, 3))
    cols = _score(a)
    assert cols[claims.CLAIM_SUPPORT.column] == [2 / 3]
    assert cols[claims.CITATION_PRECISION_CLAIMS.column] == [2 / 3]  # pairs (1,1) yes, (2,3) no, (2,2) yes
    assert cols[claims.CITATION_COVERAGE.column] == [2 / 3]
    assert cols[claims.UNSUPPORTED_CLAIMS.column] == [1.0]  # 1066 is nowhere
    assert cols[claims.ANSWER_SUPPORTED.column] == [0.0]
    (row,) = cols[claims.COLUMN]
    assert [r["supported"] for r in row] == [True, True, False]
    assert [r["citations"] for r in row] == [[1], [3, 2], []]
    assert row[2]["passage"] is None and row[2]["span_start"] is None and row[2]["context_supported"] is False


def test_a_fully_supported_answer_and_a_claim_only_the_context_supports() -> None:
    good = Answer("Rollo became the first ruler of Normandy in 911.", (2,))
    uncited_but_there = Answer("Rollo was a Viking chief [2]. Paris is the capital of France [3].", (2, 3))
    cols = _score(good, uncited_but_there)
    assert cols[claims.ANSWER_SUPPORTED.column] == [1.0, 0.0]
    assert cols[claims.CLAIM_SUPPORT.column] == [1.0, 0.5]
    assert cols[claims.UNSUPPORTED_CLAIMS.column] == [0.0, 0.0]  # the context holds both claims of the second


def test_refusals_failures_and_empty_claims_are_undefined() -> None:
    cols = _score(Answer("I cannot answer this from the provided sources.", refused=True),
                  Answer("", parse_error="not JSON"), Answer("x", error="timeout"),
                  Answer("Yes, well, I think so!", (1,)))
    for m in claims.CLAIMS:
        assert cols[m.column] == [None, None, None, None], m.name
    assert cols[claims.COLUMN] == [[], [], [], []]


def test_an_answer_citing_nothing_has_no_citation_precision_but_zero_support() -> None:
    cols = _score(Answer("Rollo became ruler of Normandy in 911.", ()))
    assert cols[claims.CITATION_PRECISION_CLAIMS.column] == [None]
    assert cols[claims.CLAIM_SUPPORT.column] == [0.0] and cols[claims.CITATION_COVERAGE.column] == [0.0]
    assert cols[claims.UNSUPPORTED_CLAIMS.column] == [0.0]


# --- the catalog --------------------------------------------------------------------------------------------------

def test_the_measures_are_declared_and_the_column_has_its_slot() -> None:
    assert [m.key for m in claims.CLAIMS] == ["claims/claim_support", "claims/citation_precision_claims",
                                             "claims/citation_coverage", "claims/unsupported_claims",
                                             "claims/answer_supported"]
    assert measures.measure("claims/unsupported_claims").higher_is_better is False
    assert "claims" in measures.SCORERS and "claims" in LAYOUT and "claims" in measures.QUESTION_SECTIONS
    # a retrieval-only run has no answers: the evaluation does not run the scorer on it (its requires)
    assert claims.SCORER.requires == ("answers",)


# --- through the CLI ----------------------------------------------------------------------------------------------

def test_evaluate_records_claims_judged_by_their_own_markers(tmp_path) -> None:
    """`rag-bench evaluate` on an application's outputs: the first answer cites the right passage
    for each claim, the second swaps the markers (each claim cites the other's passage): its claims
    are unsupported by their citations yet supported by the context, which the old measures miss."""
    import json

    import pandas as pd

    from rag_bench.cli import main
    from tests.conftest import TINY

    refund = "A full refund is available if you cancel within 14 days of a renewal."
    discount = "Annual plans cost 20% less than twelve monthly payments."
    right = "A full refund is available within 14 days of a renewal [1]. Annual plans cost 20% less [2]."
    swapped = "A full refund is available within 14 days of a renewal [2]. Annual plans cost 20% less [1]."
    rows = [{"id": q, "retrieved": [{"doc_id": "billing", "text": refund}, {"doc_id": "billing", "text": discount}],
             "answer": a, "citations": [1, 2]} for q, a in (("q1", right), ("q2", swapped))]
    rows += [{"id": f"q{i}", "retrieved": [], "answer": "I cannot answer this from the provided sources.",
              "refused": True} for i in range(3, 7)]  # the other questions refused: no claims, undefined
    outputs = tmp_path / "out.jsonl"
    outputs.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert main(["evaluate", str(outputs), "--dataset", str(TINY), "tracking=none", f"output.root={tmp_path}",
                 "experiment.name=claims"]) == 0
    (cell,) = [d for d in (tmp_path / "claims").iterdir() if (d / "DONE").is_file()]
    r = pd.read_parquet(cell / "records.parquet").set_index("qid")
    assert r.loc["q1", "claim_support"] == 1.0 and r.loc["q2", "claim_support"] == 0.0
    assert r.loc["q2", "citation_precision_claims"] == 0.0 and r.loc["q2", "unsupported_claims"] == 0.0
    assert r.loc["q2", "faithfulness"] == 1.0  # the pooled proxy cannot tell
    claims = list(r.loc["q2", "claims"])
    assert [list(c["citations"]) for c in claims] == [[2], [1]]
    assert [(c["supported"], c["context_supported"], c["context_passage"]) for c in claims] == [
        (False, True, 1), (False, True, 2)]
    assert (claims[0]["context_span_start"], claims[0]["context_span_end"]) == (0, len(refund))
    metrics = json.loads((cell / "metrics.json").read_text(encoding="utf-8"))
    assert metrics["claims"]["claim_support"] == 0.5 and metrics["n"]["claims/claim_support"] == 2
    assert metrics["measures"]["claims/unsupported_claims"]["direction"] == "lower"
