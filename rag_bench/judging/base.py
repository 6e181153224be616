"""Judge protocol: an LLM (or any) judge scoring answered questions, with every failure recorded."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from rag_bench.domain import Turn


@dataclass(frozen=True)
class JudgeSample:
    """What the judge sees for one question."""

    question: str
    answer: str
    contexts: tuple[str, ...]
    reference: str | None = None  # Question.reference: the first reference answer, else the facts joined
    # The answer's valid citations (markers and its sources list): what a claim without a marker of
    # its own cites (rag_bench.metrics.support.claim_citations); () for a caller that does not say.
    citations: tuple[int, ...] = ()
    # A conversation question's earlier turns the generator was shown (its prompt's window), oldest first.
    history: tuple[Turn, ...] = ()

    @property
    def user_input(self) -> str:
        """What the judge reads as the question: the question alone, or after the conversation
        that precedes it (a follow-up such as "And the other one?" is judged by what it refers to).

        >>> JudgeSample("And Pro?", "", ()).user_input
        'And Pro?'
        >>> print(JudgeSample("And Pro?", "", (), history=(Turn("user", "Basic price?"), Turn("assistant", "$5."))).user_input)
        Conversation so far:
        user: Basic price?
        assistant: $5.
        <BLANKLINE>
        Question (the user's next turn): And Pro?
        """
        if not self.history:
            return self.question
        turns = "\n".join(f"{t.role}: {t.content}" for t in self.history)
        return f"Conversation so far:\n{turns}\n\nQuestion (the user's next turn): {self.question}"


@dataclass
class JudgeResult:
    """Per metric: the score (the mean of the samples that succeeded; None = not judged or every
    sample failed), each sample's value in sample order (``judge.samples`` independent calls; None
    = that call failed) and the failure reasons; and what judging this item cost (calls made now,
    not served by the cache, their tokens and seconds). ``claims``: per metric judged claim by
    claim (``claim_faithfulness``), each claim's text, span in the answer, cited passage numbers,
    the passages the judge read and its verdict per sample (1, 0, None = that call failed)."""

    scores: dict[str, float | None] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)
    calls: int = 0
    samples: dict[str, list[float | None]] = field(default_factory=dict)
    tokens_in: int = 0
    tokens_out: int = 0
    seconds: float = 0.0
    claims: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


class Judge(Protocol):
    """Scores answered questions; ``None`` samples (refusals, failed calls) are not judged.

    ``metrics`` names the scores it gives (each becomes ``judge/judge_<metric>``);
    ``max_failure_rate`` is the share of failed judgements above which the cell fails.
    """

    metrics: tuple[str, ...]
    max_failure_rate: float

    def judge(self, samples: Sequence[JudgeSample | None]) -> list[JudgeResult]:
        """One result per sample, same order."""
        ...
