"""``judge=none``: no LLM judge; faithfulness stays the deterministic lexical proxy."""

from __future__ import annotations

from typing import Any


class NoJudge:
    """Marks cells without a judge."""

    identity: dict[str, Any] = {"judge": "none"}
    max_failure_rate = 1.0
