"""``rag-bench agree EXP_A EXP_B``: do two question sets (people's and a drafted one, two halves of
one) rank the same grid's configurations alike? Kendall's tau with its CI over questions, top-1,
the overlap of the not-significantly-worse sets and the axes' main effects (docs/agreement.md)."""

from __future__ import annotations

import argparse
import json

from rag_bench.cli.common import exit2_on_error, experiment_cells_of, say
from rag_bench.cli.table import Command

USAGE = "rag-bench agree EXP_A EXP_B [--by MEASURE] [--common] [--json]"


def run(argv: list[str]) -> int:
    """``rag-bench agree`` with the arguments ``argv``; its exit code."""
    p = argparse.ArgumentParser(
        prog="rag-bench agree", usage=USAGE, description="Two experiments that swept the same grid on two question "
        "sets over the same corpus (e.g. people's questions and a drafted set): Kendall's tau-b between their rankings "
        "of the cells, with a 95% bootstrap CI over questions (each set's questions resampled), whether they put the "
        "same cell first, the overlap of their not-significantly-worse sets, and per axis whether the main effects "
        "agree in sign and significance. Cells are matched by their config without the dataset.",
        epilog="example: rag-bench agree experiments/people experiments/drafted (docs/agreement.md)")
    p.add_argument("exp_a", metavar="EXP_A", help="experiment folder swept on the first question set (e.g. people's)")
    p.add_argument("exp_b", metavar="EXP_B", help="experiment folder swept on the second (e.g. drafted)")
    p.add_argument("--by", help="measure that ranks both (section/name, e.g. retrieval/ndcg@10; default: each "
                   "experiment's primary measure, as its leaderboard ranks it)")
    p.add_argument("--common", action="store_true", help="compare the cells both experiments have when their grids "
                   "differ (default: refuse)")
    p.add_argument("--resamples", type=int, default=1000, help="bootstrap draws of the questions (default 1000)")
    p.add_argument("--seed", type=int, default=0, help="seed of the bootstrap draws (default 0)")
    p.add_argument("--json", action="store_true", help="print JSON instead of the table")
    a = p.parse_args(argv)

    def body() -> int:
        from rag_bench.cells import check_folder
        from rag_bench.decision.agreement import of_experiments
        from rag_bench.reporting.agreement import format_agreement

        for ref in (a.exp_a, a.exp_b):
            check_folder(ref, "experiment", "agree")
        found = of_experiments(experiment_cells_of(a.exp_a), experiment_cells_of(a.exp_b), by=a.by, common=a.common,
                               where_a=a.exp_a, where_b=a.exp_b, resamples=a.resamples, seed=a.seed)
        if a.json:
            from rag_bench.cells import json_ready  # JSON has no NaN: an undefined tau or Jaccard is null

            say(json.dumps(json_ready({"a": a.exp_a, "b": a.exp_b, **found.as_dict()}), indent=2, default=str,
                           allow_nan=False))
        else:
            say(format_agreement(found, a.exp_a, a.exp_b))
        return 0

    return exit2_on_error(body)


COMMAND = Command("agree", "EXP_A EXP_B [--by MEASURE] [--json]",
                  "do two question sets rank the same grid alike? Kendall's tau (CI over questions), top-1, the "
                  "overlap of the not-significantly-worse sets, the axes' main effects", run)
