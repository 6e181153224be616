"""Fourth round of hostile inputs, on the state rag_bench keeps between runs, through the real
command line: what a cache holds (a generation that is not valid Unicode, a forged embedding
shard), what sits beside a dataset (labels, notes, an editor's swap file), the MLflow store
template of a shared cache folder, read-only commands in an empty folder, a SLURM request no node
can hold, and a FIFO named like a job log. Each case either works as documented or exits 2 naming
what, where and ``-- fix: ...``, and leaves nothing behind."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from rag_bench.cli import main as cli
from rag_bench.embedding.cache import SHARD_DIR, EmbeddingCache, ShardSet, text_key, vector_bytes
from rag_bench.generation import base as generation_base
from tests.bad_inputs.test_bad_inputs import copy_tiny, edit_questions
from tests.bad_inputs.test_hostile_datasets import make_beir
from tests.bad_inputs.test_hostile_outputs import run_cell
from tests.cluster.conftest import slurm  # noqa: F401 (a fixture: the real one-node SLURM cluster)
from tests.conftest import REPO, TINY
from tests.servers import JsonEndpoint, serving

# --- 32. `rag-bench status` reads only regular files -------------------------------------------


def _status(exp: Path) -> subprocess.CompletedProcess[str]:
    """`rag-bench status` in a child process: a blocked read is a timeout, not a hung test run."""
    return subprocess.run([sys.executable, "-m", "rag_bench.cli", "status", str(exp)], capture_output=True, text=True,
                          timeout=30, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})


@pytest.mark.parametrize("name", ["5_0_0_log.out", "5_0_0_log.err", "../5.plan.json"], ids=["out", "err", "plan"])
def test_status_skips_a_fifo_named_like_a_job_file(tmp_path, name):
    exp = tmp_path / "grid"
    job = exp / ".submitit" / "5_0"
    job.mkdir(parents=True)
    (job / "5_1_0_log.out").write_text("cell 9949f318c5c3 done: fixed k=3 | hit@5=1.000\n"
                                       "submitit INFO - Job completed successfully\n")
    os.mkfifo(job / name)  # nobody ever writes to it: opening it for reading blocks forever
    out = _status(exp)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "job 5_0" in out.stdout and "cells done 9949f318c5c3" in out.stdout


def test_status_never_reads_a_device_linked_as_a_log(tmp_path):
    exp = tmp_path / "grid"
    job = exp / ".submitit" / "5_0"
    job.mkdir(parents=True)
    (job / "5_0_0_log.out").symlink_to("/dev/zero")  # never ends
    (job / "5_0_0_log.err").symlink_to("/dev/urandom")
    out = _status(exp)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "jobs: none submitted" in out.stdout


# --- 15. a generation that is not valid Unicode -------------------------------------------------

LONE = "\ud83d"  # the first half of an emoji's UTF-16 pair: no character, UTF-8 cannot encode it


class SurrogateEndpoint(JsonEndpoint):
    """An OpenAI-compatible endpoint whose replies hold a lone surrogate: in the message content
    itself (``server.where == "content"``) or escaped inside the answer JSON the model wrote."""

    def answer(self, body: Any) -> tuple[int, bytes]:
        if self.server.where == "content":  # type: ignore[attr-defined]
            content = '{"answer": "Refunds take 5 days ' + LONE + '", "sources": [1]}'
        else:
            content = json.dumps({"answer": "Refunds take 5 days " + LONE, "sources": [1]})  # "\\ud83d" in JSON
        return 200, json.dumps({"choices": [{"message": {"content": content}}],
                                "usage": {"prompt_tokens": 3, "completion_tokens": 2}}).encode()


def _run_generator(out: Path, url: str) -> int:
    return cli(["run", f"dataset.path={TINY}", f"output.root={out}", "tracking=none", "generator=openai",
                f"generator.base_url={url}", "generator.max_retries=0"])


def _answers(out: Path) -> pd.DataFrame:
    (records,) = out.glob("default/*/records.parquet")
    assert (records.parent / "DONE").exists()
    return pd.read_parquet(records, columns=["answer", "parse_error", "generation_error", "generation_cached"])


@pytest.mark.parametrize(("where", "answer", "parse_error"), [
    ("content", "Refunds take 5 days \ufffd", None),
    ("answer-json", "", "'answer' is not text: it holds a lone UTF-16 surrogate escape"),
], ids=["in-the-content", "escaped-in-the-answer-json"])
def test_lone_surrogate_in_a_generation_is_never_cached_or_written(tmp_path, capsys, monkeypatch, where, answer,
                                                                    parse_error):
    monkeypatch.setenv("RAG_BENCH_CACHE", str(tmp_path / "cache"))
    with serving(SurrogateEndpoint, where=where) as server:
        url = f"http://127.0.0.1:{server.server_port}/v1"
        assert _run_generator(tmp_path / "live", url) == 0, capsys.readouterr().err[-3000:]
    # The endpoint is gone: the same prompts come from the cache, which holds text.
    assert _run_generator(tmp_path / "cached", url) == 0, capsys.readouterr().err[-3000:]
    for out, cached in (("live", False), ("cached", True)):
        frame = _answers(tmp_path / out)
        assert (frame.answer == answer).all() and frame.generation_error.isna().all()
        assert frame.parse_error.isna().all() if parse_error is None else frame.parse_error.str.startswith(
            parse_error).all()
        assert (frame.generation_cached == cached).all()


def test_a_poisoned_generation_cache_entry_does_not_crash_a_rerun(tmp_path, capsys, monkeypatch):
    """A cache written before generations were checked holds the surrogate: served, it is text."""
    monkeypatch.setenv("RAG_BENCH_CACHE", str(tmp_path / "cache"))
    with monkeypatch.context() as m:
        m.setattr(generation_base, "valid_unicode", lambda g: g)  # the unchecked former behaviour
        with serving(SurrogateEndpoint, where="content") as server:
            url = f"http://127.0.0.1:{server.server_port}/v1"
            with contextlib.suppress(Exception):
                _run_generator(tmp_path / "poisoning", url)  # crashed writing records.parquet
    capsys.readouterr()
    assert _run_generator(tmp_path / "rerun", url) == 0, capsys.readouterr().err[-3000:]
    frame = _answers(tmp_path / "rerun")
    assert (frame.answer == "Refunds take 5 days \ufffd").all() and frame.generation_cached.all()


# --- 16. files beside a dataset are not the dataset ---------------------------------------------


def _fingerprint(capsys: pytest.CaptureFixture[str], root: Path, *split: str) -> str:
    assert cli(["validate", str(root), *split]) == 0, capsys.readouterr().err[-3000:]
    out = capsys.readouterr().out
    return out.split("fingerprint ")[1].split()[0]


def _fifo_beside(root: Path) -> None:
    os.mkfifo(root / "notes.fifo")  # never read: before, refused as "not a regular file"


BESIDE = [
    ("labels", lambda r: (r / "labels.jsonl").write_text('{"qid": "q1", "cell": "0123456789ab", "measure": '
                                                         '"correct", "value": 1}\n')),
    ("notes", lambda r: (r / "NOTES.txt").write_text("ask Ann about q3\n")),
    ("swap-file", lambda r: (r / ".questions.jsonl.swp").write_bytes(b"b0VIM 9.0\0" * 50)),
    ("notes-folder", lambda r: ((r / "drafts").mkdir(), (r / "drafts" / "q7.md").write_text("# draft\n"))),
    ("not-a-document-in-docs", lambda r: (r / "docs" / ".billing.md.swp").write_bytes(b"b0VIM\0")),
    ("fifo-beside", _fifo_beside),
    ("link-out-beside", lambda r: (r / "README.md").symlink_to("/etc/hostname")),
]


@pytest.mark.parametrize(("case", "add"), BESIDE, ids=[c[0] for c in BESIDE])
def test_files_beside_the_dataset_keep_its_fingerprint_and_cell_ids(tmp_path, capsys, case, add):
    root = copy_tiny(tmp_path)
    before = _fingerprint(capsys, root)
    exp = run_cell(capsys, tmp_path / "out", dataset=root)
    (cell,) = [p for p in exp.iterdir() if (p / "DONE").exists()]
    add(root)
    assert _fingerprint(capsys, root) == before
    run_cell(capsys, tmp_path / "out", dataset=root)  # the cell is found done, nothing recomputed
    assert [p for p in exp.iterdir() if not p.name.startswith(".")] == [cell]
    metrics = json.loads((cell / "metrics.json").read_text())
    assert metrics["dataset_fingerprint"] == before
    assert metrics["dataset_files"] == ["docs/**/*.md|*.txt (3 files)", "dataset.yaml", "docs.jsonl",
                                        "questions.jsonl"]


EDITS = [
    ("document", lambda r: (r / "docs" / "billing.md").write_text((r / "docs" / "billing.md").read_text() + "\nMore.\n")),
    ("new-document", lambda r: (r / "docs" / "extra.txt").write_text("An extra document.\n")),
    ("docs-jsonl", lambda r: (r / "docs.jsonl").write_text((r / "docs.jsonl").read_text().replace(
        '"version": "2"', '"version": "3"', 1))),
    ("question", lambda r: edit_questions(r, lambda q: q[0].update(question=q[0]["question"] + "?"))),
    ("manifest", lambda r: (r / "dataset.yaml").write_text("name: tiny-renamed\n")),
]


@pytest.mark.parametrize(("case", "edit"), EDITS, ids=[c[0] for c in EDITS])
def test_editing_the_dataset_changes_its_fingerprint(tmp_path, capsys, case, edit):
    root = copy_tiny(tmp_path)
    before = _fingerprint(capsys, root)
    edit(root)
    assert _fingerprint(capsys, root) != before


def test_beir_fingerprint_covers_the_split_it_reads(tmp_path, capsys):
    root = make_beir(tmp_path / "beir")
    test = _fingerprint(capsys, root)
    (root / "qrels" / "dev.tsv").write_text("q1\td2\t1\n")  # another split: not what a test cell reads
    (root / "labels.jsonl").write_text("{}\n")
    assert _fingerprint(capsys, root) == test
    dev = _fingerprint(capsys, root, "--split", "dev")
    assert dev != test
    (root / "qrels" / "dev.tsv").write_text("q1\td1\t1\n")
    assert _fingerprint(capsys, root) == test and _fingerprint(capsys, root, "--split", "dev") != dev
    with open(root / "corpus.jsonl", "a") as fh:
        fh.write(json.dumps({"_id": "d3", "text": "A third document."}) + "\n")
    assert _fingerprint(capsys, root) != test
    assert cli(["validate", str(root), "--split", "../corpus"]) == 2
    assert "is not a file name in qrels/" in capsys.readouterr().err


# --- 18. `cache verify` checks the embedding shard files ---------------------------------------


def _vectors(n: int, dim: int, seed: int = 0) -> list[tuple[str, bytes]]:
    rng = np.random.default_rng(seed)
    return [(text_key("m", "", str(i)), vector_bytes(rng.random(dim))) for i in range(n)]


def _truncate(cache: Path, shard: Path) -> None:
    shard.write_bytes(shard.read_bytes()[:-9])


def _flip(cache: Path, shard: Path) -> None:
    data = bytearray(shard.read_bytes())
    data[60] ^= 0x01
    shard.write_bytes(bytes(data))


def _forge_other_size(cache: Path, shard: Path) -> None:
    """A shard with a valid checksum whose vectors for texts SQLite holds have another size."""
    shard.unlink()
    ShardSet(cache / SHARD_DIR).put_bytes([(k, vector_bytes(np.ones(3))) for k, _ in _vectors(4, 8)])


def _two_shards_disagree(cache: Path, shard: Path) -> None:
    ShardSet(cache / SHARD_DIR).put_bytes([(_vectors(1, 8)[0][0], vector_bytes(np.ones(5)))])


SHARD_CASES = [("truncated", _truncate, "damaged: size"), ("flipped-bit", _flip, "damaged: checksum mismatch"),
               ("forged-other-size", _forge_other_size, "where embeddings.sqlite has size 8"),
               ("two-shards-disagree", _two_shards_disagree, "for the same texts")]


@pytest.mark.parametrize(("case", "damage", "needle"), SHARD_CASES, ids=[c[0] for c in SHARD_CASES])
def test_cache_verify_reports_a_bad_shard_and_repair_deletes_it(tmp_path, capsys, case, damage, needle):
    cache = tmp_path / "cache"
    store = EmbeddingCache(cache / "embeddings.sqlite")
    store.put_bytes(_vectors(4, 8))  # SQLite holds the texts...
    [shard] = store.shards.put_bytes(_vectors(8, 8))  # ...and a phase-1 shard holds them too
    store.close()
    assert cli(["cache", "verify", "--dir", str(cache)]) == 0
    assert "8 vectors ok in 1 shard file(s)" in capsys.readouterr().out
    damage(cache, shard)
    assert cli(["cache", "verify", "--dir", str(cache)]) == 2
    err = capsys.readouterr().err
    named = [p for p in (cache / SHARD_DIR).iterdir() if f"error: {p}: " in err]
    assert named and (case != "two-shards-disagree" or len(named) == 2), err
    assert needle in err and f"fix: run `rag-bench cache verify --repair --dir {cache}`" in err
    assert cli(["cache", "verify", "--dir", str(cache), "--repair"]) == 0
    assert "deleted (" in capsys.readouterr().out
    assert cli(["cache", "verify", "--dir", str(cache)]) == 0  # what is left is sound
    assert "4 entries ok, 0 corrupt" in capsys.readouterr().out


def test_cache_verify_of_a_folder_of_shards_only(tmp_path, capsys):
    ShardSet(tmp_path / SHARD_DIR).put_bytes(_vectors(5, 8))  # a cluster cache: no SQLite file
    assert cli(["cache", "verify", "--dir", str(tmp_path)]) == 0
    assert "5 vectors ok in 1 shard file(s)" in capsys.readouterr().out
    assert not (tmp_path / "embeddings.sqlite").exists()


def _dense_run(out: Path, cache: Path) -> subprocess.CompletedProcess[str]:
    """A dense cell in a child process: the parent's in-memory vectors must not hide the cache."""
    return subprocess.run([sys.executable, "-m", "rag_bench.cli", "run", f"dataset.path={TINY}", f"output.root={out}",
                           "tracking=none", "retriever=dense"], capture_output=True, text=True, timeout=600, cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO), "RAG_BENCH_CACHE": str(cache)})


@pytest.mark.parametrize("forged", ["some-texts", "every-text"])
def test_a_forged_shard_neither_crashes_nor_overrides_a_run(tmp_path, forged):
    cache = tmp_path / "cache"
    first = _dense_run(tmp_path / "a", cache)
    assert first.returncode == 0, first.stderr[-3000:]
    with sqlite3.connect(cache / "embeddings.sqlite") as conn:
        keys = [str(r[0]) for r in conn.execute("SELECT key FROM vectors")]
    keys = keys[:2] if forged == "some-texts" else keys
    [shard] = ShardSet(cache / SHARD_DIR).put_bytes([(k, vector_bytes(np.ones(7))) for k in keys])
    second = _dense_run(tmp_path / "b", cache)
    assert second.returncode == 0, second.stderr[-3000:]
    (a,), (b,) = (list((tmp_path / x).glob("default/*/metrics.json")) for x in "ab")
    assert json.loads(a.read_text())["retrieval"] == json.loads(b.read_text())["retrieval"]
    assert f"cache shard {shard} not used" in (tmp_path / "b" / "default" / ".hydra" / "rag_bench.log").read_text()


# --- 22. read-only commands leave the current folder as it was -----------------------------------

RUN_ID, OTHER_ID = "0123456789abcdef0123456789abcdef", "fedcba9876543210fedcba9876543210"
READ_ONLY = [
    ("label", ["label", RUN_ID]),
    ("export", ["export", RUN_ID]),
    ("compare", ["compare", RUN_ID, OTHER_ID]),
    ("gate", ["gate", RUN_ID, "--policy", str(REPO / "rag_bench" / "conf" / "gate" / "release.yaml")]),
    ("calibrate", ["calibrate", RUN_ID, "--labels", str(REPO / "rag_bench" / "datasets" / "kettleby" / "labels.jsonl")]),
    ("compare-sqlite-uri", ["compare", RUN_ID, OTHER_ID, "--tracking-uri", "sqlite:///elsewhere/mlflow.db"]),
    ("gate-file-uri", ["gate", RUN_ID, "--policy", str(REPO / "rag_bench" / "conf" / "gate" / "release.yaml"),
                       "--tracking-uri", "file:./mlruns"]),
    ("leaderboard", ["leaderboard", "experiments/default"]),
    ("status", ["status", "experiments/default"]),
    ("report", ["report", "experiments/default", "--no-mlflow"]),
    ("cache-verify", ["cache", "verify"]),
]


@pytest.mark.parametrize(("case", "argv"), READ_ONLY, ids=[c[0] for c in READ_ONLY])
def test_read_only_command_creates_nothing(tmp_path, capsys, monkeypatch, case, argv):
    here = tmp_path / "empty"
    here.mkdir()
    monkeypatch.chdir(here)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.setenv("RAG_BENCH_CACHE", str(tmp_path / "no-cache"))
    assert cli(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "-- fix:" in err, err[-2000:]
    assert list(here.iterdir()) == [] and not (tmp_path / "no-cache").exists()


# --- 17. the MLflow store template is checked before it is used ----------------------------------

PLANTED = [
    ("trigger", "CREATE TRIGGER t AFTER INSERT ON latest_metrics BEGIN UPDATE latest_metrics SET value = 0.999 "
                "WHERE run_uuid = NEW.run_uuid AND key = NEW.key; UPDATE metrics SET value = 0.999 WHERE "
                "run_uuid = NEW.run_uuid AND key = NEW.key; END;", "trigger 't' that is not one of MLflow's"),
    ("view", "CREATE VIEW v AS SELECT * FROM runs;", "view 'v'"),
    ("row", "INSERT INTO experiment_tags (key, value, experiment_id) VALUES ('owner', 'mallory', 0);",
     "table experiment_tags is not empty"),
    ("other-schema-version", "UPDATE alembic_version SET version_num = '0584bdc529eb';", "schema revision"),
    ("missing-table", "DROP TABLE trace_tags;", "missing ['trace_tags']"),
    ("extra-column", "ALTER TABLE runs ADD COLUMN note TEXT;", "table runs's columns differ"),
]


@pytest.mark.parametrize(("case", "sql", "needle"), PLANTED, ids=[c[0] for c in PLANTED])
def test_a_tampered_mlflow_store_template_is_not_used(tmp_path, capsys, monkeypatch, case, sql, needle):
    import mlflow
    from mlflow.tracking import MlflowClient

    from rag_bench.tracking import mlflow_tracker
    from rag_bench.tracking.store_seed import keep_template, template_path

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.setattr(mlflow_tracker, "_PARENTS", {})
    monkeypatch.setenv("RAG_BENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    first = tmp_path / "first.db"
    MlflowClient(tracking_uri=f"sqlite:///{first}").search_experiments()  # MLflow's own empty store...
    assert keep_template(first)  # ...kept, as the first sweep here keeps it
    template = template_path(mlflow.__version__)
    with contextlib.closing(sqlite3.connect(template)) as con, con:  # what a writer to a shared cache can do
        con.executescript(sql)
    out = tmp_path / "out"
    assert cli(["run", f"dataset.path={TINY}", f"output.root={out}"]) == 0, capsys.readouterr().err[-3000:]
    err = capsys.readouterr().err
    assert f"MLflow store template {template} not used" in err and needle in err, err[-3000:]
    (done,) = out.glob("default/*/DONE")
    metrics = json.loads((done.parent / "metrics.json").read_text())
    client = MlflowClient(tracking_uri=f"sqlite:///{out / 'mlflow.db'}")
    (run,) = [r for e in client.search_experiments() for r in client.search_runs([e.experiment_id])
              if r.data.tags.get("rag_bench.role") == "cell"]
    assert run.info.status == "FINISHED"
    assert run.data.metrics["generation.correct"] == pytest.approx(metrics["generation"]["correct"])
    assert run.data.metrics["retrieval.hit_at_5"] == pytest.approx(metrics["retrieval"]["hit@5"])
    assert 0.999 not in run.data.metrics.values()
    with contextlib.closing(sqlite3.connect(out / "mlflow.db")) as con:  # the store is MLflow's, nothing planted
        assert not con.execute("SELECT name FROM sqlite_master WHERE type = 'view' OR name IN ('t', 'v')").fetchall()


# --- 31. a SLURM request no node can hold is refused, not waited on ------------------------------

SLURM_GRID = ["chunker=fixed", "pipeline.k=3,5", "retriever=bm25", "generator=none", "tracking=none",
              f"dataset.path={TINY}", "experiment.name=grid"]


def _rag_bench(args: list[str], env: dict[str, str], cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(Path(sys.executable).parent / "rag-bench"), *args], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout, env={**env, "PYTHONPATH": str(REPO)})


def _jobs(env: dict[str, str]) -> set[str]:
    out = subprocess.run(["squeue", "-h", "-t", "all", "-o", "%A"], env=env, capture_output=True, text=True)
    return set(out.stdout.split())


@pytest.mark.slow
@pytest.mark.parametrize("command", ["run", "embed"])
def test_a_slurm_request_no_node_can_hold_is_refused_before_submission(slurm, tmp_path, command):  # noqa: F811
    # The fixture's node has 2 CPUs and 8000 MB; the preset asks 4 CPUs and 16 GB per task.
    env = {**slurm, "RAG_BENCH_CACHE": str(tmp_path / "cache")}
    before = _jobs(slurm)
    args = ["run", "-m"] if command == "run" else ["embed", "--shards", "1"]
    grid = SLURM_GRID if command == "run" else [*SLURM_GRID[:2], "retriever=dense", *SLURM_GRID[3:]]
    out = _rag_bench([*args, "+cluster=slurm", *grid, f"output.root={tmp_path / 'out'}"], env, tmp_path)
    assert out.returncode == 2, out.stdout[-2000:] + out.stderr[-3000:]
    assert ("SLURM partition 'debug' has no node for one task: its largest node has 2 CPUs and 8000 MB; the request "
            "asks 4 CPUs and 16384 MB per task") in out.stderr, out.stderr[-3000:]
    assert "fix: +cluster=slurm hydra.launcher.cpus_per_task=2 hydra.launcher.mem_gb=7" in out.stderr
    assert "Traceback" not in out.stderr and _jobs(slurm) == before  # nothing submitted
    assert not list((tmp_path / "out").glob("grid/*/DONE")) and not list((tmp_path / "out").glob("**/*.submitit"))


@pytest.mark.slow
def test_a_slurm_job_pending_for_a_reason_that_never_resolves_is_cancelled(slurm, tmp_path):  # noqa: F811
    # The request fits the node, but its time limit exceeds the partition's: SLURM accepts the job
    # and leaves it PENDING (Reason=PartitionTimeLimit) for ever.
    env = {**slurm, "RAG_BENCH_CACHE": str(tmp_path / "cache")}
    subprocess.run(["scontrol", "update", "PartitionName=debug", "MaxTime=5"], env=slurm, check=True)
    try:
        out = _rag_bench(["run", "-m", "+cluster=slurm", "hydra.launcher.cpus_per_task=1", "hydra.launcher.mem_gb=1",
                          "hydra.launcher.timeout_min=10", *SLURM_GRID, f"output.root={tmp_path / 'out'}"], env, tmp_path)
    finally:
        subprocess.run(["scontrol", "update", "PartitionName=debug", "MaxTime=UNLIMITED"], env=slurm, check=True)
    assert out.returncode == 2, out.stdout[-2000:] + out.stderr[-3000:]
    assert "can never start: pending with Reason=Partition" in out.stderr, out.stderr[-3000:]
    assert "it was cancelled -- fix:" in out.stderr and "Traceback" not in out.stderr
    array = out.stderr.split("SLURM array job ")[1].split()[0]
    states = subprocess.run(["squeue", "-h", "-t", "all", "-j", array, "-o", "%T"], env=slurm, capture_output=True,
                            text=True).stdout.split()
    assert states and set(states) <= {"CANCELLED"}, states
    assert not list((tmp_path / "out").glob("grid/*/DONE"))
