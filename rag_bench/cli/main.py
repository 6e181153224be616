"""The ``rag-bench`` command line (docs/contract.md §9): the table of commands, one module each,
and the dispatch. A new command is one module with a ``COMMAND`` and its line in :data:`COMMANDS`;
the usage text is generated from the table.

Exit codes: 0 success, 1 a gate failed, 2 bad input or configuration (the message names the
file, line and field and says how to fix it).
"""

from __future__ import annotations

import os
import sys

from rag_bench.cli import (
    agree,
    cache,
    calibrate,
    chunks,
    compare,
    draft,
    embed,
    evaluate,
    export,
    gate,
    label,
    leaderboard,
    parse,
    report,
    rescore,
    review,
    run,
    score_answers,
    score_run,
    status,
    sync,
    traces,
    validate,
)
from rag_bench.cli.common import say
from rag_bench.cli.table import Command, usage

# In the order the usage text lists them.
COMMANDS: tuple[Command, ...] = tuple(m.COMMAND for m in (
    run, validate, chunks, parse, score_run, score_answers, compare, report, gate, embed, status, leaderboard, cache, sync,
    evaluate, rescore, export, calibrate, label, review, agree, draft, traces))
USAGE = usage(COMMANDS)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``rag-bench`` console script: the command's exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        say(USAGE)
        return 0 if argv else 2
    name, rest = argv[0], argv[1:]
    commands = {c.name: c for c in COMMANDS}
    if name not in commands:
        say(f"error: unknown command {name!r}\n\n{USAGE}", file=sys.stderr)
        return 2
    from rag_bench import switches
    from rag_bench.logs import quiet_libraries, setup_console

    switches.configure(switches.Switches.from_environment())  # the entry point reads the switches, once
    quiet_libraries()
    setup_console()
    try:
        return commands[name].run(rest)
    except BrokenPipeError:  # `rag-bench leaderboard ... | head`: the reader left, as in any Unix tool
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0


def entry() -> None:
    """The ``rag-bench`` console script: :func:`main`; after ``run``, :func:`rag_bench.fast.exit_now`."""
    fast = sys.argv[1:2] == ["run"]  # (read first: `run` hands Hydra an argv of its own)
    code = main()
    if fast:
        from rag_bench.fast import exit_now

        exit_now(code)
    sys.exit(code)
