"""Per-question MLflow traces (tracking.traces): what a trace is built from (unit), and what a real
`mlflow server` gives back after a one-cell run: one trace per question linked to the cell's run,
its stage spans with inputs, outputs and durations, its assessments; a re-logged cell replaces its
traces; tracking.traces=false logs none; a failure to log them keeps the cell."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from rag_bench.tracking import mlflow_tracker
from rag_bench.tracking.mlflow_tracker import TRACES_TAG, MlflowTracker
from rag_bench.tracking.traces import CELL_TAG, QID_TAG, question_traces
from tests.conftest import TINY
from tests.servers import free_port, running

BIN = Path(sys.executable).parent


def _records(**extra) -> pd.DataFrame:
    base = {"qid": ["q1", "q2"], "question": ["refund?", "unknowable?"], "answerable": [True, False],
            "retrieved_ids": [["a#0", "b#0"], ["c#0"]], "chunk_ids": [["b#0", "a#0"], ["c#0"]],
            "scores": [[0.9, 0.5], [0.1]], "retrieve_ms": [2.0, 4.0],
            "context_ids": [["b#0"], ["c#0"]], "context_texts": [["B text"], ["C text"]],
            "answer": ["14 days [1]", "I cannot answer"], "citations": [[1], []], "refused": [False, True],
            "raw_output": ["{}", "{}"], "generate_s": [0.5, 0.25], "tokens_in": [10, 12], "tokens_out": [3, 4],
            "correct": [1.0, math.nan], "correct_refusal_rate": [math.nan, 1.0],
            "faithfulness": [0.75, math.nan], "citation_precision": [1.0, math.nan],
            "citation_recall": [0.5, math.nan], "invalid_citations": [0.0, 0.0]}
    return pd.DataFrame({**base, **extra})


def test_a_trace_has_a_span_per_stage_run_with_recorded_durations_and_defined_scores():
    plain, reranked = question_traces(_records()), question_traces(_records(rerank_ms=[3.0, 1.0]))
    first = plain[0]
    assert [s.name for s in first.spans] == ["retrieve", "context", "generate", "judge"]
    assert [s.name for s in reranked[0].spans] == ["retrieve", "rerank", "context", "generate", "judge"]
    retrieve, rerank = reranked[0].spans[0], reranked[0].spans[1]
    assert retrieve.outputs["chunk_ids"] == ["a#0", "b#0"] and retrieve.duration_ns == 2_000_000
    assert rerank.inputs["chunk_ids"] == ["a#0", "b#0"] and rerank.outputs["chunk_ids"] == ["b#0", "a#0"]
    assert rerank.duration_ns == 3_000_000
    assert first.spans[2].outputs["answer"] == "14 days [1]" and first.spans[2].duration_ns == 500_000_000
    assert first.spans[2].attributes["tokens_in"] == 10
    assert {s.name: s.value for s in first.scores} == {"correct": True, "faithfulness": 0.75, "citation": 1.0}
    assert "recall 0.5" in next(s.rationale for s in first.scores if s.name == "citation")
    # the unanswerable question: refusing is correct; faithfulness and citation undefined, not logged
    assert [(s.name, s.value) for s in plain[1].scores] == [("correct", True)]


def test_the_judge_span_shares_the_cells_judge_seconds_and_retrieval_only_cells_have_no_answer_span():
    traces = question_traces(_records(judge_faithfulness=[0.5, math.nan], judge_faithfulness_sd=[0.0, math.nan]),
                             {"latency": {"judge_s": 2.0}})
    judge = traces[0].spans[-1]
    assert judge.name == "judge" and judge.duration_ns == 2_000_000_000  # one judged question of two
    assert judge.outputs["judge_faithfulness"] == 0.5
    assert [s.llm for s in traces[0].scores if s.name == "judge_faithfulness"] == [True]
    only = _records().drop(columns=["context_ids", "context_texts", "answer", "citations", "refused", "raw_output",
                                    "generate_s", "tokens_in", "tokens_out", "correct", "correct_refusal_rate",
                                    "faithfulness", "citation_precision", "citation_recall", "invalid_citations"])
    assert [s.name for s in question_traces(only)[0].spans] == ["retrieve"]


@pytest.fixture(scope="module")
def mlflow_server(tmp_path_factory):
    root = tmp_path_factory.mktemp("mlflow_traces")
    uri = f"http://127.0.0.1:{free_port()}"
    cmd = [str(BIN / "mlflow"), "server", "--backend-store-uri", f"sqlite:///{root}/mlflow.db", "--host", "127.0.0.1",
           "--port", uri.rsplit(":", 1)[1], "--workers", "1"]
    env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
    with running(cmd, uri + "/health", root / "server.log", cwd=root, env=env):
        yield uri


@pytest.mark.slow
def test_a_failure_to_log_traces_keeps_the_cell_finished(mlflow_server, tmp_path, monkeypatch):
    cell = tmp_path / "cell"
    cell.mkdir()
    _records().to_parquet(cell / "records.parquet")

    def broken(*args, **kwargs):
        raise ConnectionError("trace endpoint down")

    monkeypatch.setattr(mlflow_tracker, "log_traces", broken)
    # the parent this opens at the module's server is this test's: a later sweep in the same
    # session must not try to fill it after the server is gone
    monkeypatch.setattr(mlflow_tracker, "_PARENTS", {})
    tracker = MlflowTracker(uri=mlflow_server, background=False)
    tracker.bind(output_root=tmp_path, experiment="e", sweep_id="s")
    run_id = tracker.log_cell(cell_id="c1", cell_dir=cell, params={}, metrics={"retrieval/hit@1": 1.0}, tags={})
    client = tracker._get_client()
    run = client.get_run(run_id)
    assert run.info.status == "FINISHED"
    assert run.data.tags[TRACES_TAG].startswith("failed: ConnectionError: trace endpoint down")
    assert client.search_traces(locations=[run.info.experiment_id], run_id=run_id) == []


def _run(uri: str, out: Path, *overrides: str) -> None:
    env = {**os.environ, "MLFLOW_TRACKING_URI": uri}
    done = subprocess.run([str(BIN / "rag-bench"), "run", f"dataset.path={TINY}", f"output.root={out}", *overrides],
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.mark.slow
def test_traces_read_back_from_a_real_server_and_the_switch_turns_them_off(mlflow_server, tmp_path):
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=mlflow_server)
    questions = [json.loads(line)["id"] for line in (TINY / "questions.jsonl").read_text().splitlines()]
    _run(mlflow_server, tmp_path / "on", "experiment.name=traces_on")
    exp = client.get_experiment_by_name("traces_on").experiment_id
    (run,) = client.search_runs([exp], filter_string="tags.`rag_bench.role` = 'cell'")
    traces = client.search_traces(locations=[exp], run_id=run.info.run_id)
    assert sorted(t.info.tags[QID_TAG] for t in traces) == sorted(questions)
    assert {t.info.tags[CELL_TAG] for t in traces} == {run.data.tags["cell_id"]}
    assert run.data.tags[TRACES_TAG] == str(len(questions))
    by_qid = {t.info.tags[QID_TAG]: client.get_trace(t.info.trace_id) for t in traces}
    records = pd.read_parquet(next((tmp_path / "on" / "traces_on").glob("*/records.parquet"))).set_index("qid")
    qid = records.index[records["faithfulness"].notna() & records["citation_precision"].notna()][0]
    q1 = by_qid[qid]
    assert q1.info.trace_metadata["mlflow.sourceRun"] == run.info.run_id
    spans = {s.name: s for s in q1.data.spans}
    assert set(spans) == {"question", "retrieve", "context", "generate", "judge"}
    assert spans["retrieve"].span_type == "RETRIEVER" and spans["retrieve"].inputs == {"query": q1.data.spans[0].inputs["question"]}
    assert spans["retrieve"].outputs["chunk_ids"] and spans["retrieve"].end_time_ns > spans["retrieve"].start_time_ns
    assert spans["context"].outputs["passages"] and "answer" in spans["generate"].outputs
    assert spans["question"].outputs == {"answer": spans["generate"].outputs["answer"]}
    assessments = {a.name: a for a in q1.info.assessments}
    assert {"correct", "faithfulness", "citation"} <= set(assessments)
    assert assessments["correct"].value == bool(records.loc[qid, "correct"] >= 0.5)
    assert assessments["faithfulness"].value == pytest.approx(records.loc[qid, "faithfulness"])
    assert assessments["citation"].value == pytest.approx(records.loc[qid, "citation_precision"])

    # the cell logged again (its DONE lost): its run and traces are replaced, not added to
    cell_dir = next((tmp_path / "on" / "traces_on").glob("*/DONE")).parent
    (cell_dir / "DONE").unlink()
    _run(mlflow_server, tmp_path / "on", "experiment.name=traces_on")
    (again,) = client.search_runs([exp], filter_string="tags.`rag_bench.role` = 'cell'")
    assert again.info.run_id != run.info.run_id
    assert len(client.search_traces(locations=[exp])) == len(questions)
    assert len(client.search_traces(locations=[exp], run_id=again.info.run_id)) == len(questions)

    _run(mlflow_server, tmp_path / "off", "experiment.name=traces_off", "tracking.traces=false")
    off = client.get_experiment_by_name("traces_off").experiment_id
    (run_off,) = client.search_runs([off], filter_string="tags.`rag_bench.role` = 'cell'")
    assert run_off.info.status == "FINISHED" and TRACES_TAG not in run_off.data.tags
    assert client.search_traces(locations=[off]) == []


def test_failed_calls_are_error_spans_in_a_real_store(tmp_path, monkeypatch):
    """A failed judge call (judge_failures) and a failed generation (generation_error) give their
    span, the root span and the trace the status ERROR with the recorded reason; a judge that
    failed on every metric of a question still has its span."""
    from mlflow.tracking import MlflowClient

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.setattr(mlflow_tracker, "_PARENTS", {})
    cell = tmp_path / "cell"
    cell.mkdir()
    _records(generation_error=[None, "HTTP 503: busy"],
             judge_failures=[json.dumps({"faithfulness": "TimeoutError: judge endpoint"}), None]).to_parquet(
        cell / "records.parquet")
    tracker = MlflowTracker(background=False)
    tracker.bind(output_root=tmp_path, experiment="e", sweep_id="s")
    run_id = tracker.log_cell(cell_id="c1", cell_dir=cell, params={}, metrics={"retrieval/hit@1": 1.0}, tags={})
    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    exp = client.get_run(run_id).info.experiment_id
    traces = {t.info.tags[QID_TAG]: client.get_trace(t.info.trace_id)
              for t in client.search_traces(locations=[exp], run_id=run_id)}
    status = {q: {s.name: (s.status.status_code, s.status.description) for s in t.data.spans} for q, t in traces.items()}
    assert status["q1"]["judge"] == ("ERROR", "judge failed: faithfulness: TimeoutError: judge endpoint")
    assert status["q1"]["generate"] == ("OK", "")
    assert status["q1"]["question"] == ("ERROR", "judge: judge failed: faithfulness: TimeoutError: judge endpoint")
    assert status["q2"]["generate"] == ("ERROR", "generation failed: HTTP 503: busy")
    assert {q: t.info.state for q, t in traces.items()} == {"q1": "ERROR", "q2": "ERROR"}
    only_failures = question_traces(_records(judge_failures=[None, json.dumps({"faithfulness": "x"})]).drop(
        columns=["correct_refusal_rate"]))[1]
    assert [s.name for s in only_failures.spans][-1] == "judge" and only_failures.spans[-1].error
