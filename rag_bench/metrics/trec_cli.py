"""``rag-bench score-run``: trec_eval-compatible scoring of a TREC run file.

Example::

    rag-bench score-run qrels.txt run.txt -m map -m P.5,10 -q
    rag-bench score-run qrels.txt run.txt -c -M 100 --json
"""

from __future__ import annotations

import argparse
import json
import sys

from rag_bench.errors import DataError
from rag_bench.metrics.trec import (
    DEFAULT_CUTOFFS,
    SUPPORTED_MEASURES,
    evaluate,
    format_trec,
    read_qrels,
    read_run,
)

__all__ = ["DEFAULT_MEASURES", "build_parser", "main"]

#: Measures scored when no ``-m`` is given.
DEFAULT_MEASURES: tuple[str, ...] = (
    "map",
    "recip_rank",
    "P.5,10",
    "recall.5,10",
    "success.1,5,10",
    "ndcg",
    "ndcg_cut.5,10",
    "num_ret",
    "num_rel",
    "num_rel_ret",
)

_COUNTS = frozenset({"num_ret", "num_rel", "num_rel_ret"})


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``rag-bench score-run`` (also used to build ``--help``)."""
    parser = argparse.ArgumentParser(
        prog="rag-bench score-run",
        description=(
            "Score a TREC run against TREC qrels exactly as trec_eval 10.0 does: documents "
            "ranked by score (descending, as 32-bit floats), ties by docno descending; the "
            "rank column is ignored. Topics scored are those in both files (all qrels topics "
            "with -c); averages are means over those topics, num_* counts are summed."
        ),
        epilog=(
            f"Measures: {', '.join(SUPPORTED_MEASURES)}. "
            "P, recall, ndcg_cut and success take cutoffs as in trec_eval: '-m P.5,10' gives "
            f"P_5 and P_10; bare P/recall/ndcg_cut use {','.join(map(str, DEFAULT_CUTOFFS))} "
            "and bare success uses 1,5,10. "
            f"Default: {' '.join(DEFAULT_MEASURES)}. "
            "ndcg and ndcg_cut use the judged levels as gains (-l does not change them). "
            "Exit status 2 on a malformed file or bad option."
        ),
    )
    parser.add_argument("qrels", metavar="QRELS", help="qrels file: 'qid iter docno level' lines")
    parser.add_argument("run", metavar="RUN", help="run file: 'qid Q0 docno rank score tag' lines")
    parser.add_argument(
        "-m", "--measure", dest="measures", action="append", metavar="MEASURE",
        help="measure to compute, trec_eval syntax (repeatable), e.g. -m map -m ndcg_cut.10",
    )
    parser.add_argument("-q", "--per-query", action="store_true",
                        help="also print the value of every topic, not only 'all'")
    parser.add_argument("-c", "--complete", action="store_true",
                        help="average over every qrels topic; topics missing from the run score 0")
    parser.add_argument("-l", "--level", type=_positive_int, default=1, metavar="LEVEL",
                        help="minimum relevance level counted as relevant (default 1)")
    parser.add_argument("-M", "--max-docs", type=_positive_int, default=None, metavar="N",
                        help="evaluate only the top N documents of each topic")
    parser.add_argument("--json", action="store_true",
                        help='print {"all": {...}, "per_query": {...}} instead of trec_eval text')
    return parser


def _json_value(measure: str, value: float) -> float | int:
    return int(value) if measure in _COUNTS else value


def main(argv: list[str]) -> int:
    """Run ``rag-bench score-run`` with ``argv`` (the arguments after the subcommand).

    Returns the exit status: 0 on success, 2 when a file is malformed, a measure is unknown
    or no topic can be scored (the reason goes to stderr).
    """
    args = build_parser().parse_args(argv)
    try:
        qrels = read_qrels(args.qrels)
        run = read_run(args.run)
        per_query, summary = evaluate(
            qrels,
            run,
            measures=args.measures or DEFAULT_MEASURES,
            relevance_level=args.level,
            max_docs=args.max_docs,
            complete=args.complete,
        )
    except (DataError, ValueError) as exc:
        print(f"rag-bench score-run: {exc}", file=sys.stderr)
        return 2
    if args.json:
        doc: dict[str, object] = {"all": {m: _json_value(m, v) for m, v in summary.items()}}
        if args.per_query:
            doc["per_query"] = {
                qid: {m: _json_value(m, v) for m, v in values.items()}
                for qid, values in per_query.items()
            }
        print(json.dumps(doc, indent=2))
    else:
        sys.stdout.write(format_trec(per_query, summary, args.per_query))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
