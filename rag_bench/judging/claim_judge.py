"""The LLM judge per claim (``judge.metrics=[claim_faithfulness]``): one judge call per claim of the
answer, the answer's score the share of its claims the judge finds supported.

Claims are :func:`rag_bench.metrics.support.split_claims`'s (sentences, cut at citation markers and
at "and"/"but"/";" between two facts), without those that hold no informative word ("Yes!",
"Well, I think so."): the same claims the offline support judge checks, with the same citations
(:func:`rag_bench.metrics.support.claim_citations`: ``Rollo led the Normans [1].`` cites passage 1; a
clause without a marker takes the next one of its sentence; an answer without markers cites its
sources list).
What the judge reads for a claim: the passages it cites (1-based, in the order handed to the
generator) when it cites any that exist, else every passage of the context. The request asks for
``{"verdict": 0 | 1}`` (1: the claim can be directly inferred from the passages), with that schema
attached like the ragas metrics' output schemas.

This is ragas' faithfulness definition (supported statements / statements) on other statements:
ragas' ``Faithfulness`` asks the LLM to break the answer into statements, then judges them all in one
call against all contexts joined; here the statements are our splitter's (no LLM call, the same on
every run), each judged in its own call against its own cited passages. An answer with no claim is
not judged (nothing to judge, like a reference metric on a question without a reference); a sample
whose claim call fails fails as a whole (as a ragas metric fails when one of its calls does).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, Field

from rag_bench.metrics.support import FILLERS, Claim, claim_citations, content_words, split_claims

_CITE = re.compile(r"\[\d+(?:\s*,\s*\d+)*\]")  # a citation marker: "[2]", "[1, 3]"

INSTRUCTION = ("Your task is to judge the faithfulness of a statement based on the given passages. Return verdict "
               "1 if the statement can be directly inferred from the passages, or 0 if it can not (something in "
               "it is missing from the passages or contradicts them).")


class VerdictReply(BaseModel):
    """The judge's output for one claim (its schema goes with the request)."""

    verdict: Literal[0, 1] = Field(..., description="1 if the statement can be directly inferred from the passages, "
                                                    "else 0")


@dataclass(frozen=True)
class ClaimCall:
    """One claim to judge: the claim, the passages it cites (1-based; a marker that names no passage
    is no citation) and the passages shown to the judge (its own, else all)."""

    claim: Claim
    cited: tuple[int, ...]
    shown: tuple[int, ...]


def claim_calls(answer: str, n_passages: int, sources: Sequence[int] = ()) -> tuple[ClaimCall, ...]:
    """The calls the judge makes for ``answer`` over ``n_passages`` passages: one per claim with an
    informative word, showing its own cited passages or, without any, all. A claim's citations are
    the offline judge's (:func:`rag_bench.metrics.support.claim_citations`: the marker it is followed
    by, else the next marker of its sentence; an answer without markers cites its ``sources`` list
    for every claim), so both judges read the same passages for the same claim. ``sources``: the
    answer's valid citations; when not given, the markers that name a passage.

    >>> [(c.claim.text, c.cited, c.shown) for c in claim_calls("Yes! Rollo led the Normans [2]. Vikings came in 911.", 2)]
    [('Rollo led the Normans', (2,), (2,)), ('Vikings came in 911.', (), (1, 2))]
    >>> [c.cited for c in claim_calls("Rollo was a Viking chief from Scandinavia; he ruled Normandy from Rouen [1].", 2)]
    [(1,), (1,)]
    >>> [c.shown for c in claim_calls("Rollo led the Normans.", 3, sources=(2,))]
    [(2,)]
    """
    numbers = tuple(sources) or (tuple(range(1, n_passages + 1)) if _CITE.search(answer) else ())
    claims = split_claims(answer)
    out = []
    for claim, cited in zip(claims, claim_citations(answer, claims, numbers)):
        if not content_words(claim.text, FILLERS):
            continue
        own = tuple(n for n in cited if 1 <= n <= n_passages)
        out.append(ClaimCall(claim, own, own or tuple(range(1, n_passages + 1))))
    return tuple(out)


def prompt(claim: str, passages: Sequence[str]) -> str:
    """The request for one claim: the instruction, the output schema, the passages, the statement."""
    blocks = "\n\n".join(f"Passage {i}:\n{p.strip()}" for i, p in enumerate(passages, 1))
    return (f"{INSTRUCTION}\nAnswer with JSON only: {{\"verdict\": 0}} or {{\"verdict\": 1}}.\n\n"
            f"{blocks}\n\nStatement: {claim.strip()}\n")


async def judge_claim(llm: Any, claim: str, passages: Sequence[str]) -> float:
    """One judge call: 1.0 when the judge says the passages support ``claim``, else 0.0. ``llm`` is
    the ragas metrics' ``InstructorLLM`` (same client, seed, retries, schema handling)."""
    got = await llm.agenerate(prompt(claim, passages), VerdictReply)
    return float(got.verdict)
