"""Answer matching: exact match, token F1, answer recall (containment) and facts, side by side;
eval.answer_match picks which one is `correct` and so the failure labels."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from rag_bench.domain import Answer
from rag_bench.evaluation.scorers.attribution import final_label
from rag_bench.metrics.generation import correctness, match_answer
from tests.conftest import SHARED
from tests.runner.test_run_cell import run

SQUAD = SHARED / "datasets" / "squad2-normans"
LONG = Answer("The Normans, descended from Norse raiders and the local Frankish people, lived in Normandy in the "
              "10th and 11th centuries and gave the region its name [1].", (1,))


def test_a_long_answer_containing_the_reference_is_correct_by_containment_only():
    m = match_answer(LONG, (), ["10th and 11th centuries", "in the 10th and 11th centuries"])
    assert (m.answer_recall, m.exact_match) == (1.0, 0.0) and m.token_f1 < 0.5 and m.words == 26.0
    assert correctness(m, "auto") == 1.0 and correctness(m, "contains") == 1.0
    assert correctness(m, "em") == 0.0 and correctness(m, "f1") == 0.0
    assert correctness(m, "f1", f1_threshold=0.3) == 1.0
    assert math.isnan(correctness(m, "facts"))  # no facts to check


def test_auto_prefers_facts_and_containment_is_whole_words():
    m = match_answer(Answer("It takes 14 days, sometimes 140."), ("14 days",), ["fourteen days"])
    assert correctness(m, "auto") == 1.0 and m.answer_recall == 0.0
    assert match_answer(Answer("the 110th day"), (), ["10th"]).answer_recall == 0.0


def test_a_refusal_matches_nothing_and_a_question_without_references_has_no_correctness():
    refused = match_answer(Answer("I cannot answer.", refused=True), ("x",), ["x"])
    assert (refused.exact_match, refused.token_f1, refused.answer_recall, refused.facts_present) == (0, 0, 0, 0)
    assert math.isnan(refused.words)
    free = match_answer(LONG, (), ())
    assert math.isnan(correctness(free, "auto"))
    assert final_label(True, "in_context", LONG, correctness(free, "auto"), 1.0) == "in_context"


def test_answer_match_is_checked(tmp_path):
    from rag_bench.errors import ConfigError

    with pytest.raises(ConfigError, match="eval.answer_match: .fuzzy. is not one of auto, contains"):
        run(tmp_path, "eval.answer_match=fuzzy")


@pytest.mark.skipif(not SQUAD.is_dir(), reason="../shared/datasets/squad2-normans is absent")
def test_squad2_long_answers_are_not_generation_failures(tmp_path):
    """Real rows: the extractive generator answers with whole sentences. Before containment was
    the default, every cell reported correct 0.000 and blamed ~75 of 96 answerable questions on
    generation, including answers holding the gold span word for word."""
    cell = run(tmp_path, "chunker=section", "generator=extractive", dataset=SQUAD)
    metrics = json.loads((cell / "metrics.json").read_text())
    gen = metrics["generation"]
    assert gen["correct"] > 0.3 and gen["correct"] == pytest.approx(gen["answer_recall"])
    assert gen["exact_match"] is not None and gen["token_f1"] is not None and gen["answer_words"] > 5
    assert metrics["n"]["generation/correct"] == metrics["counts"]["answerable"] - metrics["counts"].get(
        "endpoint_failures", 0)
    records = pd.read_parquet(cell / "records.parquet")
    blamed = records[records["failure"] == "generation"]
    assert len(blamed) < 30 and (blamed["answer_recall"] == 0).all()
    contained = records[(records["answer_recall"] == 1) & records["answerable"]]
    assert len(contained) > 30 and not (contained["failure"] == "generation").any()
    em = json.loads((cell / "metrics.json").read_text())["generation"]["exact_match"]
    strict = json.loads((run(tmp_path / "em", "chunker=section", "generator=extractive", "eval.answer_match=em",
                             dataset=SQUAD) / "metrics.json").read_text())
    assert strict["generation"]["correct"] == pytest.approx(em) and strict["failures"]["generation"] > 60
    # Whole-sentence answers never equal a short reference: the cell says so instead of a silent 0.000.
    assert em == 0 and any("generation/correct is 0 although the evidence reached the context" in w
                           for w in strict["warnings"])
    assert not any("generation/correct" in w for w in metrics["warnings"])
