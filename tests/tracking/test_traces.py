"""Per-question MLflow traces (tracking.traces): what a trace is built from (unit), and what a real
`mlflow server` gives back after a one-cell run: one trace per question linked to the cell's run,
its stage spans with inputs, outputs and durations, its assessments; a re-logged cell replaces its
traces; tracking.traces=false logs none; a failure to log them keeps the cell. The sweep traces a
sample of each cell's questions (tracking.trace_sample): `rag-bench traces` writes the rest, once,
and completes what a killed writer left; a warm re-run (cells DONE) writes no trace again."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from rag_bench.errors import ConfigError
from rag_bench.tracking import mlflow_tracker
from rag_bench.tracking.mlflow_tracker import TRACES_TAG, UNTRACED_TAG, MlflowTracker
from rag_bench.tracking.traces import CELL_TAG, QID_TAG, missing, question_traces, sample
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
    both = _records(judge_faithfulness=[0.5, 0.25], judge_faithfulness_sd=[0.0, 0.0])
    (alone,) = question_traces(both, {"latency": {"judge_s": 2.0}}, only={"q1"})  # a sample: the same share
    assert alone.qid == "q1" and alone.spans[-1].duration_ns == 1_000_000_000  # two judged questions
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


def test_the_sample_is_the_same_questions_in_every_cell_whatever_their_order():
    qids = [f"q{i}" for i in range(50)]
    chosen = sample(qids, 10)
    assert len(chosen) == 10 and chosen <= set(qids)
    assert sample(list(reversed(qids)), 10) == chosen
    assert sample(qids[:5] + qids[5:][::-1], 10) == chosen
    assert sample(qids, None) == set(qids) and sample(qids, 50) == set(qids) and sample(qids, 80) == set(qids)
    assert sample(qids, 3) < chosen  # a smaller sample is part of a larger one


@pytest.mark.parametrize("bad", [0, -1, 2.5, "ten", True])
def test_a_trace_sample_that_is_no_count_is_a_config_error_with_a_fix(bad):
    with pytest.raises(ConfigError, match=r"tracking.trace_sample=.*fix: tracking.trace_sample=10"):
        MlflowTracker(trace_sample=bad)


class _Found:
    """A trace as search_traces returns it: info (id, tags) and data (spans)."""

    def __init__(self, trace_id: str, qid: str | None, spans: int) -> None:
        self.info = type("Info", (), {"trace_id": trace_id, "tags": {QID_TAG: qid} if qid else {}})()
        self.data = type("Data", (), {"spans": [object()] * spans})()


class _Page(list):
    token = None


class _Tracing:
    def __init__(self, found: list[_Found]) -> None:
        self.found = found

    def search_traces(self, **kwargs):  # as MLflow's: with spans, a trace without any is left out
        assert kwargs["run_id"] == "run"
        return _Page(t for t in self.found if t.data.spans or not kwargs["include_spans"])


def test_missing_keeps_complete_traces_and_replaces_incomplete_and_duplicate_ones():
    traces = question_traces(_records())  # q1: 4 stage spans, q2: 4 -> 5 spans each with the root
    found = [_Found("t1", "q1", 5), _Found("t1b", "q1", 5), _Found("t2", "q2", 2), _Found("t3", None, 5),
             _Found("t2b", "q2", 0)]
    todo, stale = missing(_Tracing(found), "0", "run", traces)
    assert [t.qid for t in todo] == ["q2"]  # q2's traces lack spans (a writer killed mid-way)
    assert stale == ["t1b", "t2", "t3", "t2b"]  # a second complete q1, q2's incomplete ones, one of no question here
    todo, stale = missing(_Tracing([]), "0", "run", traces)
    assert [t.qid for t in todo] == ["q1", "q2"] and stale == []


def _traces_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "rag-bench"), "traces", *args], env=env or dict(os.environ),
                          capture_output=True, text=True, timeout=600)


def _qid_spans(client, exp: str, run_id: str) -> dict[str, list[int]]:
    """Each question's traces of the run, as their span counts."""
    found: dict[str, list[int]] = {}
    for t in client.search_traces(locations=[exp], run_id=run_id, include_spans=True, max_results=500):
        found.setdefault(t.info.tags[QID_TAG], []).append(len(t.data.spans))
    return found


@pytest.mark.slow
def test_a_sweep_traces_a_sample_and_the_traces_command_writes_the_rest_once_on_a_real_server(mlflow_server,
                                                                                             tmp_path):
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=mlflow_server)
    questions = sorted(json.loads(line)["id"] for line in (TINY / "questions.jsonl").read_text().splitlines())
    _run(mlflow_server, tmp_path, "experiment.name=sampled", "tracking.trace_sample=2")
    exp = client.get_experiment_by_name("sampled").experiment_id
    (run,) = client.search_runs([exp], filter_string="tags.`rag_bench.role` = 'cell'")
    first = client.search_traces(locations=[exp], run_id=run.info.run_id, include_spans=False)
    assert sorted(t.info.tags[QID_TAG] for t in first) == sorted(sample(questions, 2))
    assert run.data.tags[TRACES_TAG] == "2" and run.data.tags[UNTRACED_TAG] == str(len(questions) - 2)

    # a warm re-run of the same command (the cell DONE) writes no trace again
    _run(mlflow_server, tmp_path, "experiment.name=sampled", "tracking.trace_sample=2")
    assert sorted(t.info.trace_id for t in client.search_traces(locations=[exp], include_spans=False)) == \
        sorted(t.info.trace_id for t in first)

    cell_dir = next((tmp_path / "sampled").glob("*/DONE")).parent
    env = {**os.environ, "MLFLOW_TRACKING_URI": mlflow_server}
    done = _traces_cli(str(cell_dir), env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"{len(questions) - 2} trace(s) written, 2 already there" in done.stdout
    spans = _qid_spans(client, exp, run.info.run_id)
    records = pd.read_parquet(cell_dir / "records.parquet")
    want = {t.qid: len(t.spans) + 1 for t in question_traces(records)}
    assert spans == {q: [want[q]] for q in questions}  # every question once, with all its spans
    assert {t.info.trace_id for t in first} <= {t.info.trace_id for t in client.search_traces(locations=[exp], include_spans=False)}
    tags = client.get_run(run.info.run_id).data.tags
    assert tags[TRACES_TAG] == str(len(questions)) and tags[UNTRACED_TAG] == "0"

    again = _traces_cli(str(cell_dir.parent), env=env)  # the experiment folder: nothing left to write
    assert again.returncode == 0, again.stderr[-3000:]
    assert f"0 trace(s) written, {len(questions)} already there" in again.stdout
    assert len(client.search_traces(locations=[exp], max_results=500, include_spans=False)) == len(questions)


@pytest.mark.slow
def test_a_traces_command_killed_mid_way_is_completed_by_the_next(tmp_path):
    """kill -9 after a chunk's traces exist but before their spans: the run's tag still counts the
    questions missing, and the next `rag-bench traces` replaces the incomplete traces."""
    from mlflow.tracking import MlflowClient

    env = {k: v for k, v in os.environ.items() if k not in ("MLFLOW_TRACKING_URI", "RAG_BENCH_FAILPOINT")}
    done = subprocess.run([str(BIN / "rag-bench"), "run", f"dataset.path={TINY}", f"output.root={tmp_path}",
                           "tracking.trace_sample=1"], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    cell_dir = next((tmp_path / "default").glob("*/DONE")).parent
    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    exp = client.get_experiment_by_name("default").experiment_id
    (run,) = client.search_runs([exp], filter_string="tags.`rag_bench.role` = 'cell'")
    killed = _traces_cli(str(cell_dir), env={**env, "RAG_BENCH_FAILPOINT": "trace_infos_written"})
    assert killed.returncode == -9
    questions = sorted(json.loads(line)["id"] for line in (TINY / "questions.jsonl").read_text().splitlines())
    records = pd.read_parquet(cell_dir / "records.parquet")
    want = {t.qid: len(t.spans) + 1 for t in question_traces(records)}
    assert len(client.search_traces(locations=[exp], run_id=run.info.run_id, max_results=500, include_spans=False)) == len(questions)
    half = _qid_spans(client, exp, run.info.run_id)  # every question has a trace, but only the sample its spans
    assert half == {q: [want[q]] for q in sample(questions, 1)}
    assert client.get_run(run.info.run_id).data.tags[UNTRACED_TAG] == str(len(questions) - 1)  # recorded

    resumed = _traces_cli(str(cell_dir), env=env)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f"{len(questions) - 1} trace(s) written, 1 already there" in resumed.stdout
    assert _qid_spans(client, exp, run.info.run_id) == {q: [want[q]] for q in questions}
    assert len(client.search_traces(locations=[exp], max_results=500, include_spans=False)) == len(questions)
    assert client.get_run(run.info.run_id).data.tags[UNTRACED_TAG] == "0"


@pytest.mark.slow
def test_a_sweep_killed_while_writing_a_cells_traces_leaves_no_done_cell_and_resumes_to_one_set(tmp_path):
    from mlflow.tracking import MlflowClient

    env = {k: v for k, v in os.environ.items() if k not in ("MLFLOW_TRACKING_URI", "RAG_BENCH_FAILPOINT")}
    cmd = [str(BIN / "rag-bench"), "run", "-m", "chunker=fixed,section", f"dataset.path={TINY}",
           f"output.root={tmp_path}", "tracking.trace_sample=3"]
    killed = subprocess.run(cmd, env={**env, "RAG_BENCH_FAILPOINT": "trace_infos_written"}, capture_output=True,
                            text=True, timeout=600)
    assert killed.returncode == -9
    assert not list((tmp_path / "default").glob("*/DONE"))  # the cell whose traces were cut short is not DONE
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert len(list((tmp_path / "default").glob("*/DONE"))) == 2
    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    exp = client.get_experiment_by_name("default").experiment_id
    runs = client.search_runs([exp], filter_string="tags.`rag_bench.role` = 'cell'")
    assert len(runs) == 2 and {r.info.status for r in runs} == {"FINISHED"}
    questions = sorted(json.loads(line)["id"] for line in (TINY / "questions.jsonl").read_text().splitlines())
    for r in runs:
        records = pd.read_parquet(tmp_path / "default" / r.data.tags["cell_id"] / "records.parquet")
        want = {t.qid: len(t.spans) + 1 for t in question_traces(records)}
        assert _qid_spans(client, exp, r.info.run_id) == {q: [want[q]] for q in sample(questions, 3)}
    assert len(client.search_traces(locations=[exp], max_results=500, include_spans=False)) == 6  # the killed run: none left


def test_traces_of_a_cell_never_logged_to_mlflow_exit_2_with_a_fix(tmp_path, monkeypatch, capsys):
    from rag_bench.cli.main import main as cli

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    assert cli(["run", f"dataset.path={TINY}", f"output.root={tmp_path}", "tracking=none"]) == 0
    cell_dir = next((tmp_path / "default").glob("*/DONE")).parent
    capsys.readouterr()
    assert cli(["traces", str(cell_dir)]) == 2
    err = capsys.readouterr().err
    assert f"no MLflow store at {tmp_path / 'mlflow.db'}" in err and "fix: pass the --tracking-uri" in err
    assert f"rag-bench sync {cell_dir.parent}" in err and not (tmp_path / "mlflow.db").exists()  # none made
    assert cli(["traces", str(tmp_path)]) == 2  # an output root: not what the command takes, and it says so
    assert "traces" in capsys.readouterr().err


def test_a_query_transform_has_its_span_before_retrieval():
    """Issue 53: the transform's output (the texts searched, what it wrote, its fallback) is in the
    trace, as the drill-down shows it; a cell without a transform has no such span."""
    records = _records(query_texts=[["refund?", "refund window annual plan"], ["unknowable?"]],
                       query_output=["refund window annual plan", None],
                       query_fallback=[None, "the reply did not parse"],
                       query_calls=[1.0, 1.0], query_ms=[120.0, 80.0])
    first, second = question_traces(records)
    assert [s.name for s in first.spans][:2] == ["query", "retrieve"]
    span = first.spans[0]
    assert span.span_type == "LLM" and span.duration_ns == 120_000_000 and span.attributes == {"calls": 1.0}
    assert span.outputs["texts"] == ["refund?", "refund window annual plan"] and span.error is None
    assert second.spans[0].outputs["fallback"] == "the reply did not parse" and second.spans[0].error is None
    assert "query" not in [s.name for s in question_traces(_records())[0].spans]


def test_a_cells_traces_read_their_experiment_once_and_the_store_is_left_as_it_was(tmp_path, monkeypatch):
    """MLflow's SQL store reads the experiment afresh for every trace it starts (a third of the
    call's CPU); within log_traces a local store reads it once, and only there. A deleted
    experiment still stops the first trace."""
    from mlflow.exceptions import MlflowException
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore
    from mlflow.tracing.client import TracingClient
    from mlflow.tracking import MlflowClient

    from rag_bench.tracking.traces import log_traces

    reads: list[str] = []
    real = SqlAlchemyStore.get_experiment

    def counted(self, experiment_id):
        reads.append(experiment_id)
        return real(self, experiment_id)

    monkeypatch.setattr(SqlAlchemyStore, "get_experiment", counted)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(tracking_uri=uri)
    exp = client.create_experiment("once")
    run = client.create_run(exp).info.run_id
    tracing = TracingClient(uri)
    traces = question_traces(_records(qid=["q1", "q2"])) * 2  # four traces
    reads.clear()
    ids = log_traces(tracing, exp, run, "c1", traces)
    assert reads == [exp]  # once for the four (one per trace without the block)
    assert "get_experiment" not in vars(tracing.store)  # the store object is left as it was
    assert len(client.search_traces(locations=[exp], run_id=run)) == len(ids) == 4
    reads.clear()
    tracing.store.get_experiment(exp)  # outside the block: read as MLflow reads it
    assert reads == [exp]
    client.delete_experiment(exp)
    with pytest.raises(MlflowException):
        log_traces(tracing, exp, run, "c2", traces)
    assert "get_experiment" not in vars(tracing.store)
