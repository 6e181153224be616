"""A command of the ``rag-bench`` command line, and the usage text generated from the commands."""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass

SUMMARY_COLUMN = 35  # where the summaries start in the usage text
WIDTH = 110


@dataclass(frozen=True)
class Command:
    """``rag-bench NAME SYNOPSIS``: what it does in a line, and the function running it (its
    arguments in, the exit code out: 0 ok, 1 a gate failed, 2 bad input or configuration)."""

    name: str
    synopsis: str
    summary: str
    run: Callable[[list[str]], int]


def usage(commands: Sequence[Command]) -> str:
    """The usage text: every command with its synopsis and summary, in the table's order.

    >>> print(usage([Command("validate", "DATASET", "check a dataset", lambda a: 0)]))  # doctest: +NORMALIZE_WHITESPACE
    rag-bench COMMAND ...
    <BLANKLINE>
    commands:
      validate DATASET                 check a dataset
    <BLANKLINE>
    exit codes: 0 ok, 1 gate failed, 2 bad input or configuration
    """
    lines = ["rag-bench COMMAND ...", "", "commands:"]
    pad = " " * SUMMARY_COLUMN
    for c in commands:
        head = f"  {c.name} {c.synopsis}"
        body = textwrap.wrap(c.summary, WIDTH - SUMMARY_COLUMN)
        if len(head) < SUMMARY_COLUMN - 1:
            lines.append(head.ljust(SUMMARY_COLUMN) + body[0])
        else:
            lines += [head, pad + body[0]]
        lines += [pad + more for more in body[1:]]
    return "\n".join([*lines, "", "exit codes: 0 ok, 1 gate failed, 2 bad input or configuration"])
