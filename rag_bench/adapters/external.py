"""Score what an external system already produced: ``rag-bench evaluate OUTPUTS --dataset DIR``.

OUTPUTS is a JSON-lines file, one line per question of the dataset::

    {"id": "q017",
     "retrieved": [{"doc_id": "billing", "start": 120, "end": 480, "score": 3.2},   # a span
                   {"doc_id": "billing", "text": "A full refund is available ..."},  # located in the doc
                   {"text": "Refunds are paid within 14 days."}],                     # located in the corpus
     "answer": "Within 14 days of a renewal [1].",      # optional: without it the cell is retrieval-only
     "citations": [1],                                  # optional: positions in "retrieved" (from 1) or doc ids
     "refused": false,                                  # optional: the system declined to answer
     "clarify": "",                                     # optional: the question it asked back instead
     "latency_ms": 840.0}                               # optional: end-to-end latency of the question

Each passage becomes a span of its document: given (a ``text`` given beside a span must be that
span's text, whitespace aside), or found by its text. A text is searched in tiers, each exactly
and then with whitespace runs matched loosely before the next: the document the passage names,
then the documents the asker may read (current before archived, corpus order), then the others.
So a copy of a readable text in a forbidden document never turns it into an unauthorized
retrieval, while a forbidden document's text is found where it really is -- under whatever
``doc_id`` it claims -- and counted in ``security.unauthorized_retrievals``. Texts found outside
the document they name are counted (``counts.passages_not_in_claimed_doc``). A passage that
cannot be located stays in the ranking as an irrelevant placeholder, so later ranks keep their
positions, and is counted (``counts.unlocated_passages``). A passage the asker may not read is
counted as the retriever's unauthorized retrieval and withheld (:func:`withhold_unreadable`): an
irrelevant placeholder at its rank, so its text reaches no file, context, trace or page -- as
our own pipelines drop such chunks before anything is written. Citations are positions in
``retrieved`` counted from 1 (an integer in ``1..len(retrieved)``) or document ids; anything
else -- 0, a negative, ``true``, ``1.0``, a position past the list, a document with no passage
in the context -- is an invalid citation (``generation.invalid_citations``). The ranking
is the file's order; scores are taken when given and non-increasing, else ``1/rank``. The
context handed to the generator is rebuilt from the top ``pipeline.k`` passages exactly as for
our own pipelines, so citations, faithfulness and answer measures mean the same thing. What
cannot be known from outputs alone is not reported: the ``chunking`` failure label (it needs the
whole corpus's chunks), ANN figures, embedding cost.

``--trec RUN`` scores a TREC run instead: document ids (each document as one passage) or chunk
ids of the configured chunker, read and ranked as ``score-run`` and trec_eval read and rank them
(:func:`read_trec_run`).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rag_bench.data.problems import ProblemLog, did_you_mean, id_index, read_jsonl
from rag_bench.domain import Chunk, Dataset, Document, Question, Ranking
from rag_bench.errors import Problem
from rag_bench.evaluation.run import JudgeRun, QuestionRun, SystemRun
from rag_bench.generation.base import Generation, GenerationInput, Traits
from rag_bench.generation.prompt import REFUSAL
from rag_bench.judging.base import Judge
from rag_bench.metrics import trec
from rag_bench.pipeline import stages
from rag_bench.retrieval.base import strictly_decreasing

UNLOCATED = "<unlocated>"  # the placeholder document of passages that could not be located
WITHHELD = "<withheld>"  # the placeholder document of passages the asker may not read
_FIELDS = {"id", "retrieved", "answer", "citations", "refused", "clarify", "latency_ms"}
_PASSAGE_FIELDS = {"doc_id", "start", "end", "text", "score"}
MAX_PASSAGES = 10_000  # per question


@dataclass(frozen=True)
class SystemOutput:
    """One question's outputs, passages located."""

    qid: str
    passages: tuple[tuple[str, int, int], ...]  # (doc_id, start, end); UNLOCATED spans are (UNLOCATED, i, i)
    scores: tuple[float, ...] | None
    answer: str | None
    citations: tuple[int | float | str, ...]  # as given: positions from 1 or doc ids; anything else is invalid
    refused: bool
    latency_ms: float | None
    clarify: str | None = None  # the question the system asked back (None or blank: it did not ask)


@dataclass(frozen=True)
class Outputs:
    """Every question's outputs and what could not be located."""

    records: dict[str, SystemOutput]
    unlocated: int
    located_by_text: int
    has_answers: bool
    not_in_claimed_doc: int = 0  # texts found outside the document their passage names


def _finite(value: Any) -> bool:
    """A JSON number that is a finite float (a 400-digit integer is not)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


def _locate(text: str, tiers: Sequence[Sequence[Document]]) -> tuple[str, int, int] | None:
    """The first occurrence of ``text`` in the first tier that holds it: exactly, else with
    whitespace runs matched loosely, before the next tier is searched (so a loose match in a
    document the asker may read beats an exact one in a document they may not)."""
    words = text.split()
    loose = re.compile(r"\s+".join(re.escape(w) for w in words)) if words else None
    for tier in tiers:
        for doc in tier:
            i = doc.text.find(text)
            if i >= 0:
                return doc.doc_id, i, i + len(text)
        if loose is not None:
            for doc in tier:
                m = loose.search(doc.text)
                if m:
                    return doc.doc_id, m.start(), m.end()
    return None


def read_outputs(path: Path, dataset: Dataset) -> Outputs:
    """Read and check OUTPUTS against ``dataset``: every problem is reported at once (file:line,
    field, hint); every question of the dataset must have exactly one line."""
    log = ProblemLog(path.parent)
    return _parse(path, read_jsonl(path, log), dataset, log)


def read_ragas(path: Path, dataset: Dataset) -> Outputs:
    """A ragas ``EvaluationDataset`` saved as JSON lines (``to_jsonl``: ``user_input``,
    ``retrieved_contexts``, ``response``, ``reference``) as OUTPUTS: each sample is matched to the
    dataset's question by its text, its contexts are located in the corpus, its response is the
    answer (ragas records no citations). References come from the dataset."""
    log = ProblemLog(path.parent)
    by_text: dict[str, list[str]] = {}
    for q in dataset.questions:
        by_text.setdefault(" ".join(q.question.split()), []).append(q.qid)

    def lines() -> Iterator[tuple[int, dict[str, Any]]]:
        for lineno, obj in read_jsonl(path, log):
            text = obj.get("user_input")
            ids = by_text.get(" ".join(text.split())) if isinstance(text, str) else None
            if not ids or len(ids) > 1:
                log.add(path, lineno, "user_input", f"{str(text)[:80]!r} is " + (
                    "the text of several questions" if ids else "not the text of a question of the dataset"),
                        "export the samples from the same dataset (rag-bench export CELL --format ragas)")
                continue
            contexts = obj.get("retrieved_contexts") or []
            out: dict[str, Any] = {"id": ids[0], "retrieved": [{"text": c} for c in contexts]
                                   if isinstance(contexts, list) and all(isinstance(c, str) for c in contexts)
                                   else contexts}
            if obj.get("response") is not None:
                out["answer"] = obj["response"]
            yield lineno, out

    return _parse(path, lines(), dataset, log)


class _PassageReader:
    """Checks the passages of OUTPUTS lines against the corpus, places those given by text alone,
    and counts how the placing went.

    The same text may be in several documents (a public and a staff copy, two versions), and a
    system may name a document that does not hold it: it is placed in the named document, else in
    one the asker may read, else in another (see _locate) -- so a copy elsewhere never turns a
    passage the asker may read into an unauthorized retrieval, and a forbidden text is found where
    it is, whatever document it claims."""

    def __init__(self, path: Path, dataset: Dataset, log: ProblemLog) -> None:
        self.path, self.dataset, self.log = path, dataset, log
        self.doc_index = id_index(dataset.documents)
        self.docs = list(dataset.documents.values())
        self.questions = {q.qid: q for q in dataset.questions}
        # asker key -> (the documents they may read, the others), each current before archived
        self.order: dict[Any, tuple[list[Document], list[Document]]] = {}
        self.located: dict[tuple[str | None, str, Any], tuple[str, int, int] | None] = {}
        self.unlocated = self.by_text = self.elsewhere = 0

    def read(self, lineno: int, qid: str, i: int, p: Any,
             spans: list[tuple[str, int, int]], scores: list[float]) -> bool:
        """Check passage ``i`` of question ``qid``'s line, appending its span and score; False when
        it is malformed (a valid score is kept even then: the line's all-or-none check counts it)."""
        path, log, documents = self.path, self.log, self.dataset.documents
        field = f"retrieved[{i}]"
        if not isinstance(p, dict):
            log.add(path, lineno, field, "must be an object", '{"doc_id": .., "start": .., "end": ..} or {"text": ..}')
            return False
        ok = True
        for key in sorted(p.keys() - _PASSAGE_FIELDS):
            log.add(path, lineno, f"{field}.{key}", f"unknown field {key!r}",
                    f"allowed: {', '.join(sorted(_PASSAGE_FIELDS))}")
            ok = False
        score = p.get("score")
        if score is not None:
            if not _finite(score):
                log.add(path, lineno, f"{field}.score", f"must be a finite number, got {str(score)[:40]}",
                        "or omit it")
                return False
            scores.append(float(score))
        doc_id, start, end, text = p.get("doc_id"), p.get("start"), p.get("end"), p.get("text")
        if doc_id is not None and (not isinstance(doc_id, str) or doc_id not in documents):
            log.add(path, lineno, f"{field}.doc_id", f"unknown document {doc_id!r}"
                    + did_you_mean(doc_id, documents, self.doc_index), "use the ids of the dataset's documents")
            return False
        if doc_id is not None and (start is not None or end is not None):
            span = self._span(lineno, field, doc_id, start, end, text)
            if span is None:
                return False
            spans.append(span)
        elif isinstance(text, str) and text.strip():
            spans.append(self._place(qid, i, doc_id, text))
        else:
            log.add(path, lineno, field, "a passage needs doc_id with start/end, or text",
                    '{"doc_id": "..", "start": 0, "end": 120} or {"text": ".."}')
            return False
        return ok

    def _span(self, lineno: int, field: str, doc_id: str, start: Any, end: Any,
              text: Any) -> tuple[str, int, int] | None:
        """The span ``[start, end)`` of ``doc_id``; None (reported) unless it lies inside the document
        and a ``text`` beside it is that span's text."""
        doc_text = self.dataset.documents[doc_id].text
        size = len(doc_text)
        if not (isinstance(start, int) and isinstance(end, int) and not isinstance(start, bool)
                and not isinstance(end, bool) and 0 <= start < end <= size):
            self.log.add(self.path, lineno, f"{field}.start/end", f"span [{start!r}, {end!r}) is not inside "
                         f"document {doc_id!r} (length {size})", "give character offsets 0 <= start < end <= length")
            return None
        if text is not None and (not isinstance(text, str) or text.split() != doc_text[start:end].split()):
            # Trust neither: the system may have shown the text while naming another span.
            self.log.add(self.path, lineno, f"{field}.text", f"is not the text of document {doc_id!r} at "
                         f"[{start}, {end})", "give the span or the text alone, or the span's own text")
            return None
        return doc_id, start, end

    def _place(self, qid: str, i: int, doc_id: str | None, text: str) -> tuple[str, int, int]:
        """Where passage ``i``'s text is (see the class), or an UNLOCATED placeholder; counted."""
        asker = self.questions[qid].asker
        akey = None if asker is None else asker.key
        if akey not in self.order:  # corpus order within each class (sorted is stable)
            ranked = sorted(self.docs, key=lambda d: d.archived)
            self.order[akey] = ([d for d in ranked if d.readable_by(asker)],
                                [d for d in ranked if not d.readable_by(asker)])
        where = (doc_id, text, akey)
        if where not in self.located:  # the same passage recurs across questions: search once per asker
            readable, forbidden = self.order[akey]
            self.located[where] = _locate(text, [
                [self.dataset.documents[doc_id]] if doc_id is not None else [],
                [d for d in readable if d.doc_id != doc_id], [d for d in forbidden if d.doc_id != doc_id]])
        found = self.located[where]
        if found is None:
            self.unlocated += 1
            return UNLOCATED, i, i
        self.by_text += 1
        self.elsewhere += doc_id is not None and found[0] != doc_id
        return found


def _answer_fields_ok(path: Path, lineno: int, obj: dict[str, Any], log: ProblemLog) -> bool:
    """Check a line's answer, citations, refused and latency_ms, reporting each malformed one."""
    answer, citations, refused, latency = obj.get("answer"), obj.get("citations", []), obj.get("refused", False), \
        obj.get("latency_ms")
    ok = True
    if answer is not None and not isinstance(answer, str):
        log.add(path, lineno, "answer", "must be a string", "or omit it for a retrieval-only system")
        ok = False
    # Numbers that are no position (0, -1, true, 1.5) are invalid citations, counted by the
    # replay -- never read as Python indexes; only other JSON values are a malformed line.
    if not isinstance(citations, list) or not all(isinstance(c, (str, int, float)) for c in citations):
        log.add(path, lineno, "citations", "must be a list of passage numbers (from 1) or document ids",
                "e.g. [1, 3]")
        ok = False
    if not isinstance(refused, bool):
        log.add(path, lineno, "refused", "must be true or false", "or omit it")
        ok = False
    clarify = obj.get("clarify")
    if clarify is not None and not isinstance(clarify, str):
        log.add(path, lineno, "clarify", "must be a string: the question the system asked back",
                'e.g. "clarify": "Was the appliance delivered or collected?", or omit it')
        ok = False
    elif isinstance(clarify, str) and clarify.strip() and refused is True:
        log.add(path, lineno, "clarify", '"refused": true and a "clarify" question on one line',
                "an answer either refuses or asks back: keep one")
        ok = False
    if latency is not None and (not _finite(latency) or latency < 0):
        log.add(path, lineno, "latency_ms", "must be a finite number >= 0", "or omit it")
        ok = False
    return ok


def _question_id(path: Path, lineno: int, obj: dict[str, Any], known: set[str], index: Any,
                 records: dict[str, SystemOutput], log: ProblemLog) -> str | None:
    """The line's question id after reporting unknown fields; None (reported) when it is unknown or repeated."""
    for key in sorted(obj.keys() - _FIELDS):
        log.add(path, lineno, key, f"unknown field {key!r}", f"allowed: {', '.join(sorted(_FIELDS))}")
    qid = obj.get("id")
    if not isinstance(qid, str) or qid not in known:
        log.add(path, lineno, "id", f"unknown question {qid!r}" + did_you_mean(qid, known, index),
                "use the ids of the dataset's questions")
        return None
    if qid in records:
        log.add(path, lineno, "id", f"second line for question {qid!r}", "keep one line per question")
        return None
    return qid


def _parse(path: Path, lines: Iterable[tuple[int, dict[str, Any]]], dataset: Dataset, log: ProblemLog) -> Outputs:
    known = {q.qid for q in dataset.questions}
    index = id_index(known)
    passages = _PassageReader(path, dataset, log)
    records: dict[str, SystemOutput] = {}
    answers = 0
    for lineno, obj in lines:
        qid = _question_id(path, lineno, obj, known, index, records, log)
        if qid is None:
            continue
        raw = obj.get("retrieved", [])
        if not isinstance(raw, list) or len(raw) > MAX_PASSAGES:
            log.add(path, lineno, "retrieved", f"must be a list of at most {MAX_PASSAGES} passages",
                    'e.g. [{"doc_id": "..", "start": 0, "end": 120}]')
            continue
        spans: list[tuple[str, int, int]] = []
        scores: list[float] = []
        bad = False
        for i, p in enumerate(raw):
            bad |= not passages.read(lineno, qid, i, p, spans, scores)
        if scores and len(scores) != len(raw):
            log.add(path, lineno, "retrieved", "some passages have a score and some do not", "give all or none")
            bad = True
        bad |= not _answer_fields_ok(path, lineno, obj, log)
        if bad:
            continue
        answer, refused, latency = obj.get("answer"), obj.get("refused", False), obj.get("latency_ms")
        clarify = obj.get("clarify")
        answers += answer is not None or refused or clarify is not None
        records[qid] = SystemOutput(qid, tuple(spans), tuple(scores) if scores else None, answer,
                                    tuple(obj.get("citations", [])), refused,
                                    float(latency) if latency is not None else None, clarify)
    missing = [q.qid for q in dataset.questions if q.qid not in records]
    if missing and not log.problems:
        log.add(path, 0, "id", f"{len(missing)} question(s) of the dataset have no line, e.g. {missing[:3]}",
                "add a line per question (an empty \"retrieved\" list for a question the system skipped)")
    if 0 < answers < len(records) and not log.problems:
        log.add(path, 0, "answer", f"{answers} of {len(records)} lines have an answer",
                "give every question an answer (or \"refused\": true, or a \"clarify\" question), or none for a "
                "retrieval-only system")
    log.raise_if_any(f"{path}")
    return Outputs(records, passages.unlocated, passages.by_text, answers > 0, passages.elsewhere)


def read_trec_run(path: Path, dataset: Dataset, chunks: Sequence[Chunk]) -> Outputs:
    """A TREC run (``qid Q0 docno rank score tag``) over document ids or the chunk ids of ``chunks``.

    Lines are read and ranked as ``score-run`` and trec_eval read and rank them (one reader,
    :func:`rag_bench.metrics.trec.run_lines`: ``1_0`` is 1, as C's ``atof`` says; order: score
    descending as C ``float``, ties by docno descending), so the cell's measures are the ones
    ``score-run`` gives for the same run and qrels. Scores must also be finite as C ``float``.
    """
    log = ProblemLog(path.parent)
    by_chunk = {c.chunk_id: (c.doc_id, c.start, c.end) for c in chunks}
    known = {q.qid for q in dataset.questions}
    rows: dict[str, list[tuple[float, str, tuple[str, int, int]]]] = {}
    problems: list[Problem] = []
    for lineno, qid, docno, score in trec.run_lines(path, problems):
        if qid not in known:
            log.add(path, lineno, "qid", f"unknown question {qid!r}" + did_you_mean(qid, known), "use the dataset's ids")
            continue
        with np.errstate(over="ignore"):
            held = float(np.float32(score))  # trec_eval holds scores as C float
        if not math.isfinite(held):
            log.add(path, lineno, "score", f"not a finite number: {score!r} (as trec_eval holds it, a C float)",
                    "write a decimal score within +-3.4e38")
            continue
        if docno in dataset.documents:
            span = (docno, 0, len(dataset.documents[docno].text))
        elif docno in by_chunk:
            span = by_chunk[docno]
        else:
            log.add(path, lineno, "docno", f"{docno!r} is neither a document id nor a chunk id of the configured "
                    "chunker", "use document ids, or pass the chunker= that produced the chunk ids")
            continue
        if any(r[2] == span for r in rows.get(qid, [])):
            log.add(path, lineno, "docno", f"{docno!r} appears twice for query {qid!r}", "keep one line per "
                    "(query, docno), as trec_eval requires")
            continue
        rows.setdefault(qid, []).append((held, docno, span))
    for p in problems:
        log.add(path, p.line, p.field, p.message, p.hint)
    log.problems.sort(key=lambda p: p.line)
    log.raise_if_any(f"{path}")
    records = {}
    for q in dataset.questions:
        got = rows.get(q.qid, [])
        ranked = [got[i] for i in trec.trec_order([r[0] for r in got], [r[1] for r in got])]
        records[q.qid] = SystemOutput(q.qid, tuple(r[2] for r in ranked), tuple(r[0] for r in ranked), None, (),
                                      False, None)
    return Outputs(records, 0, 0, False)


def export_outputs(records: Any) -> list[dict[str, Any]]:
    """A cell's records.parquet as OUTPUTS lines (spans, scores, answer, citations): ``evaluate``
    on them reproduces the cell's measures (see the module docstring for what it cannot know)."""
    out = []
    for row in records.to_dict("records"):
        line: dict[str, Any] = {"id": row["qid"], "retrieved": [
            {"doc_id": str(s["doc_id"]), "start": int(s["start"]), "end": int(s["end"]), "score": float(sc)}
            for s, sc in zip(row["chunk_spans"], row["scores"])]}
        if "answer" in row:
            # Citations count the retrieved list from 1: the cell's context passage n is the chunk
            # context_ids[n - 1], at its position among the ranked chunk ids.
            position = {cid: i + 1 for i, cid in reversed(list(enumerate(row["chunk_ids"])))}
            if isinstance(row.get("clarification"), str):
                line["clarify"] = row["clarification"]
            line.update(answer=row["answer"] or "", refused=bool(row["refused"]),
                        citations=[position[row["context_ids"][int(c) - 1]] for c in row["citations"]
                                   if 1 <= int(c) <= len(row["context_ids"]) and row["context_ids"][int(c) - 1] in position])
        out.append(line)
    return out


def export_squad(records: Any) -> tuple[dict[str, str], dict[str, list[str]]]:
    """A cell's answers as SQuAD 2.0 predictions, ``{question id: answer text}`` with ``""`` for a
    refusal -- the file ``rag-bench score-answers`` and SQuAD's official evaluation script read --
    each the text the cell's ``squad_exact``/``squad_f1`` scored (citation markers stripped:
    :func:`rag_bench.metrics.generation.squad_prediction`). Also the ids of the questions the cell
    scored otherwise: ``broke_contract`` (an output that broke the answer contract: the cell scores
    it 0, a SQuAD scorer its text) and ``failed`` (a failed generator call: kept out of the cell's
    figures, written ``""``). ValueError when the cell generated no answers."""
    from rag_bench.metrics.generation import squad_prediction

    if "answer" not in records:
        raise ValueError("the cell generated no answers (a retrieval-only cell)")
    out: dict[str, str] = {}
    other: dict[str, list[str]] = {"broke_contract": [], "failed": []}
    for row in records.to_dict("records"):
        qid = str(row["qid"])
        if row.get("generation_error"):
            other["failed"].append(qid)
            out[qid] = ""
            continue
        if row.get("parse_error"):
            other["broke_contract"].append(qid)
        out[qid] = squad_prediction(str(row["answer"] or ""), bool(row["refused"]))
    return out, other


def export_ragas(records: Any, dataset: Dataset | None) -> list[dict[str, Any]]:
    """A cell's records as ragas ``EvaluationDataset`` samples: ``user_input`` (the question),
    ``retrieved_contexts`` (the passages handed to the generator), ``response`` (the answer) and
    ``reference`` (the question's first reference answer, else its facts joined; omitted when
    there is neither)."""
    questions = {q.qid: q for q in dataset.questions} if dataset is not None else {}
    out = []
    for row in records.to_dict("records"):
        sample: dict[str, Any] = {"user_input": row["question"],
                                  "retrieved_contexts": [str(t) for t in row.get("context_texts", [])]}
        if "answer" in row:
            sample["response"] = row["answer"] or ""
        q = questions.get(row["qid"])
        if q is not None and q.reference is not None:
            sample["reference"] = q.reference
        out.append(sample)
    return out


class ReplayGenerator:
    """Hands back the system's own answers, in question order, as our JSON answer contract."""

    cacheable = False

    def __init__(self, outputs: Sequence[SystemOutput]) -> None:
        self.outputs = list(outputs)
        self.identity: dict[str, Any] = {"generator": "replay"}

    def traits(self) -> Traits:
        """The application's own answers: a real system, not a stand-in for one."""
        return Traits()

    def generate(self, items: Sequence[GenerationInput]) -> list[Generation]:
        """One generation per item (the items are the questions, in order)."""
        out = []
        for item, o in zip(items, self.outputs, strict=True):
            numbers: list[int] = []
            # A citation naming no context passage becomes a number past the context (one per
            # distinct citation), which the answer contract counts as invalid.
            past: dict[tuple[str, Any], int] = {}
            beyond = len(item.passages) + len(o.passages)
            for c in o.citations:
                if isinstance(c, str):  # a document id: every context passage from that document
                    held = [p.number for p in item.passages if p.doc_id == c]
                elif type(c) is int and 1 <= c <= len(o.passages):
                    # The system's n-th retrieved passage -> the rebuilt context passage holding it
                    # (dedupe and the token budget renumber the context); outside it: invalid.
                    d, s0, e0 = o.passages[c - 1]
                    held = [p.number for p in item.passages if p.doc_id == d and p.start <= s0 and e0 <= p.end][:1]
                else:  # 0, a negative, true, 1.0, past the list: no passage (never a Python index)
                    held = []
                numbers.extend(held or [past.setdefault((type(c).__name__, c), beyond + len(past) + 1)])
            text = REFUSAL if o.refused else (o.answer or "")
            reply: dict[str, Any] = {"answer": text, "sources": numbers}
            if o.clarify is not None:
                reply["clarify"] = o.clarify
            raw = json.dumps(reply)
            out.append(Generation(raw, seconds=(o.latency_ms or 0.0) / 1000, attempts=0))
        return out


def withhold_unreadable(ranked: Sequence[tuple[str, int, int]], question: Question,
                        documents: Mapping[str, Document]) -> tuple[list[tuple[str, int, int]], int]:
    """``ranked`` with every passage of a document ``question``'s asker may not read replaced by a
    :data:`WITHHELD` placeholder at its rank, and how many were replaced.

    The one place an external system's unreadable passages are taken out: they are counted as
    the retriever's unauthorized retrievals (as our own pipelines count the chunks a retriever
    returned that the asker may not read), while their text reaches nothing the cell writes --
    the context, records.parquet, failures.csv, traces, MLflow, the label page, the report.
    Later passages keep their ranks (a forbidden passage never moves a readable one up)."""
    out, withheld = [], 0
    for i, (doc_id, start, end) in enumerate(ranked):
        if doc_id in documents and not documents[doc_id].readable_by(question.asker):
            withheld += 1
            doc_id, start, end = WITHHELD, -1 - i, -1 - i
        out.append((doc_id, start, end))
    return out, withheld


def _deduplicated(passages: Sequence[tuple[str, int, int]]) -> tuple[list[tuple[str, int, int]], int]:
    """One ranking's passages with a repeated span replaced by an :data:`UNLOCATED` placeholder at its
    rank (the same span twice in one ranking counts once), and how many were repeats."""
    seen: set[tuple[str, int, int]] = set()
    kept, duplicates = [], 0
    for i, s in enumerate(passages):
        if s in seen:
            duplicates += 1
            s = (UNLOCATED, -1 - i, -1 - i)
        seen.add(s)
        kept.append(s)
    return kept, duplicates


def _passages(spans: Mapping[tuple[str, int, int], int], documents: Mapping[str, Document]) \
        -> tuple[dict[str, Document], list[Chunk]]:
    """The corpus with an empty document per placeholder the rankings use, and one chunk per distinct
    span in order of first appearance (a placeholder's empty)."""
    documents = dict(documents)
    for placeholder_doc in (UNLOCATED, WITHHELD):
        if any(d == placeholder_doc for d, _, _ in spans):
            documents[placeholder_doc] = Document(placeholder_doc, "")
    chunks = [Chunk(f"{d}#{s}", d, 0, 0, "") if d in (UNLOCATED, WITHHELD) else
              Chunk(f"{d}@{s}-{e}", d, s, e, documents[d].text[s:e]) for d, s, e in spans]
    return documents, chunks


def _ranking(qid: str, ids: tuple[int, ...], given: Sequence[float] | None) -> Ranking:
    """A system's ranking of chunk ids: its own scores when they never increase, else 1/rank."""
    ok = given is not None and all(a >= b for a, b in zip(given, given[1:]))
    scores = list(given) if ok and given is not None else [1.0 / r for r in range(1, len(ids) + 1)]
    return Ranking(qid, ids, tuple(strictly_decreasing(np.asarray(scores, np.float64)).tolist()))


def _question_runs(questions: Sequence[Question], outputs: Outputs, rankings: Sequence[Ranking],
                   unauthorized: Mapping[str, int], answered: Any, judged: Any) -> tuple[QuestionRun, ...]:
    """Each question's run: its ranking (retrieved and final), latency, withheld passages and, when
    the system answered, its context, generation, answer and judgement."""
    return tuple(QuestionRun(
        q, rankings[n], rankings[n], retrieve_ms=outputs.records[q.qid].latency_ms or 0.0,
        dropped_by_retriever=unauthorized[q.qid],
        context=answered.items[n].passages if answered is not None else None,
        generation=answered.generations[n] if answered is not None else None,
        answer=answered.answers[n] if answered is not None else None,
        judge=judged[n] if judged is not None else None) for n, q in enumerate(questions))


def system_run(dataset: Dataset, outputs: Outputs, *, context: stages.ContextRule, judge: Judge | None = None,
               judge_name: str = "none") -> SystemRun:
    """The run of an external system's outputs: located passages instead of a retriever's, given
    answers instead of a generator's -- handed to the generator's context exactly as our pipelines
    do (``context``) and judged by ``judge`` (None or the null judge: not judged), so the
    evaluation scores it as any run. A passage the asker may not read is withheld
    (:func:`withhold_unreadable`) and counted as the retriever's unauthorized retrieval."""
    questions = list(dataset.questions)
    spans: dict[tuple[str, int, int], int] = {}
    duplicates = 0
    ranked: dict[str, list[tuple[str, int, int]]] = {}
    unauthorized: dict[str, int] = {}
    for q in questions:
        kept, repeats = _deduplicated(outputs.records[q.qid].passages)
        duplicates += repeats
        ranked[q.qid], unauthorized[q.qid] = withhold_unreadable(kept, q, dataset.documents)
        for s in ranked[q.qid]:
            spans.setdefault(s, len(spans))
    documents, chunks = _passages(spans, dataset.documents)
    rankings = [_ranking(q.qid, tuple(spans[s] for s in ranked[q.qid]), outputs.records[q.qid].scores)
                for q in questions]
    answered = judged = None
    if outputs.has_answers:
        answered = stages.answer(generator=ReplayGenerator([outputs.records[q.qid] for q in questions]),
                                 questions=questions, rankings=rankings, passages=chunks, context=context)
        if judge is not None:
            judged = stages.judge(judge=judge, questions=questions, answered=answered, history=context.history)
    counts = {"unlocated_passages": outputs.unlocated, "passages_located_by_text": outputs.located_by_text,
              "passages_not_in_claimed_doc": outputs.not_in_claimed_doc, "duplicate_passages": duplicates}
    placeholders = UNLOCATED in documents or WITHHELD in documents
    return SystemRun(
        dataset=dataset, passages=chunks, questions=_question_runs(questions, outputs, rankings, unauthorized,
                                                                   answered, judged),
        documents=documents if placeholders else None, chunks=len(chunks),
        depth=max((len(r.indices) for r in rankings), default=0), counts=counts,
        latency="system" if any(o.latency_ms is not None for o in outputs.records.values()) else "none",
        generate_s=answered.wall_s if answered is not None else None,
        judge=JudgeRun(judge_name, tuple(judge.metrics)) if judged is not None and judge is not None else None,
        attribute_chunking=False, min_relevant=1)


