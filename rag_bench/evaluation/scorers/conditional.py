"""Answers when retrieval hit vs missed (metrics.json ``conditional``): how often the answer was
right when a relevant passage was in the top k and when none was, with denominators -- and the
warning when answers are all wrong although the evidence reached the context (a matching rule that
does not suit the answers, or a generator that ignores its context)."""

from __future__ import annotations

import numpy as np

from rag_bench.evaluation.run import SystemRun
from rag_bench.evaluation.scorer import Measure, Part, ScoringInput, Settings
from rag_bench.evaluation.scorers.generation import CORRECT


class Conditional:
    """The hit/miss table (no measure of its own)."""

    name = "conditional"
    requires: tuple[str, ...] = ("answers",)  # the evaluation runs it only on a run that has it

    def measures(self, run: SystemRun, settings: Settings) -> list[Measure]:
        """None: a table of counts of another scorer's measure."""
        return []

    def score(self, scoring: ScoringInput) -> list[Part]:
        """The table at ``pipeline.k`` (hit = a relevant passage in the top k), for cells that answered."""
        run, k = scoring.run, scoring.settings.k
        correct = np.asarray(scoring.column(CORRECT.column), np.float64)
        answerable = np.array([q.question.answerable for q in run.questions], bool)
        first = np.array([np.inf if g.first_relevant is None else g.first_relevant
                          for g in scoring.grades.questions], np.float64)
        keep = answerable & ~np.isnan(correct)
        table: dict[str, object] = {"k": k}
        for name, part in (("hit", keep & (first <= k)), ("miss", keep & ~(first <= k))):
            n = int(part.sum())
            c = int(correct[part].sum())
            table[name] = {"n": n, "correct": c, "rate": c / n if n else None}
        defined = ~np.isnan(correct)
        in_context = defined & (first <= k)
        warnings: tuple[str, ...] = ()
        if defined.any() and np.nansum(correct) == 0 and in_context.sum() >= defined.sum() / 2:
            warnings = (f"{CORRECT.key} is 0 although the evidence reached the context for {int(in_context.sum())} "
                        f"of {int(defined.sum())} questions -- check eval.answer_match (contains suits long answers; "
                        "em and f1 suit short ones) and the generator's output",)
        return [Part("conditional", sections={"conditional": table}, warnings=warnings)]


SCORER = Conditional()
