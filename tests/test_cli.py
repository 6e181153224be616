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
    assert "chunker/nope" in capsys.readouterr().err


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
