"""Command-line surface: help, unknown commands, `chunks` output and stats."""

from __future__ import annotations

import json

import pytest

from rag_bench.cli import main as cli
from tests.conftest import TINY


def test_help_and_unknown_command(capsys):
    assert cli(["--help"]) == 0
    out = capsys.readouterr().out
    for cmd in ("run", "validate", "chunks", "score-run", "compare", "report", "gate", "sync"):
        assert cmd in out
    assert cli(["frobnicate"]) == 2
    assert "unknown command 'frobnicate'" in capsys.readouterr().err
    assert cli([]) == 2


def test_chunks_prints_json_lines_and_stats(capsys):
    assert cli(["chunks", str(TINY), "chunker=fixed", "chunker.size=80", "chunker.overlap=10"]) == 0
    captured = capsys.readouterr()
    rows = [json.loads(line) for line in captured.out.splitlines()]
    docs = {p.stem: p.read_text() for p in (TINY / "docs").glob("*.md")}
    assert rows and all(docs[r["doc_id"]][r["start"]:r["end"]] == r["text"] for r in rows)
    assert f"count={len(rows)}" in captured.err and "median=" in captured.err and "tiny(<50)=" in captured.err


def test_chunks_bad_chunker(capsys):
    assert cli(["chunks", str(TINY), "chunker=nope"]) == 2
    assert "chunker has no option 'nope'" in capsys.readouterr().err


@pytest.mark.parametrize("args", [["run", "chunker=secton"], ["run", "-m", "chunker=fixed,secton"],
                                  ["chunks", str(TINY), "chunker=secton"]], ids=["run", "sweep", "chunks"])
def test_misspelt_option_gets_a_did_you_mean_on_one_line(capsys, tmp_path, monkeypatch, args):
    """A misspelt option of a config group is named with the closest option, as a misspelt key is."""
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)  # the store would be <output.root>/mlflow.db
    assert cli([*args, f"output.root={tmp_path}"] if args[0] == "run" else args) == 2
    err = capsys.readouterr().err
    # Nothing before the error: a sweep validates its grid before it opens the MLflow store (whose
    # table creation on a new store MLflow logs through its own handler), so no store is created.
    assert not (tmp_path / "mlflow.db").exists()
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith("error: configuration: chunker=secton: chunker has no option 'secton'"), err
    assert "did you mean chunker=section?" in err and "semchunk" in err, err


def test_an_option_with_nothing_close_lists_the_options(capsys, tmp_path):
    assert cli(["run", "retriever=zzzz", f"output.root={tmp_path}"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "did you mean" not in err, err
    assert "use one of retriever's options: bm25, dense, hybrid" in err, err


def test_two_hydra_modes_are_a_clear_error(capsys):
    assert cli(["run", "--cfg", "job", "-m", "chunker=fixed,section"]) == 2
    err = capsys.readouterr().err
    assert "--cfg and --multirun cannot be combined" in err and "Traceback" not in err


def test_the_console_script_leaves_a_run_through_atexit_and_os_exit(monkeypatch, tmp_path):
    import atexit
    import os
    import sys

    from rag_bench import cli as module

    calls: list = []

    def exit_now(code):
        calls.append(("os._exit", code))
        raise SystemExit(code)

    monkeypatch.setattr(atexit, "_run_exitfuncs", lambda: calls.append("atexit handlers"))
    monkeypatch.setattr(os, "_exit", exit_now)
    run = ["rag-bench", "run", "tracking=none", "generator=none", f"dataset.path={TINY}", f"output.root={tmp_path}"]
    monkeypatch.setattr(sys, "argv", list(run))
    with pytest.raises(SystemExit):
        module.entry()
    assert calls == ["atexit handlers", ("os._exit", 0)]
    assert list(tmp_path.glob("default/*/DONE"))
    calls.clear()
    import threading

    release = threading.Event()
    worker = threading.Thread(target=release.wait)  # a thread the interpreter would join: the normal exit
    worker.start()
    monkeypatch.setattr(sys, "argv", list(run))  # (the cell is done: skipped)
    try:
        with pytest.raises(SystemExit) as info:
            module.entry()
    finally:
        release.set()
        worker.join()
    assert calls == [] and info.value.code == 0
    monkeypatch.setattr(sys, "argv", ["rag-bench", "validate", str(TINY)])  # other commands: the normal exit
    with pytest.raises(SystemExit) as info:
        module.entry()
    assert calls == [] and info.value.code == 0


def test_stores_closed_at_exit_leave_no_wal(tmp_path):
    from rag_bench.storage import BlobStore, close_all

    store = BlobStore(tmp_path / "x.sqlite")
    store.put_bytes([("k", b"v")])
    assert (tmp_path / "x.sqlite-wal").exists()
    close_all()
    assert not (tmp_path / "x.sqlite-wal").exists() and store._local.conn is None


def test_every_command_module_is_in_the_table_and_the_usage():
    """A command is one module of rag_bench/cli with a COMMAND; the usage text is made from the table."""
    import importlib
    import pkgutil

    import rag_bench.cli as package
    from rag_bench.cli.main import COMMANDS, USAGE

    helpers = {"common", "table", "main", "__main__"}
    modules = [m.name for m in pkgutil.iter_modules(package.__path__) if m.name not in helpers]
    declared = {importlib.import_module(f"rag_bench.cli.{m}").COMMAND.name for m in modules}
    assert declared == {c.name for c in COMMANDS} and len(COMMANDS) == len(modules)
    for c in COMMANDS:
        assert f"  {c.name} {c.synopsis}" in USAGE and c.summary.split()[0] in USAGE


def test_chunks_go_through_the_sweeps_chunking_stage(capsys, monkeypatch):
    """`chunks` chunks as a cell does (the pipeline's stage, its contracts checked)."""
    from rag_bench.pipeline import contracts

    checked = []
    real = contracts.check_chunks
    monkeypatch.setattr(contracts, "check_chunks", lambda *a, **k: checked.append(1) or real(*a, **k))
    assert cli(["chunks", str(TINY), "chunker=section", "--stats-only"]) == 0
    assert checked == [1] and "stats: chunker=section" in capsys.readouterr().err


def test_compare_baseline_is_in_the_usage_and_the_readme():
    """`compare EXPERIMENT_DIR --baseline CELL` was in neither `rag-bench --help` nor the README (issue 56)."""
    import subprocess
    import sys
    from pathlib import Path

    from tests.conftest import REPO

    done = subprocess.run([str(Path(sys.executable).parent / "rag-bench"), "--help"], capture_output=True, text=True,
                          timeout=120)
    (line,) = [row for row in done.stdout.splitlines() if row.strip().startswith("compare ")]
    assert "--baseline CELL" in line, line
    commands = (REPO / "README.md").read_text(encoding="utf-8").split("## Commands", 1)[1]
    assert "rag-bench compare EXPERIMENT_DIR [A B | --baseline CELL]" in commands
