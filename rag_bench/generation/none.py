"""``generator=none``: retrieval-only cells (no answers, no generation metrics)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rag_bench.generation.base import Generation, GenerationInput


class NoGenerator:
    """Marks a retrieval-only cell; the pipeline skips the generation stage."""

    cacheable = False
    identity: dict[str, Any] = {"generator": "none"}

    def generate(self, items: Sequence[GenerationInput]) -> list[Generation]:
        """Never called."""
        return []
