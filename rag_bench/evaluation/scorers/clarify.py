"""Answer, refuse -- or ask (metrics.json ``clarify``): questions whose right outcome is a question
back (``expects: clarify``: the answer depends on a fact about the asker the question does not
give; the facts are the question's ``clarify_facts``, when the dataset names them).

``clarify_rate`` is the share of answers that ask (the contract's ``clarify`` field), over every
question with an answer; ``correct_clarification`` the share of the questions expecting clarify
whose answer asked for every missing fact and answered nothing yet (:func:`clarified`): each
clarify fact's content words (stemmed, stopwords out: :func:`rag_bench.text.normalize.asks_for`)
all occur in a *question* of the clarification (a sentence ending in "?" or a request such as
"Please tell me ...": "I do not need the purchase date or the receipt. Fine?" mentions the facts
and asks for none), and the answer text
states nothing (:func:`replied`). A question expecting clarify without ``clarify_facts`` (public
multi-turn data marks underspecified turns and names no facts) is clarified by any answer that asks
(a question in its clarification) and asserts no unsupported claim: each claim its text states is
supported by the context (:func:`rag_bench.metrics.support.judge_claims`, whole context), so "There
are two plans, Basic and Pro [1]. Which one is yours?" is right when passage 1 says so.
``premature_answer`` the share of them answered directly -- a
reply that states something, whether or not a question follows it (issue 52: "Yes, within 14
days. Is it an annual plan?" counted as a correct clarification); neither refusing nor breaking
the answer contract, and not a correct clarification; lower is better. A refusal of such a question is wrong too: it is neither (0
in both), and so is an unparseable output. A failed call is NaN.
The section is reported when the dataset has a question expecting clarify or an answer asked.

When the dataset has such questions and the generator declares it cannot ask
(:attr:`rag_bench.generation.base.Traits.can_clarify`: the extractive stand-in), the cell says so:
its figures for them are zero by construction.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from rag_bench.domain import Answer
from rag_bench.evaluation.run import QuestionRun, SystemRun
from rag_bench.evaluation.scorer import Measure, Part, ScoringInput, Settings, figures
from rag_bench.generation.answer import is_refusal
from rag_bench.metrics.support import judge_claims
from rag_bench.text.normalize import asks_for

CLARIFY = (
    Measure("clarify_rate", "clarify", higher_is_better=None,
            description="answers that ask a clarifying question instead of answering or refusing, over all questions",
            short="clarify_rate"),
    Measure("correct_clarification", "clarify",
            description="questions expecting clarify whose answer asked for every missing fact (each clarify fact's "
            "stemmed content words in the clarifying question)", short="correct_clarify"),
    Measure("premature_answer", "clarify", higher_is_better=False,
            description="questions expecting clarify answered directly (neither asking nor refusing)",
            short="premature"),
)
CLARIFY_RATE, CORRECT_CLARIFICATION, PREMATURE_ANSWER = CLARIFY
COUNTS = figures("counts", [("expects_clarify", None, "questions expecting a clarifying question (expects: clarify)")])
EXPECTS_CLARIFY, = COUNTS


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_TRAILING_CITES = re.compile(r"(\s*\[\d+\])+\s*$")


def sentences(text: str) -> list[str]:
    """``text`` split after ``.``, ``!`` and ``?``, trailing citation markers (``[1]``) dropped.

    >>> sentences("Yes, within 14 days [1]. Is it an annual plan? [2]")
    ['Yes, within 14 days [1].', 'Is it an annual plan?']
    """
    return [s for s in (_TRAILING_CITES.sub("", p).strip() for p in _SENTENCE_END.split(text.strip())) if s]


# A request written as a statement asks too ("Please tell me your plan."); "I do not need ..." does not.
_REQUEST = re.compile(r"^(please|kindly|let me know|tell me|could you|can you|would you|i need|i would need|"
                      r"i'd need)\b", re.I)


def questions_of(text: str) -> str:
    """The sentences of ``text`` that ask -- end in "?" or make a request ("Please tell me ...",
    "I need ...") -- joined.

    >>> questions_of("I do not need the purchase date or the receipt. Fine?")
    'Fine?'
    >>> questions_of("Thanks. Please tell me your plan.")
    'Please tell me your plan.'
    """
    return " ".join(s for s in sentences(text) if s.endswith("?") or _REQUEST.match(s))


def asked_for_all(clarification: str | None, facts: tuple[str, ...]) -> bool:
    """Whether ``clarification`` (None: the answer did not ask) asks for every fact, in its
    questions (:func:`questions_of`: naming a fact in a statement is not asking for it).

    >>> asked_for_all("Did it need an overnight stay, and has the airline confirmed it?",
    ...               ("overnight stay", "airline confirmed"))
    True
    >>> asked_for_all("Did it need an overnight stay?", ("overnight stay", "airline confirmed"))
    False
    >>> asked_for_all("I do not need the purchase date or the receipt. Fine?", ("purchase date", "receipt"))
    False
    """
    asked = questions_of(clarification) if clarification is not None else ""
    return bool(asked) and bool(facts) and all(asks_for(asked, f) for f in facts)


def replied(answer: Answer) -> bool:
    """Whether the answer text states something: a sentence that is not a question (blank, the
    refusal sentence, or questions only: no).

    >>> replied(Answer("Yes, within 14 days [1].", clarification="Is it annual?")), replied(Answer(""))
    (True, False)
    """
    text = answer.text.strip()
    return bool(text) and not is_refusal(text) and any(not s.endswith("?") for s in sentences(text))


def clarified(answer: Answer, facts: tuple[str, ...], passages: Sequence[tuple[int, str]] = ()) -> bool:
    """The right outcome of a question expecting clarify. With ``facts``: the answer asked for every
    fact (:func:`asked_for_all`) and replied nothing yet (:func:`replied`). Without (the dataset
    names none): the answer asks (a question in its clarification, :func:`questions_of`) and every
    claim its text states is supported by ``passages`` (the context, (number, text)).

    >>> ask = Answer("There are two plans, Basic and Pro [1].", clarification="Which plan is yours?")
    >>> clarified(ask, (), [(1, "There are two plans, Basic and Pro.")]), clarified(ask, (), [(1, "Prices.")])
    (True, False)
    >>> clarified(Answer("", clarification="Which plan?"), ()), clarified(Answer("Basic."), ())
    (True, False)
    """
    if facts:
        return answer.asked and not replied(answer) and asked_for_all(answer.clarification, facts)
    if not answer.asked or not questions_of(answer.clarification or ""):
        return False
    return not replied(answer) or all(v.context_supported for v in judge_claims(answer.text, answer.citations,
                                                                                passages))


def clarified_run(qr: QuestionRun) -> bool:
    """:func:`clarified` for one question's answer, by its clarify facts and its context."""
    assert qr.answer is not None
    return clarified(qr.answer, qr.question.clarify_facts, [(p.number, p.text) for p in qr.context or ()])


def direct(answer: Answer) -> bool:
    """Whether ``answer`` answers directly: it states a reply (:func:`replied`; a question asked
    after it does not undo it), or neither asks nor refuses; never when it broke the contract (an
    unparseable output answered nothing; ``generation/unparseable`` counts it)."""
    return (answer.parse_error is None and not answer.refused
            and (not answer.asked or replied(answer)))


def cannot_ask_warning(n: int) -> str:
    """The warning of a cell whose generator cannot ask while ``n`` questions expect it to."""
    return (f"{n} question(s) expect a clarifying question (expects: clarify) and the generator cannot ask one "
            "(its traits: can_clarify=False): they count as wrong in answer/correct_all and "
            "clarify/correct_clarification by construction -- fix: plug a model that can ask "
            "(generator=xllamacpp or generator=openai), or read those measures without them")


class Clarify:
    """The scorer of :data:`CLARIFY` (cells whose system answered, on a dataset that asks for it)."""

    name = "clarify"
    requires: tuple[str, ...] = ()  # what every run has: its rankings and questions

    def measures(self, run: SystemRun, settings: Settings) -> list[Measure]:
        """The clarify measures and count when the run answered and a question expects clarify
        or an answer asked; none otherwise."""
        return [*CLARIFY, *COUNTS] if reported(run) else []

    def score(self, scoring: ScoringInput) -> list[Part]:
        """Per question: whether the answer asked, and for questions expecting clarify whether it
        asked for every fact and whether it answered prematurely; the warning when the generator
        cannot ask."""
        run = scoring.run
        if not reported(run):
            return []
        columns: dict[str, list[float]] = {m.column: [] for m in CLARIFY}
        n = 0
        for qr in run.questions:
            q, a = qr.question, qr.answer
            assert a is not None
            ok = a.error is None
            expected = q.outcome == "clarify"
            n += expected
            columns[CLARIFY_RATE.column].append(float(a.asked) if ok else np.nan)
            right = ok and expected and clarified_run(qr)
            columns[CORRECT_CLARIFICATION.column].append(float(right) if ok and expected else np.nan)
            columns[PREMATURE_ANSWER.column].append(
                float(direct(a) and not right) if ok and expected else np.nan)
        traits = run.generator
        findings = (cannot_ask_warning(n),) if n and traits is not None and not traits.can_clarify else ()
        return [Part("clarify", columns, values={EXPECTS_CLARIFY.key: n}, findings=findings)]


def reported(run: SystemRun) -> bool:
    """Whether a run has the clarify section: it answered, and a question expects clarify or an
    answer asked."""
    return run.answered and (any(q.outcome == "clarify" for q in run.dataset.questions)
                             or any(qr.answer is not None and qr.answer.asked for qr in run.questions))


SCORER = Clarify()
