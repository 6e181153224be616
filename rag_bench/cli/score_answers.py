"""``rag-bench score-answers``: SQuAD 2.0's official answer scoring (EM/F1, HasAns/NoAns)."""

from __future__ import annotations

from rag_bench.cli.table import Command


def run(argv: list[str]) -> int:
    """``rag-bench score-answers`` with the arguments ``argv``; its exit code."""
    from rag_bench.metrics.squad import main as score_answers

    return score_answers(argv)


COMMAND = Command("score-answers", "GOLD PRED [--json]",
                  "SQuAD 2.0's official answer scoring (EM/F1, HasAns/NoAns)", run)
