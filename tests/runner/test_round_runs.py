"""The question runs a halving round leaves in a cell folder (``round-runs.pickle``) are loaded
only when this machine's runner signed them: an experiment folder travels (CI artifacts, a
colleague's copy), and unpickling runs whatever code the file names."""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from types import SimpleNamespace

from omegaconf import OmegaConf

from rag_bench.runner import main, rounds


class Planted:
    """Unpickling this creates a file: the proof that a pickle from the folder was executed."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def partial_folder(tmp_path: Path, blob: bytes) -> Path:
    cell = tmp_path / "exp" / "abc123"
    cell.mkdir(parents=True)
    (cell / rounds.PARTIAL).write_text(json.dumps({"seed": 0, "dataset_fingerprint": "fp", "fraction": 0.25,
                                                   "questions_digest": rounds.questions_digest(["q1"])}))
    (cell / main.ROUND_RUNS).write_bytes(blob)
    return cell


def test_a_pickle_planted_in_a_cell_folder_is_not_loaded(tmp_path, monkeypatch):
    monkeypatch.setenv("RAG_BENCH_CACHE", str(tmp_path / "cache"))
    proof = tmp_path / "executed"
    cell = partial_folder(tmp_path, pickle.dumps((Planted(str(proof)),)))
    cfg = OmegaConf.create({"search": {"seed": 0}})
    assert main._prior_round(cfg, SimpleNamespace(fingerprint="fp"), cell) is None  # type: ignore[arg-type]
    assert not proof.exists()


def test_runs_round_trip_under_this_machines_key_and_not_under_another(tmp_path, monkeypatch):
    monkeypatch.setenv("RAG_BENCH_CACHE", str(tmp_path / "mine"))
    cell = tmp_path / "cell"
    cell.mkdir()
    main._write_runs(cell, ("q1-run",))  # type: ignore[arg-type]
    assert main._read_runs(cell) == ("q1-run",)
    key = tmp_path / "mine" / "round-runs.key"
    assert len(key.read_bytes()) == 32 and key.stat().st_mode & 0o077 == 0
    monkeypatch.setenv("RAG_BENCH_CACHE", str(tmp_path / "theirs"))  # another machine's key
    try:
        main._read_runs(cell)
    except ValueError as exc:
        assert "not signed" in str(exc)
    else:
        raise AssertionError("a pickle signed under another key was loaded")


def test_an_empty_key_file_is_replaced_so_nobody_can_sign_with_the_empty_key(tmp_path, monkeypatch):
    import hashlib
    import hmac

    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "round-runs.key").write_bytes(b"")  # a key file left empty (a crash between create and write)
    monkeypatch.setenv("RAG_BENCH_CACHE", str(cache))
    proof = tmp_path / "executed"
    data = pickle.dumps((Planted(str(proof)),))
    cell = partial_folder(tmp_path, hmac.new(b"", data, hashlib.sha256).digest() + data)  # forged with the empty key
    cfg = OmegaConf.create({"search": {"seed": 0}})
    assert main._prior_round(cfg, SimpleNamespace(fingerprint="fp"), cell) is None  # type: ignore[arg-type]
    assert not proof.exists() and len((cache / "round-runs.key").read_bytes()) == 32


def test_a_symlinked_round_runs_file_is_not_followed(tmp_path, monkeypatch):
    monkeypatch.setenv("RAG_BENCH_CACHE", str(tmp_path / "cache"))
    source = tmp_path / "elsewhere"
    source.mkdir()
    main._write_runs(source, ("q1-run",))  # type: ignore[arg-type]
    cell = partial_folder(tmp_path, b"")
    (cell / main.ROUND_RUNS).unlink()
    (cell / main.ROUND_RUNS).symlink_to(source / main.ROUND_RUNS)
    try:
        main._read_runs(cell)
    except ValueError as exc:
        assert "not a regular file" in str(exc)
    else:
        raise AssertionError("a symlinked round-runs file was read")
