"""The drafter that asks a model: the same slots as the template drafter (the planner picks the
sentence, the answer and the type), but the question is written by a generator through the
project's clients (rag_bench.generation: llama.cpp in process, or any OpenAI-compatible endpoint),
with their retries, the generation cache (a re-run asks nothing twice), ``budget.*`` and prices.

The prompts are files (``prompts/<type>.txt`` and ``prompts/system.txt``, or a folder of your own
with ``drafter.prompts=DIR``), filled with ``{passage}``, ``{answer}``, ``{entity}`` ... (braces of
their own doubled); each holds worked examples, which the packaged 270M model needs: told the task
alone it answered instead of asking (3 of 3 tries), shown three examples it wrote questions (3 of
3). The model replies in the answer contract's JSON (its ``answer`` field holds the question), so
the clients' output constraint applies unchanged."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rag_bench.domain import Turn
from rag_bench.drafting.base import DraftingFailed, draft_id, which
from rag_bench.drafting.records import TYPES, Draft, Slot
from rag_bench.errors import ConfigError
from rag_bench.generation.prompt import Prompt

PROMPTS = Path(__file__).parent / "prompts"
_PRONOUN = re.compile(r"\b(they|it|them|their|its)\b", re.IGNORECASE)


class LlmDrafter:
    """Parameters
    ----------
    generator:
        The model (the ``generator`` group of ``rag-bench draft``: ``generator=xllamacpp`` or
        ``generator=openai``), injected.
    prompts:
        A folder with ``system.txt`` and one ``<type>.txt`` per type (None: the packaged prompts).
    batch:
        Slots per call of the generator: each batch's drafts are journaled before the next.
    """

    def __init__(self, generator: Any = None, prompts: str | None = None, batch: int = 8) -> None:
        if generator is None:
            raise ConfigError("drafter=llm needs a model -- fix: add generator=xllamacpp (the packaged model) or "
                              "generator=openai generator.base_url=URL generator.model=NAME")
        if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
            raise ConfigError(f"drafter.batch must be an integer >= 1, got {batch!r} -- fix: drafter.batch=8")
        folder = Path(prompts).expanduser() if prompts else PROMPTS
        self.templates: dict[str, str] = {}
        for name in ("system", *TYPES):
            path = folder / f"{name}.txt"
            if not path.is_file():
                raise ConfigError(f"drafter.prompts: {path} is missing -- fix: a folder with system.txt and "
                                  f"{', '.join(t + '.txt' for t in TYPES)} (copy {PROMPTS})")
            self.templates[name] = path.read_text(encoding="utf-8")
        self.generator, self.batch = generator, batch
        digest = hashlib.sha256(json.dumps(self.templates, sort_keys=True).encode()).hexdigest()[:12]
        self.identity: dict[str, Any] = {"drafter": "llm", "version": 1, "model": generator.identity,
                                         "prompts": digest}

    @property
    def model(self) -> str:
        """The model's name, as dataset.yaml records it."""
        return str(getattr(self.generator, "model", None) or self.generator.identity.get("generator", "?"))

    def prompt(self, slot: Slot) -> Prompt:
        """The prompt of one slot (its type's template filled)."""
        q = slot.quotes
        values = {"passage": q[0].text, "passage2": q[1].text if len(q) > 1 else "",
                  "answer": slot.answers[0] if slot.answers else "",
                  "answer2": slot.answers[1] if len(slot.answers) > 1 else "",
                  "entity": slot.entity or (slot.answers[0] if slot.answers else "the text's subject"),
                  "attribute_hint": f" (ask for its {slot.attribute})" if slot.attribute else "",
                  "history": " ".join(f"{t.role}: {t.content}" for t in _history(slot))}
        return Prompt(self.templates["system"], self.templates[slot.kind].format(**values).strip(), 0)

    def draft(self, slots: Sequence[Slot]) -> list[Draft]:
        """A draft per slot; a call that failed after the client's retries stops the run
        (:class:`DraftingFailed` with the drafts finished before it)."""
        from rag_bench.generation.answer import parse_answer
        from rag_bench.generation.base import GenerationInput, generate_cached

        done: list[Draft] = []
        for at in range(0, len(slots), self.batch):
            part = slots[at:at + self.batch]
            gens = generate_cached(self.generator, [GenerationInput("", (), self.prompt(s)) for s in part])
            for slot, g in zip(part, gens):
                if g.error is not None:
                    raise DraftingFailed(f"the model failed on slot {slot.slot_id} ({slot.kind}): {g.error}", done)
                parsed = parse_answer(g.raw, 0)
                question = "" if parsed.parse_error or parsed.refused else " ".join(parsed.text.split())
                done.append(self._made(slot, question))
        return done

    def _made(self, slot: Slot, question: str) -> Draft:
        did, how = draft_id(self.identity, slot), f"llm:{self.model}"
        if slot.kind == "unanswerable":
            return Draft(did, slot.kind, question, "", (), "llm", how, near=slot.quotes)
        if slot.kind == "multi_hop":
            return Draft(did, slot.kind, question, f"{slot.answers[0]}; {slot.answers[1]}", slot.quotes, "llm", how)
        if slot.kind == "clarify":
            return Draft(did, slot.kind, question, f"{slot.answers[0]} or {slot.answers[1]}", slot.quotes, "llm", how,
                         clarify_facts=tuple(which(q, slot.entity) for q in slot.quotes))
        if slot.kind == "follow_up":
            # the standalone form: the first pronoun read as the name (what a query rewrite should give)
            standalone = _PRONOUN.sub(slot.entity, question, count=1) if slot.entity else question
            return Draft(did, slot.kind, question, slot.answers[0], slot.quotes[:1], "llm", how,
                         history=_history(slot), standalone=standalone)
        return Draft(did, slot.kind, question, slot.answers[0], slot.quotes, "llm", how)


def _history(slot: Slot) -> tuple[Turn, ...]:
    """A follow-up's conversation so far: a question about its name, answered by the earlier sentence."""
    if slot.kind != "follow_up":
        return ()
    return (Turn("user", f"What does the text say about {slot.entity}?"), Turn("assistant", slot.quotes[1].text))
