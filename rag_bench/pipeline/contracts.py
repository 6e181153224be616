"""Stage-boundary contracts: what the runner checks in every component's output before anything
downstream uses it (docs/contract.md §2: "the runner trusts no component").

A component is the user's code as often as ours, and will have bugs; the harness exists to catch
them, not to inherit them. Each check either returns the output in its canonical form or raises
:class:`~rag_bench.errors.ComponentError` naming the component, the document or question, and the
rule broken -- the command line turns that into exit 2, before any file of the cell is written.
The checks are pure; the stages (:mod:`rag_bench.pipeline.stages`) call the components and these
checks on what they return.

- **Chunks** (:func:`check_chunks`): real :class:`~rag_bench.domain.Chunk` records; unique ids;
  the document is in the corpus; ``0 <= start < end <= len(document)``; the body *is* the
  document's slice ``[start, end)``; the prefix is empty or the declared heading path of the
  document's own sections (``"A > B\\n\\n"``), never text from elsewhere; a child's parent exists
  and lies in the same document. Tenant, ACL, version and status are never taken from a chunk:
  access and freshness are always looked up on the document the chunk is a slice of.
- **Rankings** (:func:`check_ranking`): one :class:`~rag_bench.domain.Ranking` per question, for
  that question; indices integers in ``[0, n)`` (a negative index is refused, never wrapped), no
  duplicates, at most the requested depth; scores finite reals, one per index, non-increasing.
  Ties are made strict by :func:`~rag_bench.retrieval.base.strictly_decreasing` (the order given
  is kept), so run.trec stays what trec_eval reads back in the same order.
- **Access** (:func:`enforce_access`): after every retrieval and rerank stage the asker's access
  is applied again; chunks the asker may not read are dropped -- before the context, the
  generator, the records or any artifact sees their text -- and counted per stage.
- **Queries** (:func:`check_queries`): one :class:`~rag_bench.query.base.Transformed` (or a list of
  strings) per question; between 1 and ``MAX_QUERIES`` texts, each a non-empty string of at most
  ``MAX_QUERY_CHARS`` characters; a fallback reason a string or None; counts and seconds >= 0.
- **Reranker scores** (:func:`check_rerank_scores`): one finite real per shortlist item.
- **Embeddings** (:func:`check_embeddings`): a 2-d float array, one finite row per text.
- **Generations and judge scores** (:func:`check_generations`, :func:`check_judge_scores`): the
  record types, strings where text is expected, judge scores in [-1, 1] or missing.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from rag_bench.domain import Chunk, Document, Question, Ranking
from rag_bench.errors import ComponentError
from rag_bench.query.base import MAX_QUERIES, MAX_QUERY_CHARS, Transformed
from rag_bench.retrieval.base import AccessFilter, strictly_decreasing

# How many violations one error lists (a broken chunker breaks every chunk the same way).
_SHOWN = 5


def _fail(stage: str, component: str, problems: list[str], fix: str) -> ComponentError:
    more = f"\n  ... and {len(problems) - _SHOWN} more" if len(problems) > _SHOWN else ""
    lines = "\n".join(f"  {p}" for p in problems[:_SHOWN])
    return ComponentError(f"{stage} {component} broke the {stage} contract ({len(problems)} violation(s)); "
                          f"nothing was written:\n{lines}{more}\n  -- fix: {fix}")


def _is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


def _is_real(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def heading_prefix(path: Sequence[str]) -> str:
    """The one prefix a chunk may carry: its heading path, as the built-in chunkers write it."""
    return " > ".join(path) + "\n\n" if path else ""


def _chunk_id_problem(where: str, c: Chunk, seen: set[str]) -> list[str]:
    """A chunk's id: a non-empty string without whitespace, not seen before (then added to ``seen``)."""
    if not isinstance(c.chunk_id, str) or not c.chunk_id or any(ch.isspace() for ch in c.chunk_id):
        return [f"{where}: chunk_id must be a non-empty string without whitespace"]
    if c.chunk_id in seen:
        return [f"{where}: duplicate chunk_id"]
    seen.add(c.chunk_id)
    return []


def _chunk_span_problem(where: str, c: Chunk, doc: Document | None) -> str:
    """Why the chunk's span cannot be checked against its document ('' when it can)."""
    if doc is None:
        return f"{where}: document is not in the corpus"
    if not (_is_int(c.start) and _is_int(c.end)):
        return f"{where}: start/end must be integers, got {c.start!r}, {c.end!r}"
    if not 0 <= c.start < c.end <= len(doc.text):
        return (f"{where}: span [{c.start}, {c.end}) is not inside the document "
                f"(0 <= start < end <= {len(doc.text)})")
    return ""


def _chunk_heading_problem(where: str, c: Chunk, doc: Document, headings: dict[str, set[tuple[str, ...]]]) -> list[str]:
    """A chunk's heading path (a tuple of strings) and its prefix: empty, or that path as the
    built-in chunkers write it, the path of one of the document's sections."""
    path = c.heading_path
    if not isinstance(path, tuple) or not all(isinstance(h, str) for h in path):
        return [f"{where}: heading_path must be a tuple of strings"]
    if c.prefix == "":
        return []
    if doc.doc_id not in headings:
        headings[doc.doc_id] = {s.heading_path for s in doc.sections}
    if not isinstance(c.prefix, str) or not path or path not in headings[doc.doc_id] \
            or c.prefix != heading_prefix(path):
        return [f"{where}: prefix {str(c.prefix)[:60]!r} is not the heading path of one of the "
                "document's sections ('A > B' + blank line)"]
    return []


def _chunk_problems(n: int, c: Any, documents: Mapping[str, Document], seen: set[str], parents: dict[str, str],
                    headings: dict[str, set[tuple[str, ...]]]) -> list[str]:
    """What is wrong with chunk ``n`` (its id, its span, body and heading path, its parent)."""
    if not isinstance(c, Chunk):
        return [f"chunk {n}: is a {type(c).__name__}, not a rag_bench.domain.Chunk"]
    where = f"chunk {n} ({c.chunk_id!r} of document {c.doc_id!r})"
    problems = _chunk_id_problem(where, c, seen)
    doc = documents.get(c.doc_id) if isinstance(c.doc_id, str) else None
    span = _chunk_span_problem(where, c, doc)
    if span or doc is None:
        return [*problems, span]
    if not isinstance(c.body, str) or c.body != doc.text[c.start:c.end]:
        problems.append(f"{where}: body is not the document's text [{c.start}, {c.end})")
    problems += _chunk_heading_problem(where, c, doc, headings)
    if not isinstance(c.is_parent, bool):
        problems.append(f"{where}: is_parent must be a bool")
    if c.parent_id is not None and parents.get(c.parent_id) != c.doc_id:
        problems.append(f"{where}: parent_id {c.parent_id!r} is not a parent chunk of the same document")
    return problems


def check_chunks(chunks: Any, documents: Mapping[str, Document], *, component: str) -> list[Chunk]:
    """``chunks`` if every one is a slice of its corpus document (see the module docstring);
    otherwise a :class:`ComponentError` listing the first violations."""
    if isinstance(chunks, (str, bytes)) or not isinstance(chunks, Sequence):
        raise _fail("chunker", component, [f"returned {type(chunks).__name__}, not a list of Chunk"],
                    "chunk() must return a list of rag_bench.domain.Chunk")
    problems: list[str] = []
    seen: set[str] = set()
    parents: dict[str, str] = {c.chunk_id: c.doc_id for c in chunks
                               if isinstance(c, Chunk) and c.is_parent is True and isinstance(c.chunk_id, str)}
    headings: dict[str, set[tuple[str, ...]]] = {}
    for n, c in enumerate(chunks):
        problems += _chunk_problems(n, c, documents, seen, parents, headings)
    if problems:
        raise _fail("chunker", component, problems,
                    "a chunk is a slice of its document: body == document.text[start:end], prefix empty or its "
                    "heading path (rag_bench.chunking.base.make_chunks builds such chunks)")
    return list(chunks)


def check_ranking(out: Any, question: Question, *, n: int, depth: int, component: str, stage: str = "retriever") \
        -> Ranking:
    """The one ranking a retriever returned for ``question`` (``search([question], ...)``), in
    canonical form: python ints, strictly decreasing float32-exact scores in the given order."""
    fix = ("search() returns one Ranking per question, in order: unique chunk indices in [0, n), at most `depth` "
           "of them, finite scores that never increase")
    q = f"question {question.qid!r}"
    if isinstance(out, (str, bytes)) or not isinstance(out, Sequence) or len(out) != 1:
        got = f"{len(out)} items" if isinstance(out, Sequence) else type(out).__name__
        raise _fail(stage, component, [f"{q}: returned {got} for 1 question"], fix)
    r = out[0]
    if not isinstance(r, Ranking):
        raise _fail(stage, component, [f"{q}: returned a {type(r).__name__}, not a rag_bench.domain.Ranking"], fix)
    problems: list[str] = []
    if r.qid != question.qid:
        problems.append(f"{q}: the ranking is for question {r.qid!r}")
    try:
        indices, scores = list(r.indices), list(r.scores)
    except TypeError:
        raise _fail(stage, component, [f"{q}: indices and scores must be sequences"], fix) from None
    if len(indices) != len(scores):
        problems.append(f"{q}: {len(indices)} indices but {len(scores)} scores")
    if len(indices) > depth:
        problems.append(f"{q}: {len(indices)} results, more than the depth asked ({depth})")
    bad = [i for i in indices if not _is_int(i) or not 0 <= int(i) < n]
    if bad:
        problems.append(f"{q}: indices outside [0, {n}) or not integers: {bad[:5]!r} (a negative index is never "
                        "wrapped around)")
    elif len(set(int(i) for i in indices)) != len(indices):
        dup = sorted({int(i) for i in indices if indices.count(i) > 1})
        problems.append(f"{q}: duplicate chunk indices {dup[:5]!r}")
    if not all(_is_real(s) and math.isfinite(float(s)) for s in scores):
        problems.append(f"{q}: scores must be finite real numbers (NaN and infinities are refused)")
    elif any(float(b) > float(a) for a, b in zip(scores, scores[1:])):
        problems.append(f"{q}: scores increase along the ranking (they must never increase)")
    if problems:
        raise _fail(stage, component, problems, fix)
    values = np.asarray([float(s) for s in scores], np.float64)
    return Ranking(question.qid, tuple(int(i) for i in indices), tuple(strictly_decreasing(values).tolist()))


def _query_list_problem(where: str, queries: Sequence[Any]) -> list[str]:
    """The queries' count (1 to MAX_QUERIES) and each one a non-empty string of at most MAX_QUERY_CHARS."""
    problems = []
    if not 1 <= len(queries) <= MAX_QUERIES:
        problems.append(f"{where}: {len(queries)} queries (1 to {MAX_QUERIES} allowed)")
    bad = [type(x).__name__ for x in queries if not isinstance(x, str)]
    if bad:
        problems.append(f"{where}: queries that are not strings ({', '.join(bad[:3])})")
    elif any(not x.strip() for x in queries):
        problems.append(f"{where}: an empty query")
    elif any(len(x) > MAX_QUERY_CHARS for x in queries):
        problems.append(f"{where}: a query of {max(len(x) for x in queries)} characters (at most "
                        f"{MAX_QUERY_CHARS})")
    return problems


def _count(value: Any) -> bool:
    """An integer >= 0."""
    return _is_int(value) and value >= 0


def _transformed_problems(where: str, t: Transformed) -> list[str]:
    """What is wrong with one question's Transformed beyond its queries: its output and fallback, its
    counts and seconds."""
    problems = []
    if not isinstance(t.output, str) or not (t.fallback is None or isinstance(t.fallback, str)):
        problems.append(f"{where}: output must be a string and fallback a string or None")
    if not (_count(t.calls) and _count(t.tokens_in) and _count(t.tokens_out) and _is_real(t.seconds)
            and math.isfinite(float(t.seconds)) and t.seconds >= 0):
        problems.append(f"{where}: calls and token counts must be integers >= 0, seconds a finite real >= 0")
    return problems


def _transformed(t: Any) -> Any:
    """A query transform's answer for one question as a Transformed (a list or tuple of strings is
    taken as its ``queries``)."""
    return Transformed(tuple(t)) if isinstance(t, (list, tuple)) else t


def check_queries(out: Any, questions: Sequence[Question], *, component: str) -> list[Any]:
    """What a query transform returned for ``questions``: one
    :class:`~rag_bench.query.base.Transformed` per question (a list or tuple of strings is taken as
    its ``queries``), in canonical form."""
    fix = (f"transform() returns one rag_bench.query.base.Transformed (or a list of 1 to {MAX_QUERIES} non-empty "
           f"strings of at most {MAX_QUERY_CHARS} characters) per question, in order")
    if isinstance(out, (str, bytes)) or not isinstance(out, Sequence) or len(out) != len(questions):
        got = f"{len(out)} items" if isinstance(out, Sequence) and not isinstance(out, (str, bytes)) \
            else type(out).__name__
        raise _fail("query", component, [f"returned {got} for {len(questions)} questions"], fix)
    problems: list[str] = []
    checked = []
    for q, t in zip(questions, map(_transformed, out)):
        where = f"question {q.qid!r}"
        if not isinstance(t, Transformed):
            problems.append(f"{where}: returned a {type(t).__name__}, not a Transformed or a list of strings")
            continue
        queries = t.queries
        if isinstance(queries, (str, bytes)) or not isinstance(queries, Sequence):
            problems.append(f"{where}: queries is a {type(queries).__name__}, not a list of strings")
            continue
        problems += _query_list_problem(where, queries) + _transformed_problems(where, t)
        checked.append(Transformed(tuple(queries), t.output, t.fallback, int(t.calls), float(t.seconds),
                                   int(t.tokens_in), int(t.tokens_out), bool(t.cached)) if not problems else t)
    if problems:
        raise _fail("query", component, problems, fix)
    return checked


def check_rerank_scores(out: Any, question: Question, size: int, *, component: str) -> np.ndarray:
    """The one score array a reranker returned for ``question``'s shortlist of ``size`` chunks."""
    fix = "scores() returns one array per shortlist, one finite score per shortlist item"
    q = f"question {question.qid!r}"
    if isinstance(out, (str, bytes)) or not isinstance(out, Sequence) or len(out) != 1:
        got = f"{len(out)} items" if isinstance(out, Sequence) else type(out).__name__
        raise _fail("reranker", component, [f"{q}: returned {got} for 1 shortlist"], fix)
    try:
        values = np.asarray(out[0], dtype=np.float64).reshape(-1)
        shape_ok = np.ndim(out[0]) == 1
    except (TypeError, ValueError):
        raise _fail("reranker", component, [f"{q}: scores are not numbers"], fix) from None
    if not shape_ok or values.size != size:
        raise _fail("reranker", component, [f"{q}: {values.size} scores for a shortlist of {size}"], fix)
    if not np.isfinite(values).all():
        raise _fail("reranker", component, [f"{q}: scores must be finite (NaN and infinities are refused)"], fix)
    return values


def enforce_access(ranking: Ranking, question: Question, access: AccessFilter) -> tuple[Ranking, int]:
    """``ranking`` without the chunks ``question``'s asker may not read, and how many were dropped."""
    mask = access.mask(question.asker)
    if mask is None:
        return ranking, 0
    keep = [n for n, i in enumerate(ranking.indices) if mask[i]]
    dropped = len(ranking.indices) - len(keep)
    if not dropped:
        return ranking, 0
    return Ranking(ranking.qid, tuple(ranking.indices[n] for n in keep),
                   tuple(ranking.scores[n] for n in keep)), dropped


def check_embeddings(vectors: Any, count: int, *, component: str, dim: int | None = None) -> np.ndarray:
    """``count`` finite embedding rows (of ``dim`` columns when given) as a float32 matrix."""
    fix = "embed_documents()/embed_queries() return a (texts, dim) array of finite floats"
    if count == 0 and np.size(vectors) == 0:
        return np.zeros((0, dim or 0), np.float32)
    try:
        array = np.asarray(vectors, dtype=np.float32)
    except (TypeError, ValueError):
        raise _fail("embedder", component, [f"returned {type(vectors).__name__}, not an array of numbers"],
                    fix) from None
    if array.ndim != 2 or array.shape[0] != count or (dim is not None and array.shape[1] != dim):
        want = f"({count}, {dim})" if dim is not None else f"({count}, dim)"
        raise _fail("embedder", component, [f"returned shape {array.shape} for {count} texts, expected {want}"], fix)
    if not np.isfinite(array).all():
        rows = np.flatnonzero(~np.isfinite(array).all(axis=1))
        raise _fail("embedder", component, [f"rows {rows[:5].tolist()} hold NaN or infinite values"], fix)
    return array


def check_generations(out: Any, count: int, *, component: str) -> list[Any]:
    """``count`` generations, each a :class:`~rag_bench.generation.base.Generation` with text fields
    of the right type and non-negative token counts."""
    from rag_bench.generation.base import Generation

    fix = "generate() returns one rag_bench.generation.base.Generation per input, raw output as a string"
    if isinstance(out, (str, bytes)) or not isinstance(out, Sequence) or len(out) != count:
        got = f"{len(out)} items" if isinstance(out, Sequence) else type(out).__name__
        raise _fail("generator", component, [f"returned {got} for {count} inputs"], fix)
    problems = []
    for n, g in enumerate(out):
        if not isinstance(g, Generation):
            problems.append(f"item {n}: is a {type(g).__name__}, not a Generation")
        elif not isinstance(g.raw, str) or (g.error is not None and not isinstance(g.error, str)):
            problems.append(f"item {n}: raw must be a string and error a string or None")
        elif not all(_is_int(t) and t >= 0 for t in (g.tokens_in, g.tokens_out)):
            problems.append(f"item {n}: token counts must be integers >= 0")
    if problems:
        raise _fail("generator", component, problems, fix)
    return list(out)


def judge_shape_error(results: Any, count: int, *, component: str) -> ComponentError:
    """The error for a judge that did not return one JudgeResult per sample."""
    got = f"{len(results)} items" if isinstance(results, Sequence) else type(results).__name__
    return _fail("judge", component, [f"returned {got} for {count} samples (one JudgeResult each, in order)"],
                 "judge() returns a list with one rag_bench.judging.base.JudgeResult per sample")


def check_judge_scores(scores: Mapping[str, Any], *, component: str, item: int) -> None:
    """Judge scores of one item: each a real in [-1, 1], or None / NaN for "not judged". ragas'
    measures lie in [0, 1] except those built on a cosine similarity (response relevancy), which
    can fall below 0; anything outside [-1, 1], or not a number, is a broken judge."""
    if not isinstance(scores, Mapping):
        raise _fail("judge", component, [f"item {item}: scores is a {type(scores).__name__}, not a dict"],
                    "JudgeResult.scores maps each metric to a score")
    bad = {m: v for m, v in scores.items()
           if v is not None and not (_is_real(v) and (math.isnan(float(v)) or -1.0 <= float(v) <= 1.0))}
    if bad:
        raise _fail("judge", component, [f"item {item}: scores outside [-1, 1] or not numbers: {bad!r}"],
                    "a judge returns scores in [0, 1] (None or NaN when an item could not be judged)")
