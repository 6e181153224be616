"""Hostile plugin components for the stage-contract tests: each breaks its stage's contract in
the way its ``mode`` names (or, with ``mode=ok``, keeps it), as a user's buggy plugin would.

A ``script`` (JSON file) makes the retriever return exactly what a property test drew:
``{"<qid>": [[index, score], ...]}``; questions not in it get an empty ranking.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from rag_bench.chunking.base import make_chunks
from rag_bench.domain import Chunk, Document, Question, Ranking
from rag_bench.generation.base import Generation, GenerationInput
from rag_bench.judging.base import JudgeResult, JudgeSample
from rag_bench.retrieval.base import AccessFilter


class HostileChunker:
    """Paragraph chunks; ``mode`` breaks them."""

    def __init__(self, mode: str = "ok") -> None:
        self.mode = mode

    def chunk(self, documents: Sequence[Document]) -> Any:
        if self.mode == "raises":
            raise ValueError("a bug in the chunker")
        docs = {d.doc_id: d for d in documents}
        out: list[Any] = []
        for doc in documents:
            spans, start = [], 0
            for part in doc.text.split("\n\n"):
                spans.append((start, start + len(part)))
                start += len(part) + 2
            out.extend(make_chunks(doc, spans, prefix_headings=True))
        first = next(c for c in out if c.doc_id == "billing")
        staff = docs["security"].text
        if self.mode == "foreign_text":  # staff text under the public billing document's id and span
            out.append(Chunk("billing#leak", "billing", first.start, first.end, staff[: first.length]))
        elif self.mode == "smuggled_prefix":  # the body is right; the "heading prefix" is staff text
            out.append(Chunk("billing#leak", "billing", first.start, first.end, first.body, prefix=staff[:80] + "\n\n",
                             heading_path=first.heading_path))
        elif self.mode == "unknown_doc":
            out.append(Chunk("ghost#0", "ghost", 0, 5, "hello"))
        elif self.mode == "not_a_chunk":
            out.append({"chunk_id": "x", "doc_id": "billing", "start": 0, "end": 3, "body": "abc"})
        elif self.mode == "span_outside":
            out.append(Chunk("billing#far", "billing", first.start, len(docs["billing"].text) + 10, first.body))
        elif self.mode == "negative_start":
            out.append(Chunk("billing#neg", "billing", -3, first.end, first.body))
        elif self.mode == "duplicate_id":
            out.append(Chunk(first.chunk_id, "billing", first.start, first.end, first.body))
        elif self.mode == "orphan_child":
            out.append(Chunk("billing#child", "billing", first.start, first.end, first.body, parent_id="security#p0"))
        elif self.mode == "not_a_list":
            return iter(out)
        return out


class HostileRetriever:
    """Token-overlap retriever that ignores the access filter it is given; ``mode`` breaks its rankings."""

    def __init__(self, mode: str = "ok", script: str | None = None) -> None:
        self.mode, self.script = mode, script
        self._plan = json.loads(open(script).read()) if script else None

    def fit(self, chunks: Sequence[Chunk]) -> None:
        if self.mode == "fit_raises":
            raise IndexError("a bug in fit")
        self.chunks = list(chunks)
        self.words = [set(c.text.lower().split()) for c in chunks]

    def search(self, questions: Sequence[Question], depth: int, access: AccessFilter) -> Any:
        out: list[Any] = []
        for q in questions:
            if self._plan is not None:
                pairs = self._plan.get(q.qid, [])
                out.append(Ranking(q.qid, tuple(i for i, _ in pairs), tuple(s for _, s in pairs)))
                continue
            words = set(q.question.lower().split())
            scores = np.array([len(words & w) for w in self.words], np.float64)
            if self.mode == "ok":  # honest: the filter applied before the top is taken
                mask = access.mask(q.asker)
                if mask is not None:
                    scores = np.where(mask, scores, -np.inf)
            order = [int(i) for i in np.lexsort((np.arange(scores.size), -scores)) if np.isfinite(scores[i])][:depth]
            ids, vals = order, [float(scores[i]) for i in order]
            if self.mode == "duplicates":
                ids = [ids[0]] * 2 + ids[1:-1]
            elif self.mode == "negative_index":
                ids = [-1] + ids[1:]
            elif self.mode == "out_of_range":
                ids = [len(self.chunks) + 3] + ids[1:]
            elif self.mode == "nan_score":
                vals = [math.nan] + vals[1:]
            elif self.mode == "increasing":
                vals = sorted(vals)
                vals[-1] += 1
            elif self.mode == "too_deep":
                ids = [i % len(self.chunks) for i in range(depth + 1)]  # more than asked (repeats when n <= depth)
                vals = [float(-i) for i in range(depth + 1)]
            elif self.mode == "float_index":
                ids = [float(i) for i in ids]
            elif self.mode == "wrong_qid":
                out.append(Ranking("someone-else", tuple(ids), tuple(vals)))
                continue
            elif self.mode == "not_a_ranking":
                out.append({"qid": q.qid, "indices": ids, "scores": vals})
                continue
            elif self.mode == "nothing":
                continue
            elif self.mode == "raises":
                raise KeyError("a bug in the plugin")
            elif self.mode == "bool_index":
                ids = [True] + ids[1:]
            out.append(Ranking(q.qid, tuple(ids), tuple(vals)))
        return out


class HostileReranker:
    """Reverses the shortlist; ``mode`` breaks its scores."""

    def __init__(self, mode: str = "ok", depth: int = 5) -> None:
        self.mode, self.depth = mode, depth

    def scores(self, questions: Sequence[Question], shortlists: Sequence[Sequence[Chunk]]) -> Any:
        out: list[Any] = []
        if self.mode == "raises":
            raise ZeroDivisionError("a bug in the reranker")
        for s in shortlists:
            v = np.arange(len(s), dtype=np.float64)
            if self.mode == "nan_score":
                v[0] = np.nan
            elif self.mode == "short":
                v = v[:-1]
            elif self.mode == "matrix":
                v = np.ones((len(s), 2))
            elif self.mode == "words":
                v = ["high"] * len(s)
            out.append(v)
        return [] if self.mode == "nothing" else out


class HostileGenerator:
    """Answers with the first passage; ``mode`` breaks what it returns."""

    cacheable = True

    def __init__(self, mode: str = "ok", tag: str = "same") -> None:
        self.mode = mode
        self.identity = {"generator": "hostile", "tag": tag}  # the same identity for every mode

    def generate(self, items: Sequence[GenerationInput]) -> Any:
        if self.mode == "raises":
            raise TypeError("a bug in the generator")
        out: list[Any] = []
        for it in items:
            text = it.passages[0].text[:40] if it.passages else ""
            raw = json.dumps({"answer": f"{self.mode}: {text}", "sources": [1] if it.passages else []})
            if self.mode == "strings":
                out.append(raw)
            elif self.mode == "raw_not_text":
                out.append(Generation(raw={"answer": text}))  # type: ignore[arg-type]
            elif self.mode == "negative_tokens":
                out.append(Generation(raw, tokens_in=-4))
            else:
                out.append(Generation(raw))
        return out[:-1] if self.mode == "one_short" else out


class HostileJudge:
    """Scores every answer 1.0; ``mode`` breaks the scores."""

    metrics = ("faithfulness",)
    max_failure_rate = 0.5

    def __init__(self, mode: str = "ok") -> None:
        self.mode = mode

    def judge(self, samples: Sequence[JudgeSample | None]) -> Any:
        if self.mode == "raises":
            raise AttributeError("a bug in the judge")
        value: Any = {"ok": 1.0, "out_of_range": 7.5, "text": "good"}.get(self.mode, 1.0)
        out = [JudgeResult({"faithfulness": value if s is not None else None}, calls=int(s is not None))
               for s in samples]
        return out[:-1] if self.mode == "one_short" else out


class HostileQuery:
    """A query transform of a team's own; ``mode`` breaks what it returns (``ok``: the question
    and its first word, two texts fused)."""

    def __init__(self, mode: str = "ok") -> None:
        self.mode = mode
        self.identity = {"query": "hostile", "mode": mode}

    def transform(self, questions: Sequence[Question]) -> Any:
        if self.mode == "nothing":
            return []
        if self.mode == "raises":
            raise RuntimeError("a bug in the transform")
        out: list[Any] = []
        for q in questions:
            if self.mode == "too_many":
                out.append([f"{q.question} {n}" for n in range(40)])
            elif self.mode == "not_strings":
                out.append([q.question, 42])
            elif self.mode == "empty":
                out.append([])
            elif self.mode == "blank":
                out.append(["   "])
            else:
                out.append([q.question, q.question.split()[0]])
        return out
