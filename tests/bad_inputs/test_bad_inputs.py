"""Hostile inputs through the real command line (in process): every case must exit with the
documented code, name the file:line and/or field, and leave nothing behind — no cell folder, no
DONE marker, no MLflow run left RUNNING."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from rag_bench.cli import main as cli
from tests.conftest import TINY
from tests.servers import free_port


def copy_tiny(tmp: Path) -> Path:
    root = tmp / "ds"
    shutil.copytree(TINY, root)
    return root


def edit_questions(root: Path, fn: Callable[[list[dict]], None]) -> None:
    qs = [json.loads(x) for x in (root / "questions.jsonl").read_text().splitlines() if x.strip()]
    fn(qs)
    (root / "questions.jsonl").write_text("\n".join(json.dumps(q) for q in qs) + "\n")


def append_line(path: Path, line: str) -> None:
    with open(path, "a") as fh:
        fh.write(line + "\n")


# (id, how to break the dataset (or None), extra overrides, expected exit, needles in stderr)
DATASET_CASES = [
    ("unknown-doc-id", lambda r: edit_questions(r, lambda q: q[0]["evidence"][0].update(doc_id="ghost")),
     ["questions.jsonl:1:", "[evidence[0].doc_id]", "unknown document 'ghost'"]),
    ("missing-quote", lambda r: edit_questions(r, lambda q: q[0]["evidence"][0].update(quote="no such words")),
     ["questions.jsonl:1:", "[evidence[0].quote]", "quote not found"]),
    ("ambiguous-quote", lambda r: edit_questions(r, lambda q: q[1]["evidence"][0].update(quote="plan")),
     ["questions.jsonl:2:", "ambiguous"]),
    ("duplicate-question-id", lambda r: edit_questions(r, lambda q: q[2].update(id="q1")),
     ["questions.jsonl:3:", "[id]", "duplicate question id 'q1'"]),
    ("overlapping-duplicate-doc-ids", lambda r: (r / "docs" / "billing.txt").write_text("Another billing doc.\n"),
     ["billing.txt", "[doc_id]", "duplicate document id 'billing'"]),
    ("duplicate-doc-metadata", lambda r: append_line(r / "docs.jsonl", json.dumps({"doc_id": "billing"})),
     ["docs.jsonl:4:", "duplicate entry"]),
    ("empty-corpus", lambda r: [p.unlink() for p in (r / "docs").glob("*")],
     ["no documents"]),
    ("empty-document", lambda r: (r / "docs" / "blank.md").write_text("\n \n"),
     ["blank.md", "document is empty"]),
    ("non-utf8-bytes", lambda r: (r / "docs" / "latin.md").write_bytes(b"# T\n\nna\xefve caf\xe9\n"),
     ["latin.md:3:", "not valid UTF-8"]),
    ("malformed-json-line", lambda r: append_line(r / "questions.jsonl", '{"id": "q9", "question": "x",'),
     ["questions.jsonl:7:", "malformed JSON"]),
    ("wrong-type", lambda r: edit_questions(r, lambda q: q[0].update(answerable="yes")),
     ["questions.jsonl:1:", "[answerable]", "must be true or false"]),
    ("missing-field", lambda r: edit_questions(r, lambda q: q[1].pop("question")),
     ["questions.jsonl:2:", "[question]", "missing"]),
    ("answerable-without-evidence", lambda r: edit_questions(r, lambda q: q[0].update(evidence=[])),
     ["[evidence]", "answerable question without evidence"]),
    ("unknown-section", lambda r: edit_questions(r, lambda q: q[0]["evidence"][0].update(section="Nowhere")),
     ["[evidence[0].section]", "no section 'Nowhere'"]),
    ("span-out-of-range", lambda r: edit_questions(
        r, lambda q: q[0]["evidence"].__setitem__(0, {"doc_id": "billing", "start": 10, "end": 10**6})),
     ["[evidence[0].start/end]", "outside document"]),
    ("asker-cannot-read-evidence", lambda r: edit_questions(
        r, lambda q: q[2].update(asker={"tenant": "acme", "groups": ["customers"]})),
     ["questions.jsonl:3:", "may not read document 'security'"]),
    ("bad-status", lambda r: append_line(r / "docs.jsonl", json.dumps({"doc_id": "x", "status": "old"})),
     ["docs.jsonl:4:", "[status]"]),
    ("missing-questions-file", lambda r: (r / "questions.jsonl").unlink(),
     ["questions.jsonl", "missing"]),
    ("bom-in-jsonl-line-middle", lambda r: append_line(r / "questions.jsonl", "\ufeff{}"),
     ["questions.jsonl:7:", "malformed JSON"]),
]

CONFIG_CASES = [
    ("unknown-group-value", ["chunker=fixd"], 2, ["chunker has no option 'fixd'", "did you mean chunker=fixed?"]),
    ("typo-key", ["eval.kss=[1]"], 2, ["eval.kss", "no such key", "valid keys of eval: ks,", "did you mean eval.ks?"]),
    ("typo-component-key", ["chunker=fixed", "chunker.sise=3"], 2,
     ["chunker.sise", "valid keys of chunker: size, overlap", "did you mean chunker.size?"]),
    ("nan-coverage", ["eval.min_coverage=nan"], 2, ["eval.min_coverage"]),
    ("negative-size", ["chunker=fixed", "chunker.size=-5"], 2, ["chunker.size", ">= 1"]),
    ("k-zero", ["pipeline.k=0"], 2, ["pipeline.k must be > 0"]),
    ("ks-zero", ["eval.ks=[0,5]"], 2, ["eval.ks"]),
    ("wrong-type-key", ["pipeline.k=five"], 2, ["pipeline.k", "Integer"]),
    ("unknown-component-param", ["+chunker.sise=3"], 2, ["chunker.sise is not a parameter", "did you mean chunker.size"]),
    ("wrong-type-component-param", ["chunker.size=lots"], 2, ["chunker.size must be int"]),
    ("renamed-key", ["chunker.max_chars=600"], 2, ["chunker.max_chars was renamed: chunker.size"]),
    ("target-is-a-function", ["chunker._target_=os.system"], 2, ["chunker._target_", "not a class"]),
    ("target-not-importable", ["chunker._target_=no_such_pkg.Chunker"], 2, ["cannot be imported", "PYTHONPATH"]),
    ("target-not-a-dotted-path", ["chunker._target_='os.system; rm'"], 2, ["must be the dotted path of a class"]),
    ("negative-resamples", ["eval.bootstrap_resamples=-1"], 2, ["eval.bootstrap_resamples"]),
    ("missing-cross-encoder-model", ["reranker=cross_encoder"], 2, ["reranker.model must be set"]),
    ("generator-without-url", ["generator=openai"], 2, ["generator.base_url is not set"]),
]


def nothing_left(out: Path) -> None:
    assert not list(out.glob("*/*/DONE")), "a cell was marked done"
    assert not [p for p in out.glob("*/*") if not p.name.startswith(".")], "a (partial) cell folder was left"
    db = out / "mlflow.db"
    if db.exists():
        from mlflow.tracking import MlflowClient

        client = MlflowClient(tracking_uri=f"sqlite:///{db}")
        for exp in client.search_experiments():
            runs = client.search_runs([exp.experiment_id])
            assert not [r for r in runs if r.info.status == "RUNNING"], "an MLflow run was left RUNNING"
            assert not [r for r in runs if r.data.tags.get("rag_bench.role") == "cell"], "a cell run was logged"


def run_refused(root: Path, out: Path, capsys: pytest.CaptureFixture[str], needles: list[str]) -> str:
    """`run` on a broken dataset exits 2 naming every needle, leaves nothing in ``out``, and
    `validate` refuses the same dataset; returns run's stderr."""
    code = cli(["run", f"dataset.path={root}", f"output.root={out}"])
    err = capsys.readouterr().err
    assert code == 2, err[-3000:]
    for needle in needles:
        assert needle in err, (needle, err[-3000:])
    nothing_left(out)
    assert cli(["validate", str(root)]) == 2  # what validate accepts, run handles; and the reverse
    return err


@pytest.mark.parametrize(("case", "breaker", "needles"), DATASET_CASES, ids=[c[0] for c in DATASET_CASES])
def test_bad_dataset(tmp_path, capsys, case, breaker, needles):
    root = copy_tiny(tmp_path)
    breaker(root)
    assert "fix:" in run_refused(root, tmp_path / "out", capsys, needles)


@pytest.mark.parametrize(("case", "overrides", "code", "needles"), CONFIG_CASES, ids=[c[0] for c in CONFIG_CASES])
def test_bad_config(tmp_path, capsys, case, overrides, code, needles):
    out = tmp_path / "out"
    got = cli(["run", f"dataset.path={TINY}", f"output.root={out}", *overrides])
    err = capsys.readouterr().err
    assert got == code, err
    for needle in needles:
        assert needle in err, (needle, err)
    nothing_left(out)


def test_unreachable_mlflow_server(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"http://127.0.0.1:{free_port()}")
    out = tmp_path / "out"
    assert cli(["run", f"dataset.path={TINY}", f"output.root={out}"]) == 2
    err = capsys.readouterr().err
    assert "tracking server" in err and "unreachable" in err and "tracking.required=false" in err
    nothing_left(out)


def test_unwritable_output_folder(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert cli(["run", f"dataset.path={TINY}", f"output.root={blocker / 'sub'}"]) == 2
    err = capsys.readouterr().err
    assert "output.root: cannot write" in err and "fix:" in err
    assert not (blocker / "sub").exists()


DISK_FULL = """
import resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a full disk fails writes; it does not kill
resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, 20_000))
from rag_bench.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_disk_full_keeps_no_partial_cell(tmp_path):
    # Files over 20 kB cannot be written (EFBIG), as on a full disk: records.parquet of the demo
    # set is larger, so the cell fails mid-write.
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-c", DISK_FULL, "run", f"output.root={out}", "tracking=none",
                           "generator=none"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "cannot write cell" in done.stderr and "no partial cell was kept" in done.stderr
    nothing_left(out)
    assert not list(out.rglob(".*tmp-*")), "temporary folder left behind"


@pytest.mark.parametrize("tracking", ["none", "mlflow"])
def test_disk_full_in_a_sweep_keeps_no_partial_cell(tmp_path, tracking):
    """In a sweep the cell is written by the background process (rag_bench.tracking.background),
    which inherits the limit: the same error, exit 2, nothing half-written, no cell run logged."""
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-c", DISK_FULL, "run", "-m", "chunker=fixed,section",
                           f"output.root={out}", f"tracking={tracking}", "generator=none"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "cannot write cell" in done.stderr and "no partial cell was kept" in done.stderr, done.stderr[-2000:]
    nothing_left(out)
    assert not list(out.rglob(".*tmp-*")), "temporary folder left behind"


def test_unreachable_generator_is_recorded_not_fatal(tmp_path, capsys):
    out = tmp_path / "out"
    code = cli(["run", f"dataset.path={TINY}", f"output.root={out}", "tracking=none", "generator=openai",
                f"generator.base_url=http://127.0.0.1:{free_port()}/v1", "generator.max_retries=0"])
    assert code == 0
    (metrics,) = [json.loads(p.read_text()) for p in out.glob("*/*/metrics.json")]
    assert metrics["counts"]["endpoint_failures"] == metrics["counts"]["endpoint_calls"] == 6
    assert metrics["failures"]["error"] == 6 and metrics["n"]["generation/correct"] == 0


def test_bom_crlf_and_ten_megabyte_single_line_document(tmp_path, capsys):
    root = copy_tiny(tmp_path)
    path = root / "docs" / "billing.md"
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes().replace(b"\n", b"\r\n"))
    (root / "docs" / "huge.txt").write_text("spare parts catalogue entry " * 360_000)  # ~10 MB, one line
    out = tmp_path / "out"
    for chunker in ("fixed", "sentence", "recursive", "section"):
        assert cli(["run", f"dataset.path={root}", f"output.root={out}", "tracking=none", "generator=none",
                    f"chunker={chunker}"]) == 0, capsys.readouterr().err
    cells = list(out.glob("*/*/DONE"))
    assert len(cells) == 4
    for done in cells:
        m = json.loads((done.parent / "metrics.json").read_text())
        assert m["retrieval"]["hit@10"] == 1.0 and m["counts"]["documents"] == 4


def test_k_larger_than_the_corpus(tmp_path, capsys):
    out = tmp_path / "out"
    assert cli(["run", f"dataset.path={TINY}", f"output.root={out}", "tracking=none", "pipeline.k=500",
                "eval.ks=[1,1000]"]) == 0, capsys.readouterr().err
    (done,) = out.glob("*/*/DONE")
    m = json.loads((done.parent / "metrics.json").read_text())
    lines = (done.parent / "run.trec").read_text().splitlines()
    per_q = max(sum(1 for x in lines if x.split()[0] == q) for q in {x.split()[0] for x in lines})
    assert m["counts"]["depth"] == 1000 and per_q == m["counts"]["searchable_chunks"]  # all, not padded
    assert not math.isnan(m["retrieval"]["recall@1000"])


def test_bad_gate_policy_cannot_evaluate(tmp_path, capsys):
    out = tmp_path / "out"
    assert cli(["run", f"dataset.path={TINY}", f"output.root={out}", "tracking=none"]) == 0
    (done,) = out.glob("*/*/DONE")
    policy = tmp_path / "p.yaml"
    policy.write_text("thresholds:\n  retrieval/hit@5: {min: nan}\n")
    assert cli(["gate", str(done.parent), "--policy", str(policy)]) == 2
    assert "p.yaml:2: [retrieval/hit@5]" in capsys.readouterr().err
