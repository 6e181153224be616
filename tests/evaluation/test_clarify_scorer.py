"""The clarify scorer (rag_bench/evaluation/scorers/clarify.py) and how the other answer measures
count a question expecting a clarifying question (issue 42)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from rag_bench.domain import Answer, Dataset, Passage, Question, Ranking
from rag_bench.evaluation.grade import Grades
from rag_bench.evaluation.run import QuestionRun, SystemRun
from rag_bench.evaluation.scorer import ScoringInput, Settings
from rag_bench.evaluation.scorers import abstention, answer, clarify, generation
from rag_bench.evaluation.scorers.evidence import CONTEXT_COMPLETE
from rag_bench.generation.base import Traits
from rag_bench.text.normalize import asks_for

HOTEL = Question("h", "Can I claim a hotel refund for my delayed flight?", True, expects="clarify",
                 clarify_facts=("overnight stay", "airline confirmed"), facts=("hotel",), answers=("Yes, if ...",))
PLAIN = Question("p", "How long is the refund window?", True, facts=("14 days",), answers=("14 days",))
OFF = Question("o", "What is the capital of Peru?", False)

ASKS = Answer("", clarification="Did the delay need an overnight stay, and has the airline confirmed it caused it?")
ASKS_HALF = Answer("", clarification="Did the delay need an overnight stay?")
DIRECT = Answer("Yes, hotels are refunded.")
REFUSAL = Answer("I cannot answer this from the provided sources.", refused=True)
FAILED = Answer("", error="timeout")
BROKE = Answer("", parse_error="not JSON: Expecting ',' delimiter")  # gemma3-270m ran past max_tokens


def _context(rows: list[tuple[Question, Answer]], traits: Traits | None = None) -> ScoringInput:
    questions = tuple(dataclasses.replace(q, qid=f"{q.qid}{i}") for i, (q, _) in enumerate(rows))
    runs = tuple(QuestionRun(q, Ranking(q.qid, (), ()), Ranking(q.qid, (), ()), answer=a)
                 for q, (_, a) in zip(questions, rows))
    run = SystemRun(Dataset("d", "", "native", {}, questions), [], runs, generator=traits)
    ctx = ScoringInput(run, Settings(ks=(5,), k=5), Grades((), {}))
    for part in generation.SCORER.score(ctx):
        ctx.columns.update(part.columns)
    ctx.columns[CONTEXT_COMPLETE.column] = [1.0 if q.answerable else np.nan for q in questions]
    return ctx


def _col(parts, column):
    (part,) = parts
    return [None if math.isnan(v) else v for v in part.columns[column]]


def test_right_for_an_answer_asking_for_every_fact_wrong_for_a_direct_answer_and_a_refusal():
    ctx = _context([(HOTEL, ASKS), (HOTEL, ASKS_HALF), (HOTEL, DIRECT), (HOTEL, REFUSAL), (HOTEL, FAILED),
                    (PLAIN, DIRECT), (PLAIN, ASKS), (HOTEL, BROKE)])
    parts = clarify.SCORER.score(ctx)
    assert _col(parts, "correct_clarification") == [1.0, 0.0, 0.0, 0.0, None, None, None, 0.0]
    # an unparseable output answered nothing: wrong, not premature
    assert _col(parts, "premature_answer") == [0.0, 0.0, 1.0, 0.0, None, None, None, 0.0]
    assert _col(parts, "clarify_rate") == [1.0, 1.0, 0.0, 0.0, None, 0.0, 1.0, 0.0]
    assert parts[0].values == {clarify.EXPECTS_CLARIFY.key: 6} and parts[0].findings == ()
    # correct_all: right iff the clarification is correct; context_all: as an answerable question
    (ans,) = answer.SCORER.score(ctx)
    assert [None if math.isnan(v) else v for v in ans.columns["correct_all"]][:5] == [1.0, 0.0, 0.0, 0.0, None]
    assert list(ans.columns["context_all"])[:5] == [1.0] * 5
    # its refusal is no false refusal of an answerable question, nor counted by the refusal warning
    assert ans.values == {answer.HANDED.key: 2, answer.REFUSED.key: 0}


def test_a_clarify_question_stays_out_of_the_answerable_only_measures():
    ctx = _context([(HOTEL, DIRECT), (HOTEL, REFUSAL), (PLAIN, REFUSAL), (OFF, DIRECT)])
    for column in ("correct", "exact_match", "token_f1", "facts_present", "squad_exact", "squad_hasans_exact"):
        assert ctx.columns[column][0] != ctx.columns[column][0], column  # NaN: not a denominator
    ab = abstention.SCORER.score(ctx)
    assert _col(ab, "false_refusal_rate") == [None, None, 1.0, None]
    assert _col(ab, "correct_refusal_rate") == [None, None, None, 0.0]
    assert _col(ab, "unsupported_answer_rate") == [None, None, None, 1.0]


def test_reported_only_for_a_dataset_that_asks_for_it_or_an_answer_that_asked():
    settings = Settings(ks=(5,), k=5)
    without = _context([(PLAIN, DIRECT), (OFF, REFUSAL)])
    assert clarify.SCORER.measures(without.run, settings) == [] and clarify.SCORER.score(without) == []
    asked = _context([(PLAIN, ASKS)])
    assert [m.key for m in clarify.SCORER.measures(asked.run, settings)] == [
        "clarify/clarify_rate", "clarify/correct_clarification", "clarify/premature_answer", "counts/expects_clarify"]
    assert _col(clarify.SCORER.score(asked), "clarify_rate") == [1.0]


def test_a_generator_that_cannot_ask_is_warned_about_once_per_cell():
    stand_in = Traits(stand_in=True, refusal_setting="generator.threshold", can_clarify=False)
    (part,) = clarify.SCORER.score(_context([(HOTEL, DIRECT), (HOTEL, REFUSAL), (PLAIN, DIRECT)], stand_in))
    (warning,) = part.findings  # about the data set and the stand-in: the verdict's, not the cell's console line
    assert part.warnings == ()
    assert warning.startswith("2 question(s) expect a clarifying question") and "-- fix: plug a model" in warning
    (part,) = clarify.SCORER.score(_context([(HOTEL, DIRECT)], Traits()))
    assert part.findings == ()


@pytest.mark.parametrize(("question", "fact", "asks"), [
    ("Does the delay require a stay overnight?", "overnight stay", True),  # any order
    ("Has the airline confirmed that it caused the delay?", "airline confirmed", True),  # stems: confirmed/confirm
    ("Did the airline cause the delay?", "airline confirmed", False),  # a content word missing
    ("Is the fridge still sealed, or has it been opened?", "opened", True),
    ("How far is your address from the nearest Kettleby store?", "far from store", True),
    ("Which delivery zone are you in?", "far from store", False),  # other words: not matched (documented)
    ("Is it?", "is it", False),  # a fact without content words never matches
])
def test_the_matching_rule(question, fact, asks):
    assert asks_for(question, fact) is asks


UNDERSPECIFIED = Question("u", "And the other one?", True, expects="clarify")  # MTRAG-UN: no clarify_facts
PLANS = (Passage(1, "billing#0", "billing", 0, 40, "There are two plans, Basic and Pro."),)


def test_without_clarify_facts_any_question_back_asserting_nothing_unsupported_is_right():
    # issue 53 item 2: asking is right; a supported statement before the question is allowed, an
    # unsupported one (or a direct answer) is premature.
    rows = [Answer("", clarification="Which plan do you mean?"),
            Answer("There are two plans, Basic and Pro [1].", citations=(1,), clarification="Which one is yours?"),
            Answer("Pro costs $79 a month.", clarification="Is that the plan you mean?"),
            Answer("The other plan is Pro."),
            Answer("", clarification="Sure, noted.")]  # asks nothing: no question in it
    ctx = _context([(UNDERSPECIFIED, a) for a in rows])
    ctx = dataclasses.replace(ctx, run=dataclasses.replace(ctx.run, questions=tuple(
        dataclasses.replace(qr, context=PLANS) for qr in ctx.run.questions)))
    parts = clarify.SCORER.score(ctx)
    assert _col(parts, "correct_clarification") == [1.0, 1.0, 0.0, 0.0, 0.0]
    assert _col(parts, "premature_answer") == [0.0, 0.0, 1.0, 1.0, 0.0]
    (ans,) = answer.SCORER.score(ctx)
    assert list(ans.columns["correct_all"]) == [1.0, 1.0, 0.0, 0.0, 0.0]
