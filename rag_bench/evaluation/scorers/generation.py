"""Answer matching (metrics.json ``generation``): the answer against the question's facts and
reference answers (containment, SQuAD v2 EM/F1 and its HasAns/NoAns splits), its length, its
lexical support by the passages it cites and whether it kept the JSON answer contract.

A failed generator call (``answer.error``) is NaN in every measure: counted and reported, kept out
of every quality denominator. A question that expects a clarifying question (``expects: clarify``)
is NaN in the answer-matching and SQuAD measures: a direct answer is not what is right for it (the
``clarify`` section scores it), so it never enters the denominators of the answerable questions.
``correct`` is the measure ``eval.answer_match`` chooses
(:func:`~rag_bench.metrics.generation.correctness`), so it carries that setting.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rag_bench.evaluation.run import QuestionRun, SystemRun
from rag_bench.evaluation.scorer import Measure, Part, ScoringInput, Settings
from rag_bench.metrics.generation import AnswerMatch, correctness, faithfulness, match_answer, squad_v2

GENERATION = (
    Measure("correct", "generation",
            description="the answer is right by eval.answer_match (auto: facts present, else answer "
            "recall)", params=("eval.answer_match", "eval.f1_threshold")),
    Measure("answer_recall", "generation",
            description="a normalised reference occurs in the answer (long-form accuracy, "
            "STR-EM)"),
    Measure("exact_match", "generation",
            description="the answer equals a reference after SQuAD 2.0's normalisation (SQuAD EM, "
            "answerable questions: HasAns_exact)", short="em"),
    Measure("token_f1", "generation",
            description="best token-overlap F1 against the references, as SQuAD 2.0's script (SQuAD "
            "F1, answerable questions: HasAns_f1)", short="f1"),
    # SQuAD v2's combined figures, answerable and unanswerable questions together (an unanswerable
    # question's gold is the empty answer; a refusal is the empty answer), and its two splits under
    # the official script's names: what a published SQuAD 2.0 or NQ figure is compared with.
    Measure("squad_exact", "generation",
            description="SQuAD v2 exact match over all questions (the script's 'exact'; a refusal "
            "is the empty answer, the gold of an unanswerable question)", short="squad_em"),
    Measure("squad_f1", "generation", description="SQuAD v2 F1 over all questions (the script's 'f1')"),
    Measure("squad_hasans_exact", "generation",
            description="SQuAD v2 HasAns_exact: exact match on the answerable questions"),
    Measure("squad_hasans_f1", "generation", description="SQuAD v2 HasAns_f1: F1 on the answerable questions"),
    Measure("squad_noans_exact", "generation",
            description="SQuAD v2 NoAns_exact: unanswerable questions given the empty answer "
            "(a refusal)"),
    Measure("squad_noans_f1", "generation",
            description="SQuAD v2 NoAns_f1: as NoAns_exact (F1 against an empty gold is 0 or 1)"),
    Measure("facts_present", "generation", description="every fact of the question occurs in the answer"),
    Measure("answer_words", "generation",
            description="answer length in words (containment rewards long answers)", higher_is_better=None, short="words"),
    Measure("faithfulness", "generation", description="answer sentences supported by the passages they cite"),
    Measure("unparseable", "generation",
            description="outputs that broke the JSON answer contract", higher_is_better=False),
)
(CORRECT, ANSWER_RECALL, EXACT_MATCH, TOKEN_F1, SQUAD_EXACT, SQUAD_F1, SQUAD_HASANS_EXACT, SQUAD_HASANS_F1,
 SQUAD_NOANS_EXACT, SQUAD_NOANS_F1, FACTS_PRESENT, ANSWER_WORDS, FAITHFULNESS, UNPARSEABLE) = GENERATION
FAITHFULNESS_METHOD = "lexical_support_proxy"  # metrics.json methods: how faithfulness is judged


def answer_values(qr: QuestionRun, *, answer_match: str, f1_threshold: float) -> dict[str, float]:
    """One question's ``generation`` measures, by their columns, in the declared order."""
    q, a = qr.question, qr.answer
    assert a is not None
    ok = a.error is None
    nan = float("nan")
    match = match_answer(a, q.facts, q.answers) if ok and q.wants_answer else AnswerMatch(nan, nan, nan, nan, nan)
    # SQuAD v2 over all questions, and its HasAns/NoAns splits as their own columns (means over
    # the questions where each is defined, like every measure); SQuAD knows no clarify question.
    sq_em, sq_f1 = squad_v2(a, q.answers, answerable=q.answerable) if ok and q.outcome != "clarify" else (nan, nan)
    has = (sq_em, sq_f1) if q.answerable else (nan, nan)
    no = (nan, nan) if q.answerable else (sq_em, sq_f1)
    return {  # the declared order
        CORRECT.column: correctness(match, answer_match, f1_threshold=f1_threshold),
        ANSWER_RECALL.column: match.answer_recall, EXACT_MATCH.column: match.exact_match,
        TOKEN_F1.column: match.token_f1, SQUAD_EXACT.column: sq_em, SQUAD_F1.column: sq_f1,
        SQUAD_HASANS_EXACT.column: has[0], SQUAD_HASANS_F1.column: has[1], SQUAD_NOANS_EXACT.column: no[0],
        SQUAD_NOANS_F1.column: no[1], FACTS_PRESENT.column: match.facts_present, ANSWER_WORDS.column: match.words,
        FAITHFULNESS.column: faithfulness(a, qr.context or ()) if ok and not a.parse_error else np.nan,
        UNPARSEABLE.column: float(a.parse_error is not None) if ok else np.nan,
    }


def undefined_warning(m: Measure, values: Sequence[float], why: str = "") -> tuple[str, ...]:
    """The warning for a measure a cell computes on no question (every value NaN)."""
    return (f"{m.key} is computed on 0 questions{why}",) if np.isnan(np.asarray(values, np.float64)).all() else ()


class Generation:
    """The scorer of :data:`GENERATION` (cells whose system answered)."""

    name = "generation"
    requires: tuple[str, ...] = ("answers",)  # the evaluation runs it only on a run that has it

    def measures(self, run: SystemRun, settings: Settings) -> list[Measure]:
        """Every generation measure when the run answered; none for a retrieval-only run."""
        return list(GENERATION)

    def score(self, scoring: ScoringInput) -> list[Part]:
        """Per question, every generation measure; how faithfulness and the judge were judged."""
        run, s = scoring.run, scoring.settings
        columns: dict[str, list[float]] = {m.column: [] for m in GENERATION}
        for qr in run.questions:
            for name, v in answer_values(qr, answer_match=s.answer_match, f1_threshold=s.f1_threshold).items():
                columns[name].append(v)
        judge = run.judge.name if run.judge is not None else "none"
        return [Part("generation", columns, sections={"methods": {FAITHFULNESS.name: FAITHFULNESS_METHOD,
                                                                    "judge": judge}},
                     warnings=undefined_warning(CORRECT, columns[CORRECT.column],
                                                " (no question has facts or references)"))]


SCORER = Generation()
