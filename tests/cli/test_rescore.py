"""``rag-bench rescore CELL eval.*=...`` through the real command (issue 51, item 4): a cell scored
again from the run it stored equals the cell a fresh run with those settings makes (metrics,
records, TREC files; timings aside), and a stored run it cannot read is refused with exit 2, a
message naming the file and the fix, and nothing written."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import TINY

BIN = Path(sys.executable).parent
TIMING = ("_s", "_ms", "latency")


def _cli(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
    env.update(RAG_BENCH_CACHE=str(tmp / "cache"), TQDM_DISABLE="1")
    return subprocess.run([str(BIN / "rag-bench"), *args], cwd=tmp, env=env, capture_output=True, text=True,
                          timeout=600)


def _run(tmp: Path, root: Path, *overrides: str) -> Path:
    done = _cli(tmp, "run", f"dataset.path={TINY}", "tracking=none", "generator=extractive", f"output.root={root}",
                "experiment.name=e", *overrides)
    assert done.returncode == 0, done.stderr[-3000:]
    (cell,) = [p.parent for p in (root / "e").glob("*/DONE")]
    return cell


def _flat(tree: object, prefix: str = "") -> dict[str, object]:
    if isinstance(tree, dict):
        return {k: v for key, sub in tree.items() for k, v in _flat(sub, f"{prefix}/{key}").items()}
    return {prefix: tree}


def _untimed(cell: Path) -> dict[str, object]:
    return {k: v for k, v in _flat(json.loads((cell / "metrics.json").read_text())).items()
            if not k.split("/")[-1].endswith(TIMING) and not k.startswith("/latency")}


@pytest.fixture(scope="module")
def cell(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("rescore")
    return _run(tmp, tmp / "stored")


@pytest.mark.slow
def test_a_cell_rescored_with_exponential_gain_equals_a_fresh_run(cell, tmp_path):
    done = _cli(tmp_path, "rescore", str(cell), "eval.gain=exponential")
    assert done.returncode == 0, done.stderr[-3000:]
    rescored = Path(done.stdout.strip().removeprefix("wrote "))
    assert rescored.parent == cell.parent and rescored != cell and (rescored / "DONE").is_file()
    fresh = _run(tmp_path, tmp_path / "fresh", "eval.gain=exponential")
    assert rescored.name == fresh.name  # the cell id of those settings
    a, b = _untimed(rescored), _untimed(fresh)
    assert a.keys() == b.keys()
    assert [k for k in a if a[k] != b[k] and not (isinstance(a[k], float) and math.isclose(a[k], b[k]))] == []
    assert _untimed(rescored) != _untimed(cell)  # the gain changed something (nDCG)
    ra, rb = pd.read_parquet(rescored / "records.parquet"), pd.read_parquet(fresh / "records.parquet")
    kept = [c for c in ra.columns if not c.endswith(TIMING)]
    pd.testing.assert_frame_equal(ra[kept], rb[kept])
    for trec in ("run.trec", "qrels.trec"):
        assert (rescored / trec).read_text() == (fresh / trec).read_text()


@pytest.mark.parametrize(("edit", "message"), [
    (lambda text: text.replace('"version": 2', '"version": 7', 1), "version 7: this rag_bench reads versions 1 and 2"),
    (lambda text: text.splitlines()[0].replace('"version": 2', '"version": 1') + "\n"
     + "\n".join(text.splitlines()[3:]) + "\n", "version 1: holds a halving round's question runs only"),
    (None, "missing: the cell was written before cells stored their run"),
], ids=["unknown-version", "version-1", "missing"])
def test_a_stored_run_it_cannot_read_is_refused_with_a_fix(cell, tmp_path, edit, message):
    copy = tmp_path / "e" / cell.name
    copy.parent.mkdir()
    subprocess.run(["cp", "-r", str(cell), str(copy)], check=True)
    stored = copy / "question-runs.jsonl"
    if edit is None:
        stored.unlink()
    else:
        stored.write_text(edit(stored.read_text()))
    done = _cli(tmp_path, "rescore", str(copy), "eval.gain=exponential")
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"error: {stored}: ") and message in done.stderr and "-- fix: run the cell again" \
        in done.stderr, done.stderr
    assert sorted(p.name for p in copy.parent.iterdir()) == [cell.name]  # nothing written


def test_an_override_outside_eval_is_refused(cell, tmp_path):
    done = _cli(tmp_path, "rescore", str(cell), "pipeline.k=3")
    assert done.returncode == 2 and "rescore changes eval.* settings only" in done.stderr, done.stderr


def test_nothing_to_change_is_refused_and_a_rescore_done_before_says_nothing_was_written(cell, tmp_path):
    """No override, or only the cell's own settings: exit 2 with a fix (it said 'already done, skipping'
    then 'wrote <the same cell>'); a rescore repeated says it wrote nothing (it said 'wrote')."""
    copy = tmp_path / "e" / cell.name
    copy.parent.mkdir()
    subprocess.run(["cp", "-r", str(cell), str(copy)], check=True)
    for args in ([], ["eval.gain=linear"]):
        done = _cli(tmp_path, "rescore", str(copy), *args)
        assert done.returncode == 2 and "-- fix:" in done.stderr and "wrote" not in done.stdout, done.stderr
        assert "no eval.* setting to change" in done.stderr if not args else "the cell's own settings" in done.stderr
        assert sorted(p.name for p in copy.parent.iterdir()) == [cell.name]  # nothing written
    first = _cli(tmp_path, "rescore", str(copy), "eval.gain=exponential")
    assert first.returncode == 0 and first.stdout.startswith("wrote "), first.stderr
    again = _cli(tmp_path, "rescore", str(copy), "eval.gain=exponential")
    assert again.returncode == 0 and "rescored with these settings before (nothing written)" in again.stdout
    assert "wrote" not in again.stdout


def test_a_run_id_or_a_missing_folder_is_refused_without_offering_a_run_id(tmp_path, capsys):
    """rescore reads the folder's stored run: its messages offered 'or an MLflow run id' / 'or a
    32-character run id', and a run id then failed with the same message."""
    from rag_bench.cli.main import main

    for ref in ("0123456789abcdef0123456789abcdef", str(tmp_path / "nope")):
        assert main(["rescore", ref, "eval.gain=exponential"]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"error: {ref} ") and "-- fix: pass" in err and "an MLflow run id is not enough" in err
        assert "or an MLflow run id" not in err and "or a 32-character run id" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_an_eval_key_without_a_value_is_told_to_give_one(tmp_path, capsys):
    """'rescore CELL eval.gain' was told 'rescore changes eval.* settings only' -- it is one."""
    from rag_bench.cli.main import main

    assert main(["rescore", str(tmp_path), "eval.gain"]) == 2
    err = capsys.readouterr().err
    assert "'eval.gain' has no value -- fix: eval.gain=VALUE" in err and "settings only" not in err


def test_experiment_keeps_the_rescored_cell_apart_and_without_it_a_note_says_why(cell, tmp_path):
    """Rescored beside its cell, the experiment's leaderboard is refused ('retrieval/ndcg@10 is not the
    same measure in these cells') and nothing had said so: rescore now notes it, and --experiment NAME
    writes the new cell to an experiment of its own, leaving the original rankable."""
    copy = tmp_path / "e" / cell.name
    copy.parent.mkdir()
    subprocess.run(["cp", "-r", str(cell), str(copy)], check=True)
    apart = _cli(tmp_path, "rescore", str(copy), "eval.gain=exponential", "--experiment", "e-gain")
    assert apart.returncode == 0 and "note:" not in apart.stderr, apart.stderr
    written = Path(apart.stdout.splitlines()[0].removeprefix("wrote "))
    assert written.parent == tmp_path / "e-gain" and (written / "DONE").is_file()
    assert sorted(p.name for p in copy.parent.iterdir()) == [cell.name]
    assert _cli(tmp_path, "leaderboard", str(copy.parent)).returncode == 0
    beside = _cli(tmp_path, "rescore", str(copy), "eval.gain=exponential")
    assert beside.returncode == 0, beside.stderr
    assert "now holds cells scored with other eval.gain" in " ".join(beside.stderr.split())
    assert "--experiment NAME" in beside.stderr
    helped = _cli(tmp_path, "rescore", "--help").stdout
    assert "--experiment NAME" in helped and all(len(line) <= 120 for line in helped.splitlines()), helped
