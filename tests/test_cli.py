"""Command-line surface: help, unknown commands, `chunks` output and stats."""

from __future__ import annotations

import json

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
