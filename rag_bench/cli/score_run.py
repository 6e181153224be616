"""``rag-bench score-run``: trec_eval-compatible scoring of TREC files."""

from __future__ import annotations

from rag_bench.cli.table import Command


def run(argv: list[str]) -> int:
    """trec_eval's command line on a qrels and a run file (:mod:`rag_bench.metrics.trec_cli`)."""
    from rag_bench.metrics.trec_cli import main as score_main

    return score_main(argv)


COMMAND = Command("score-run", "QRELS RUN [-m ..]", "trec_eval-compatible scoring of TREC files", run)
