"""answer/correct_all and answer/context_all (issue 41): every question counts, an unanswerable one
by whether it was refused; the refusal figures and warning; what a generator declares of itself."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rag_bench.domain import Answer, Dataset, Question, Ranking
from rag_bench.errors import ConfigError
from rag_bench.evaluation.evaluation import _unmet
from rag_bench.evaluation.grade import Grades
from rag_bench.evaluation.run import QuestionRun, SystemRun
from rag_bench.evaluation.scorer import REQUIREMENTS, ScoringInput, Settings
from rag_bench.evaluation.scorers import answer
from rag_bench.evaluation.scorers.evidence import CONTEXT_COMPLETE
from rag_bench.evaluation.scorers.generation import CORRECT
from rag_bench.generation.base import Traits, checked_traits

STAND_IN = Traits(stand_in=True, refusal_setting="generator.threshold")


def _context(rows, traits=None):
    """One question per row: (answerable, refused, call failed, correct, evidence all in context)."""
    questions, runs, correct, complete = [], [], [], []
    for i, (answerable, refused, failed, right, handed) in enumerate(rows):
        q = Question(f"q{i}", "?", answerable)
        empty = Ranking(q.qid, (), ())
        a = Answer("" if refused else "x", refused=refused, error="timeout" if failed else None)
        runs.append(QuestionRun(q, empty, empty, answer=a))
        questions.append(q)
        correct.append(np.nan if not answerable or failed else float(right))
        complete.append(np.nan if not answerable else float(handed))
    run = SystemRun(Dataset("d", "", "native", {}, tuple(questions)), [], tuple(runs), generator=traits)
    return ScoringInput(run, Settings(ks=(5,), k=5), Grades((), {}),
                   columns={CORRECT.column: correct, CONTEXT_COMPLETE.column: complete})


def _values(col):
    return [None if math.isnan(v) else v for v in col]


def test_correct_all_counts_a_refused_unanswerable_question_as_right():
    ctx = _context([
        (True, False, False, 1, 1),   # answered correctly
        (True, True, False, 0, 1),    # refused with its evidence in hand
        (True, False, True, 0, 1),    # the call failed: no verdict
        (False, True, False, 0, 0),   # unanswerable, refused: right
        (False, False, False, 0, 0),  # unanswerable, answered anyway: wrong
        (False, False, True, 0, 0),   # unanswerable, the call failed: no verdict
    ])
    (part,) = answer.SCORER.score(ctx)
    assert _values(part.columns[answer.CORRECT_ALL.column]) == [1.0, 0.0, None, 1.0, 0.0, None]
    # context_all: an answerable question by its evidence reaching the generator, whatever it answered
    assert _values(part.columns[answer.CONTEXT_ALL.column]) == [1.0, 1.0, 1.0, 1.0, 0.0, None]
    # of the two answerable questions handed all their evidence (the failed call not counted), one refused
    assert part.values == {answer.HANDED.key: 2, answer.REFUSED.key: 1}


def test_a_cell_that_answers_every_unanswerable_question_ranks_below_one_that_refuses_them():
    """The issue's squad2-normans case: B answers one more answerable question, A refuses the
    unanswerable ones; over all questions A is better, over the answerable ones B looks better."""
    answerable = [(True, False, False, 1, 1)] * 5 + [(True, True, False, 0, 1)] * 5
    a = _context(answerable + [(False, True, False, 0, 0)] * 10)
    b = _context(answerable[:5] + [(True, False, False, 1, 1)] + answerable[6:] + [(False, False, False, 0, 0)] * 10)
    mean = {name: np.nanmean(answer.SCORER.score(ctx)[0].columns[answer.CORRECT_ALL.column])
            for name, ctx in (("a", a), ("b", b))}
    assert mean["a"] == pytest.approx(15 / 20) and mean["b"] == pytest.approx(6 / 20)


def test_the_stand_in_and_its_refusal_setting_are_written_and_its_warning_left_to_the_sweep():
    rows = [(True, True, False, 0, 1)] * 3 + [(True, False, False, 1, 1)] * 5
    (declared,) = answer.SCORER.score(_context(rows, STAND_IN))
    assert declared.sections == {"methods": {"generator_stand_in": True, "refusal_setting": "generator.threshold"}}
    assert declared.warnings == ()  # 3 of 8 refused (38%): said once for the sweep, not per cell
    model = Traits(stand_in=False, refusal_setting=None)
    (part,) = answer.SCORER.score(_context(rows, model))
    assert part.sections["methods"]["generator_stand_in"] is False
    (warning,) = part.warnings
    assert "refused 3 of the 8 answerable questions" in warning and "generator=llama_cpp" not in warning
    assert "check how the generator's prompt tells it to refuse" in warning  # a model: no knob, no "plug a model"
    (unknown,) = answer.SCORER.score(_context(rows))  # a run that declares nothing (a replayed app)
    assert unknown.sections == {} and len(unknown.warnings) == 1


@pytest.mark.parametrize("refused, handed, fires", [(1, 4, True), (0, 4, False), (1, 5, False), (3, 3, False),
                                                    (25, 100, True), (24, 100, False)])
def test_the_refusal_warning_fires_at_a_quarter_over_at_least_four(refused, handed, fires):
    text = answer.refusal_warning(refused, handed, "generator.threshold")
    assert (text is not None) == fires
    if fires:
        assert "lower generator.threshold" in text and "generator=xllamacpp" in text


def test_no_answer_measures_for_a_run_without_answers():
    # The scorer declares what it needs; the evaluation never runs it on a run without answers
    # (issue 51 item 5: scorers no longer check their inputs themselves).
    q = Question("q0", "?", True)
    empty = Ranking("q0", (), ())
    run = SystemRun(Dataset("d", "", "native", {}, (q,)), [], (QuestionRun(q, empty, empty),))
    assert answer.SCORER.requires == ("answers",)
    unmet = _unmet(answer.SCORER, run, Settings(ks=(5,), k=5))
    assert [u.fix for u in unmet] == [REQUIREMENTS["answers"].fix]


def test_the_extractive_generator_declares_itself_a_stand_in():
    from rag_bench.generation.extractive import ExtractiveGenerator

    # ... that cannot ask a clarifying question back (issue 42)
    assert checked_traits(ExtractiveGenerator()) == Traits(stand_in=True, refusal_setting="generator.threshold",
                                                           can_clarify=False)


class _Plugin:
    identity = {"name": "p"}
    cacheable = False

    def __init__(self, traits):
        self._traits = traits

    def generate(self, prompts):
        return []

    def traits(self):
        return self._traits


class _Silent:
    identity = {"name": "s"}
    cacheable = False

    def generate(self, prompts):
        return []


@pytest.mark.parametrize("bad", [{"stand_in": True}, Traits(stand_in="yes"), Traits(refusal_setting=""),
                                 Traits(refusal_setting=3), Traits(can_clarify="no")])
def test_a_plugins_traits_that_are_not_traits_are_a_config_error_with_the_fix(bad):
    with pytest.raises(ConfigError, match=r"_Plugin.traits\(\) returned .* fix: return rag_bench.generation.base.Traits"):
        checked_traits(_Plugin(bad))


def test_a_plugin_without_traits_is_a_model():
    assert checked_traits(_Silent()) == Traits(stand_in=False, refusal_setting=None)
    assert checked_traits(_Silent()).can_clarify  # a model is told by the prompt that it may ask
    assert checked_traits(_Plugin(Traits(stand_in=False))) == Traits()
