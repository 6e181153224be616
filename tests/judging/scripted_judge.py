"""A scripted judge served over HTTP: a test double for our statistics, not a feature.

An OpenAI-compatible ``/v1/chat/completions`` that answers ragas' faithfulness prompts: one
statement per answer, then a verdict for it. Item ``q`` (the question text ``item <q>``) has a
true verdict; the endpoint reports it flipped with probability ``flip``, drawn from
``numpy.random.default_rng([run, q, seed])`` where ``seed`` is the request's (the judge sends
``judge.seed + sample index``). So sample ``s`` of item ``q`` is :func:`verdict` ``(run, q, s)``:
a simulation can draw the same verdicts without a server, and a test can check the judge's
plumbing (samples, seeds, cache) delivers exactly those.
"""

from __future__ import annotations

import json
import re
import zlib
from typing import Any

import numpy as np

from tests.servers import JsonEndpoint


def verdict(run: int, item: int, sample: int, *, truth: bool, flip: float) -> int:
    """The endpoint's verdict on ``item`` for ``sample`` of simulation ``run``."""
    flipped = np.random.default_rng([run, item, sample]).random() < flip
    return int(truth != flipped)


def _completion(content: dict[str, Any]) -> bytes:
    return json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": "scripted",
                       "choices": [{"index": 0, "finish_reason": "stop",
                                    "message": {"role": "assistant", "content": json.dumps(content)}}],
                       "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}}).encode()


class ScriptedJudge(JsonEndpoint):
    """Server attributes: ``run`` (int), ``truth`` ({item: bool}; an item not in it is true),
    ``flip`` (probability)."""

    def answer(self, body: Any) -> tuple[int, bytes]:
        text = json.dumps(body["messages"])
        found = re.search(r"item (\d+)", text)
        # Any other question (a real dataset's) is an item named by its prompt's checksum, true verdict 1.
        item = int(found.group(1)) if found else zlib.crc32(text.encode()) % 10**6
        schema = (body.get("response_format") or {}).get("schema") or {}
        if schema.get("title") == "StatementGeneratorOutput":
            return 200, _completion({"statements": [f"statement of item {item}"]})
        server: Any = self.server
        v = verdict(server.run, item, int(body.get("seed", 0)), truth=server.truth.get(item, True), flip=server.flip)
        return 200, _completion({"statements": [{"statement": f"statement of item {item}", "reason": "scripted",
                                                 "verdict": v}]})
