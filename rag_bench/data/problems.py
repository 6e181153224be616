"""Collects every problem in a dataset before failing, so a user fixes them all in one pass."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rag_bench.errors import DataError, Problem


class ProblemLog:
    """Accumulates :class:`Problem` records; :meth:`raise_if_any` turns them into one DataError."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.problems: list[Problem] = []

    def rel(self, path: Path) -> str:
        """Path as shown to the user: relative to the current folder when possible."""
        try:
            return str(path.resolve().relative_to(Path.cwd().resolve()))
        except ValueError:
            return str(path)

    def add(self, path: Path, line: int, field: str, message: str, hint: str = "") -> None:
        """Record one problem."""
        self.problems.append(Problem(self.rel(path), line, field, message, hint))

    def raise_if_any(self, what: str) -> None:
        """Raise a DataError listing every problem recorded so far."""
        if self.problems:
            raise DataError(self.problems, f"{what}: {len(self.problems)} problem(s)")


def read_jsonl(path: Path, log: ProblemLog) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, object)`` for each non-blank line; bad lines go to ``log``."""
    raw = path.read_bytes()
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    for lineno, line in enumerate(raw.split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            log.add(path, lineno, "", f"not valid UTF-8 (byte {exc.start} of the line)",
                    "save the file as UTF-8")
            continue
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            log.add(path, lineno, "", f"malformed JSON: {exc.msg} at column {exc.colno}",
                    "each line must be one complete JSON object")
            continue
        if not isinstance(obj, dict):
            log.add(path, lineno, "", f"expected a JSON object, got {type(obj).__name__}",
                    "each line must be one JSON object {...}")
            continue
        yield lineno, obj
