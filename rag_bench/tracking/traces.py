"""Per-question MLflow traces of a cell (``tracking.traces``): one trace per question, linked to
the cell's run, so MLflow 3's trace and evaluation pages open a question and show what each stage
did with it.

A trace is built from what the cell already recorded (its ``records.parquet``: the rankings, the
context, the answer, the scores and the per-question latencies); no stage runs again. Each trace
has a root span ``question`` (the question in, the answer out) and one child span per stage the
cell ran:

========== ============ =================================================== ==========================
span       type         inputs -> outputs                                   duration
========== ============ =================================================== ==========================
query      LLM / CHAIN  question (and history) -> the texts searched,       ``query_ms``
                        what the transform wrote, its fallback (``query=``
                        other than none; LLM when it called a model)
retrieve   RETRIEVER    question -> ranked chunk ids (``retrieved_ids``)    ``retrieve_ms``
rerank     RERANKER     retrieved ids -> final ranking (``chunk_ids``)      ``rerank_ms``
context    PARSER       final ranking -> the passages handed to the model   0 (not timed)
generate   LLM          question and passages -> answer, raw output, tokens ``generate_s``
judge      EVALUATOR    answer -> correct, faithfulness, citation, judge_*  the cell's judge seconds
                                                                            shared out (not per question)
========== ============ =================================================== ==========================

A generation that failed (the call, or the answer contract: ``generation_error``,
``parse_error``) and a judge call that failed (``judge_failures``) give their span the status
ERROR with the recorded reason, as does the root span (and the trace's state) of a question with
such a span; every other span is OK.

The durations are the recorded ones; the start times are not (the pipeline runs a stage for all
questions at once): the questions are laid end to end, each stage after the previous one, ending
when the trace is logged. The root span says so (``rag_bench.timing``).

Each trace carries assessments (MLflow feedback, source CODE, the judge's LLM_JUDGE): ``correct``
(for an unanswerable question: whether it refused),
``faithfulness`` and ``citation`` (citation precision; the rationale gives recall and invalid
citations), and ``judge_<metric>`` for each metric an LLM judge scored. A score the cell left
undefined (NaN: e.g. faithfulness of a refusal) is not logged.

Cost: one ``start_trace`` per question carrying its metadata (the source run), tags and assessments
together (MLflow has no batch call for these), then the spans of :data:`TRACES_PER_CHUNK` traces in one
``log_spans`` batch: a cell of N questions costs about N + N/100 store calls. ``benchmarks/traces.py``
measures it; the per-question ``start_trace`` (one committed transaction each on SQLite, ~11 ms on
an idle two-core machine) is most of it, so every question of the 180-cell squad2-normans grid
(37,440 traces) costs ~7 minutes of store time however it is scheduled. A sweep therefore writes a
sample of each cell's questions (:func:`sample`: the same questions in every cell, so a question's
traces line up across cells) and ``rag-bench traces CELL`` writes the rest on demand
(:func:`missing`: which questions still lack a complete trace). Through a server
(``is_local=False``) the ``start_trace`` calls go :data:`SERVER_CALLS` at a time; into a local store
each reads the experiment once per cell, not once per trace (:func:`_experiment_read_once`: 13.7 ->
10.5 ms of CPU a trace, squad2-normans traces, 210 per run).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import secrets
import time
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from rag_bench.evaluation import measures
from rag_bench.evaluation.scorers import query as query_scorer
from rag_bench.faults import failpoint

# Trace tags: which cell and question a trace belongs to (searchable in MLflow's trace view).
CELL_TAG = "rag_bench.cell_id"
QID_TAG = "rag_bench.qid"
TRACE_NAME = "question"
SPANS_PER_CALL = 1000
TRACES_PER_CHUNK = 100  # traces written (infos, then their spans) before the next ones: a kill leaves at most these incomplete
SERVER_CALLS = 4  # start_trace calls in flight to a server (benchmarks/traces.py: 16.9 s -> 11.9 s per cell)
PREVIEW = 1000  # MLflow's request/response preview length
TEXT = 4000  # longest text kept in a span's inputs or outputs
TIMING_NOTE = ("durations recorded by the cell; start times laid end to end (stages ran for all questions "
               "at once); judge: the cell's judge seconds shared out over the judged questions")


@dataclass(frozen=True)
class SpanData:
    """One span as recorded: its stage name, MLflow span type, inputs, outputs, duration in
    nanoseconds, extra attributes, and why the stage failed for this question (None: it did not;
    the span's status is then OK, else ERROR with this message)."""

    name: str
    span_type: str
    inputs: Any
    outputs: Any
    duration_ns: int
    attributes: Mapping[str, Any]
    error: str | None = None


@dataclass(frozen=True)
class Score:
    """One assessment of a question: name, value, rationale (or None), whether an LLM judge gave it."""

    name: str
    value: float | bool
    rationale: str | None = None
    llm: bool = False


@dataclass(frozen=True)
class QuestionTrace:
    """What one question's trace holds: its id, question, answer, stage spans and scores."""

    qid: str
    question: str
    answer: str | None
    spans: tuple[SpanData, ...]
    scores: tuple[Score, ...]
    # A conversation question's earlier turns (records.parquet ``history``), oldest first; () otherwise.
    history: tuple[dict[str, str], ...] = ()


def _plain(value: Any) -> Any:
    """A records value as JSON: arrays as lists, NaN as None, numpy scalars as Python ones."""
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, str) and len(value) > TEXT:
        return value[:TEXT] + " ..."
    return value


def _number(row: Mapping[str, Any], key: str) -> float | None:
    v = row.get(key)
    if v is None or isinstance(v, (bool, str)):
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def _ns(seconds: float | None) -> int:
    return max(0, int(round((seconds or 0.0) * 1e9)))


def question_traces(records: Any, metrics: Mapping[str, Any] | None = None,
                    only: set[str] | None = None) -> list[QuestionTrace]:
    """The traces of a cell: one per row of ``records`` (the cell's records.parquet as a
    DataFrame), or only of the questions ``only`` names (the judge's seconds are still shared out
    over every judged question); ``metrics`` (its metrics.json) gives the judge's seconds. Stages
    the cell did not run (no rerank latency, no answer column, no judge column) have no span."""
    columns = set(records.columns)
    judge_cols = sorted(c for c in columns if c.startswith("judge_") and not c.endswith(("_samples", "_sd"))
                        and c != "judge_failures")
    latency = (metrics or {}).get("latency") or {}
    judged = int(records[judge_cols[0]].notna().sum()) if judge_cols else 0
    judge_each = (float(latency.get("judge_s") or 0.0) / judged) if judged else 0.0
    rows = records if only is None else records[records["qid"].astype(str).isin(only)]
    return [_question_trace(row, columns, judge_cols, judge_each) for row in rows.to_dict(orient="records")]


def _question_trace(row: Mapping[str, Any], columns: set[str], judge_cols: list[str],
                    judge_each: float) -> QuestionTrace:
    """One row's trace: the stages' spans, the judge's span (scores or failures) and its scores."""
    question = str(row.get("question") or "")
    history = tuple({"role": str(t["role"]), "content": str(t["content"])} for t in _plain(row.get("history")) or [])
    spans = [*_query_span(row, question, history), *_ranking_spans(row, columns, question)]
    answered = "answer" in columns
    if "context_ids" in columns:
        spans.append(SpanData("context", "PARSER", {"chunk_ids": _plain(row.get("chunk_ids"))},
                              {"chunk_ids": _plain(row.get("context_ids")),
                               "passages": _plain(row.get("context_texts"))}, 0, {}))
    if answered:
        spans.append(_generate_span(row, question, history))
    scores = _scores(row, judge_cols)
    judge_failed = _failed(("judge failed", _judge_failures(row.get("judge_failures"))))
    if scores or judge_failed:
        spans.append(SpanData("judge", "EVALUATOR", {"answer": _plain(row.get("answer"))},
                              {s.name: s.value for s in scores},
                              _ns(judge_each) if any(s.llm for s in scores) else 0,
                              {"failure": _plain(row.get("failure"))} if row.get("failure") else {},
                              judge_failed))
    return QuestionTrace(str(row.get("qid")), question, _plain(row.get("answer")) if answered else None,
                         tuple(spans), tuple(scores), history)


def _ranking_spans(row: Mapping[str, Any], columns: set[str], question: str) -> list[SpanData]:
    """The retrieve span, and the rerank span of a cell that reranked (a ``rerank_ms`` column)."""
    reranked = "rerank_ms" in columns
    spans = [SpanData("retrieve", "RETRIEVER", {"query": question},
                      {"chunk_ids": _plain(row.get("retrieved_ids", row.get("chunk_ids"))),
                       "scores": _plain(row.get("scores")) if not reranked else None},
                      _ns((_number(row, "retrieve_ms") or 0.0) / 1000), {})]
    if reranked:
        spans.append(SpanData("rerank", "RERANKER", {"query": question, "chunk_ids": _plain(row.get("retrieved_ids"))},
                              {"chunk_ids": _plain(row.get("chunk_ids")), "scores": _plain(row.get("scores"))},
                              _ns((_number(row, "rerank_ms") or 0.0) / 1000), {}))
    return spans


def _generate_span(row: Mapping[str, Any], question: str, history: tuple[dict[str, str], ...]) -> SpanData:
    """The generation's span: the question and how many passages in, the answer out; ERROR with the
    recorded reason when the call failed or its output could not be parsed."""
    return SpanData(
        "generate", "LLM", {"question": question, "passages": len(_plain(row.get("context_texts")) or []),
                            **({"history": list(history)} if history else {})},
        {"answer": _plain(row.get("answer")), "citations": _plain(row.get("citations")),
         "refused": _plain(row.get("refused")), "raw_output": _plain(row.get("raw_output"))},
        _ns(_number(row, "generate_s")),
        {k: _plain(row[k]) for k in ("tokens_in", "tokens_out", "generation_cached", "parse_error",
                                      "generation_error") if k in row and row[k] is not None},
        _failed(("generation failed", row.get("generation_error")),
                ("unparseable output", row.get("parse_error"))))


def _query_span(row: Mapping[str, Any], question: str, history: tuple[dict[str, str], ...]) -> list[SpanData]:
    """The query transform's span (a cell with ``query`` other than none: records.parquet's query
    columns), else none. A fallback is no error (the question was searched as it is, and counted):
    its reason is in the outputs."""
    texts = _plain(row.get(query_scorer.QUERIES))
    if texts is None:
        return []
    calls = _number(row, query_scorer.CALLS.column)
    return [SpanData("query", "LLM" if calls else "CHAIN",
                     {"question": question, **({"history": list(history)} if history else {})},
                     {"texts": texts, "output": _plain(row.get(query_scorer.OUTPUT)),
                      "fallback": _plain(row.get(query_scorer.FALLBACK))},
                     _ns((_number(row, query_scorer.MS.column) or 0.0) / 1000),
                     {query_scorer.CALLS.name: calls} if calls is not None else {})]


def _failed(*reasons: tuple[str, Any]) -> str | None:
    """``what: reason`` of the first recorded reason (a non-empty string), cut to :data:`PREVIEW`; None."""
    for what, reason in reasons:
        if isinstance(reason, str) and reason.strip():
            return f"{what}: {reason}"[:PREVIEW]
    return None


def _judge_failures(value: Any) -> str | None:
    """A row's ``judge_failures`` (JSON: metric -> reason) as ``metric: reason; ...``."""
    if not isinstance(value, str) or not value:
        return None
    try:
        failures = json.loads(value)
    except ValueError:
        return value
    if isinstance(failures, dict):
        return "; ".join(f"{m}: {r}" for m, r in failures.items()) or None
    return str(failures)


_CORRECT, _REFUSED, _FAITHFUL = measures.CORRECT, measures.CORRECT_REFUSAL_RATE, measures.FAITHFULNESS
_CITE_P, _CITE_R, _INVALID = measures.CITATION_PRECISION, measures.CITATION_RECALL, measures.INVALID_CITATIONS
# The assessments MLflow shows (named after what they judge, not after a measure).
_ASSESS_CORRECT, _ASSESS_FAITHFUL, _ASSESS_CITATION = "correct", "faithfulness", "citation"


def _scores(row: Mapping[str, Any], judge_cols: list[str]) -> list[Score]:
    # Assessment names are MLflow's (correct, faithfulness, citation); the columns read are the measures'.
    scores = []
    correct, refusal = _number(row, _CORRECT.column), _number(row, _REFUSED.column)
    if correct is not None:
        scores.append(Score(_ASSESS_CORRECT, correct >= 0.5, f"{_CORRECT.name}={correct:g}"))
    elif refusal is not None:  # an unanswerable question: correct means it refused
        scores.append(Score(_ASSESS_CORRECT, refusal >= 0.5, "unanswerable: " + ("refused" if refusal >= 0.5 else
                                                                            "answered anyway")))
    faithful = _number(row, _FAITHFUL.column)
    if faithful is not None:
        scores.append(Score(_ASSESS_FAITHFUL, faithful))
    precision = _number(row, _CITE_P.column)
    if precision is not None:
        recall, invalid = _number(row, _CITE_R.column), _number(row, _INVALID.column)
        scores.append(Score(_ASSESS_CITATION, precision, f"citation precision {precision:g}"
                            + (f", recall {recall:g}" if recall is not None else "")
                            + (f", invalid citations {invalid:g}" if invalid is not None else "")))
    for col in judge_cols:
        v = _number(row, col)
        if v is not None:
            scores.append(Score(col, v, None, llm=True))
    return scores


def _span_dict(trace_id: str, span_id: str, parent: str | None, data: SpanData, start: int) -> dict[str, Any]:
    attributes = {"mlflow.traceRequestId": json.dumps(trace_id), "mlflow.spanType": json.dumps(data.span_type),
                  "mlflow.spanInputs": json.dumps(data.inputs, default=str),
                  "mlflow.spanOutputs": json.dumps(data.outputs, default=str),
                  **{k: json.dumps(v, default=str) for k, v in data.attributes.items()}}
    return {"trace_id": trace_id, "span_id": span_id, "parent_span_id": parent, "name": data.name,
            "start_time_unix_nano": start, "end_time_unix_nano": start + data.duration_ns, "events": [],
            "status": {"code": "STATUS_CODE_ERROR", "message": data.error} if data.error is not None else
            {"code": "STATUS_CODE_OK", "message": ""}, "attributes": attributes}


def _chunks(items: list[Any], size: int) -> Iterator[list[Any]]:
    for i in range(0, len(items), size):
        yield items[i:i + size]


def log_traces(tracing: Any, experiment_id: str, run_id: str, cell_id: str, traces: list[QuestionTrace],
               end_ns: int | None = None, is_local: bool = True) -> list[str]:
    """Log ``traces`` to the experiment through ``tracing`` (an ``mlflow.tracing.client.TracingClient``
    of the tracker's URI), each linked to ``run_id`` (trace metadata ``mlflow.sourceRun``, what
    MLflow's run page and ``search_traces(run_id=...)`` read) and tagged with the cell and
    question; return the trace ids."""
    from mlflow.entities import Assessment, AssessmentSource, Feedback, Span, TraceInfo, TraceLocation, TraceState
    from mlflow.tracing.constant import TraceMetadataKey, TraceTagKey

    total = sum(sum(s.duration_ns for s in t.spans) for t in traces)
    clock = (end_ns if end_ns is not None else time.time_ns()) - total
    span_lists: list[list[Any]] = []
    infos = []
    for t in traces:
        trace_id = "tr-" + secrets.token_hex(16)
        root_id = secrets.token_hex(8)
        start = clock
        children = []
        for data in t.spans:
            children.append(_span_dict(trace_id, secrets.token_hex(8), root_id, data, clock))
            clock += data.duration_ns
        duration = clock - start
        error = next((f"{data.name}: {data.error}" for data in t.spans if data.error is not None), None)
        inputs: dict[str, Any] = {"qid": t.qid, "question": t.question, **({"history": list(t.history)} if t.history
                                                                             else {})}
        root = SpanData(TRACE_NAME, "CHAIN", inputs, {"answer": t.answer},
                        duration, {"rag_bench.timing": TIMING_NOTE}, error)
        span_lists.append([Span.from_dict(d) for d in (_span_dict(trace_id, root_id, None, root, start), *children)])
        code = AssessmentSource(source_type="CODE", source_id="rag_bench")
        judge = AssessmentSource(source_type="LLM_JUDGE", source_id="rag_bench.judge")
        assessments: list[Assessment] = [Feedback(name=s.name, value=s.value, rationale=s.rationale, trace_id=trace_id,
                                source=judge if s.llm else code) for s in t.scores]
        infos.append(TraceInfo(
            trace_id=trace_id, trace_location=TraceLocation.from_experiment_id(experiment_id),
            request_time=start // 1_000_000, execution_duration=duration // 1_000_000,
            state=TraceState.OK if error is None else TraceState.ERROR,
            request_preview=json.dumps({"question": t.question})[:PREVIEW],
            response_preview=json.dumps({"answer": t.answer})[:PREVIEW],
            trace_metadata={TraceMetadataKey.SOURCE_RUN: run_id, "mlflow.trace_schema.version": "3"},
            tags={CELL_TAG: cell_id, QID_TAG: t.qid, TraceTagKey.TRACE_NAME: TRACE_NAME,
                  TraceTagKey.SPANS_LOCATION: "TRACKING_STORE"},
            assessments=assessments))
    # Chunk by chunk, each chunk's infos first: a trace row that log_spans made already costs
    # start_trace a conflict (~1.7x). In parallel through a server (its calls wait on the network);
    # one at a time into a file. A process killed mid-way leaves at most one chunk of traces
    # without (all) their spans: :func:`missing` finds them, and the next writer replaces them.
    with ThreadPoolExecutor(max_workers=1 if is_local else SERVER_CALLS) as pool, _experiment_read_once(
            tracing if is_local else None):
        for chunk in _chunks(list(zip(infos, span_lists)), TRACES_PER_CHUNK):
            list(pool.map(tracing.start_trace, [info for info, _ in chunk]))
            failpoint("trace_infos_written")
            for batch in _chunks([s for _, trace_spans in chunk for s in trace_spans], SPANS_PER_CALL):
                tracing.log_spans(experiment_id, batch)
    return [info.trace_id for info in infos]


@contextlib.contextmanager
def _experiment_read_once(tracing: Any) -> Iterator[None]:
    """Within the block, the experiment a local store's ``start_trace`` checks (that it exists and
    is active) is read from the database once per experiment, not once per trace: MLflow's
    SQLAlchemy store reads it afresh, in a session of its own, for every trace -- 35 % of a trace's
    ``start_trace`` CPU on SQLite (1.9-3.5 of 5.4-9.6 ms; a squad2-normans sweep with MLflow's
    defaults writes 1,800 traces). One cell's traces are written in one block, so an experiment
    deleted meanwhile is seen by the next cell's first trace. ``tracing`` None (a server: its
    store checks on its side), a store without ``get_experiment`` or a block already open on the
    store: nothing changes."""
    store: Any = getattr(tracing, "store", None)
    read = getattr(store, "get_experiment", None)
    if read is None or not hasattr(store, "__dict__") or "get_experiment" in vars(store):
        yield
        return
    experiments: dict[Any, Any] = {}

    def get_experiment(experiment_id: Any) -> Any:
        if experiment_id not in experiments:
            experiments[experiment_id] = read(experiment_id)
        return experiments[experiment_id]

    store.get_experiment = get_experiment  # this store object only, until the block ends
    try:
        yield
    finally:
        del store.get_experiment


def sample(qids: list[str], size: int | None) -> set[str]:
    """The ``size`` question ids a sweep traces in each cell (all of them when ``size`` is None or
    not smaller): those whose SHA-256 is smallest, so every cell of a dataset traces the same
    questions (a question's traces compare across cells) and the choice depends on no order."""
    if size is None or size >= len(qids):
        return set(qids)
    return set(sorted(qids, key=lambda q: hashlib.sha256(q.encode("utf-8")).hexdigest())[:max(0, size)])


def missing(tracing: Any, experiment_id: str, run_id: str, traces: list[QuestionTrace]) -> tuple[
        list[QuestionTrace], list[str]]:
    """What a run still lacks of ``traces`` (the cell's, :func:`question_traces`): the questions
    with no complete trace linked to ``run_id``, and the ids of its incomplete traces (fewer spans
    than the question has: a writer killed between a trace's info and its spans) and of the
    duplicates of a question's complete trace, to delete. Two listings: every trace of the run,
    and those with their spans (MLflow leaves a trace without spans out of the second)."""
    want = {t.qid: len(t.spans) + 1 for t in traces}  # the root span and one per stage
    spans = {t.info.trace_id: len(t.data.spans) for t in _run_traces(tracing, experiment_id, run_id, True)}
    complete: set[str] = set()
    stale: list[str] = []
    for info in _run_traces(tracing, experiment_id, run_id, False):
        qid = info.info.tags.get(QID_TAG)
        if qid in want and qid not in complete and spans.get(info.info.trace_id) == want[qid]:
            complete.add(qid)
        else:
            stale.append(info.info.trace_id)
    return [t for t in traces if t.qid not in complete], stale


def _run_traces(tracing: Any, experiment_id: str, run_id: str, include_spans: bool) -> Iterator[Any]:
    token = None
    while True:
        page = tracing.search_traces(locations=[experiment_id], run_id=run_id, max_results=100, page_token=token,
                                     include_spans=include_spans)
        yield from page
        token = getattr(page, "token", None)
        if not token:
            break


def delete_run_traces(tracing: Any, experiment_id: str, run_id: str) -> int:
    """Delete the traces linked to ``run_id`` (an earlier run of a cell about to be replaced, so a
    re-logged cell never holds two sets); return how many."""
    ids: list[str] = []
    token = None
    while True:
        page = tracing.search_traces(locations=[experiment_id], run_id=run_id, max_results=500, page_token=token,
                                     include_spans=False)
        ids += [t.info.trace_id for t in page]
        token = getattr(page, "token", None)
        if not token:
            break
    for batch in _chunks(ids, 100):
        tracing.delete_traces(experiment_id=experiment_id, trace_ids=batch)
    return len(ids)
