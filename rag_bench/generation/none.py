"""``generator=none``: retrieval-only cells (no answers, no generation metrics)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rag_bench.components import Null
from rag_bench.generation.base import Generation, GenerationInput


class NoGenerator(Null):
    """The null generator: the pipeline skips the generation stage of a retrieval-only cell."""

    cacheable = False
    identity: dict[str, Any] = {"generator": "none"}

    def generate(self, items: Sequence[GenerationInput]) -> list[Generation]:
        """Generates nothing."""
        return []
