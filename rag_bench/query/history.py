"""``query=history``: no model -- the question with the user turns before it, joined, so a
follow-up ("and for the second one?") is searched with what it follows."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rag_bench.domain import Question
from rag_bench.errors import ConfigError
from rag_bench.query.base import MAX_QUERY_CHARS, Transformed, as_is


class HistoryTransform:
    """Parameters
    ----------
    turns:
        User turns of the history searched with the question (the last ``turns``, oldest first).
    """

    def __init__(self, turns: int = 2) -> None:
        if isinstance(turns, bool) or not isinstance(turns, int) or turns < 1:
            raise ConfigError(f"query.turns must be an integer >= 1, got {turns!r} -- fix: query.turns=2")
        self.turns = turns
        self.identity: dict[str, Any] = {"query": "history", "turns": turns}

    def transform(self, questions: Sequence[Question]) -> list[Transformed]:
        """Per question: its last ``turns`` user turns and itself, one line each; the end kept
        when that is longer than a query may be."""
        out = []
        for q in questions:
            users = [t.content.strip() for t in q.history if t.role == "user" and t.content.strip()][-self.turns:]
            if not users:
                out.append(as_is(q))
                continue
            text = "\n".join([*users, q.question.strip()])
            text = text[-MAX_QUERY_CHARS:].strip()
            out.append(Transformed((text,), output=text))
        return out
