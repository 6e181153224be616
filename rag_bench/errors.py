"""One exception hierarchy for everything a user can get wrong.

Every message says *what* is wrong, *where* (file:line and field when there is one) and *how to
fix it*. The command line turns any :class:`RagBenchError` into exit code 2.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rag_bench.redaction import redact


@dataclass(frozen=True)
class Problem:
    """One problem found in an input file or a configuration.

    ``line`` is 1-based; 0 means the problem concerns the whole file.
    """

    file: str
    line: int
    field: str
    message: str
    hint: str = ""

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        field = f" [{self.field}]" if self.field else ""
        hint = f" -- fix: {self.hint}" if self.hint else ""
        return f"{where}:{field} {self.message}{hint}"


class RagBenchError(Exception):
    """Base class: bad input or configuration; the CLI exits with code 2. The message never holds
    an API key (:func:`~rag_bench.redaction.redact`): it is printed, logged and stored."""

    exit_code = 2

    def __init__(self, *args: Any) -> None:
        super().__init__(*(redact(a) if isinstance(a, str) else a for a in args))


class DataError(RagBenchError):
    """A dataset (or a TREC file) is malformed. Carries every problem found, not just the first."""

    def __init__(self, problems: list[Problem] | Problem, summary: str | None = None) -> None:
        self.problems = [problems] if isinstance(problems, Problem) else list(problems)
        head = summary or f"{len(self.problems)} problem(s) found"
        super().__init__(head + ":\n" + "\n".join(f"  {p}" for p in self.problems))


class ConfigError(RagBenchError):
    """A configuration value is missing, has the wrong type or is out of range."""


class TrackingError(RagBenchError):
    """The experiment tracker (MLflow) cannot be reached or refused a write."""


class EndpointError(RagBenchError):
    """A generator or judge endpoint failed too often for the cell's numbers to be trusted."""


class OutputError(RagBenchError):
    """Results cannot be written (disk full, permissions); nothing partial is kept."""


class ComponentError(RagBenchError):
    """A component (built-in or plugin) returned output that breaks its stage's contract
    (:mod:`rag_bench.pipeline.contracts`); the cell is refused and nothing of it is written."""
