"""``judge=none``: no LLM judge; faithfulness stays the deterministic lexical proxy."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rag_bench.components import Null
from rag_bench.judging.base import JudgeResult, JudgeSample


class NoJudge(Null):
    """The null judge: judges nothing, fails nothing."""

    identity: dict[str, Any] = {"judge": "none"}
    metrics: tuple[str, ...] = ()
    max_failure_rate = 1.0

    def judge(self, samples: Sequence[JudgeSample | None]) -> list[JudgeResult]:
        """An empty result per sample."""
        return [JudgeResult() for _ in samples]
