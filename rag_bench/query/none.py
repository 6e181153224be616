"""``query=none``: the question searched as it is (in a conversation, the last user turn)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rag_bench.components import Null
from rag_bench.domain import Question
from rag_bench.query.base import Transformed, as_is


class NoQueryTransform(Null):
    """The default: no transform (the pipeline searches each question as it is)."""

    identity: dict[str, Any] = {"query": "none"}

    def transform(self, questions: Sequence[Question]) -> list[Transformed]:
        """Each question as it is."""
        return [as_is(q) for q in questions]
