"""The rag_bench sweeper: stage-ordered grid, covering validation, the progress file."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

from hydra.core.override_parser.overrides_parser import OverridesParser

from rag_bench.runner.sweep_context import SweepContext
from rag_bench.runner.sweeper import Progress, covering_subset, expand, record_progress, stage_rank
from tests.conftest import TINY

BIN = Path(sys.executable).parent


def jobs(*args: str) -> list[list[str]]:
    return expand(OverridesParser.create().parse_overrides(list(args)))


def test_stages_outermost_whatever_the_typed_order():
    got = jobs("pipeline.k=3,5", "reranker=none,dense", "chunker=fixed,section", "tracking=none")
    assert len(got) == 8
    assert [j[0] for j in got] == ["chunker=fixed"] * 4 + ["chunker=section"] * 4
    assert [j[1] for j in got[:4]] == ["reranker=none", "reranker=none", "reranker=dense", "reranker=dense"]
    assert [j[-2] for j in got[:2]] == ["pipeline.k=3", "pipeline.k=5"]  # k innermost: its cells share rankings


def test_stage_keys_with_sub_keys_group_with_their_stage():
    assert stage_rank("chunker.max_chars") == stage_rank("chunker") < stage_rank("retriever") < stage_rank("eval.ks")


def test_covering_subset_covers_every_override_with_few_jobs():
    batch = jobs("chunker=a,b,c,d", "retriever=x,y,z", "reranker=n,d", "pipeline.k=1,2,3")
    subset = covering_subset(batch)
    assert {o for j in subset for o in j} == {o for j in batch for o in j}
    assert len(subset) <= 4 + 3 + 2 + 3 and len(batch) == 72


def test_progress_counts_lines_from_any_process(tmp_path):
    path = tmp_path / "progress.log"
    path.write_bytes(b"")
    sweep = SweepContext("s", progress=str(path))
    context = sweep.write(tmp_path)
    shown = io.StringIO()
    with Progress(path, total=3, disable=False, file=shown) as bar:
        record_progress(sweep, "done", "a")
        # Another process (a launcher's worker) finds the file through the sweep's context.
        subprocess.run([sys.executable, "-c", "from rag_bench.runner.sweeper import record_progress as r; "
                        "from rag_bench.runner.sweep_context import SweepContext as C; "
                        f"c = C.read({str(context)!r}); r(c, 'done', 'b'); r(c, 'failed', 'c')"],
                       check=True, env=os.environ.copy())
    assert bar.bar.n == 3 and "3/3" in shown.getvalue()
    assert path.read_text().splitlines() == ["done a", "done b", "failed c"]


def test_record_progress_outside_a_sweep_is_a_no_op(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    assert record_progress(SweepContext("s"), "done") is None  # nothing to write to, nothing raised
    assert list(tmp_path.iterdir()) == []  # and no file appeared anywhere it could have guessed
    # Inside a sweep the same call appends one line per cell: the no-op is the context without a file.
    progress = tmp_path / "progress.log"
    record_progress(SweepContext("s", progress=str(progress)), "done", "c1")
    record_progress(SweepContext("s", progress=str(progress)), "failed", "c2")
    assert progress.read_text() == "done c1\nfailed c2\n"


def test_a_misspelt_option_fails_before_any_cell(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
    done = subprocess.run([str(BIN / "rag-bench"), "run", "-m", "chunker=fixed,section", "pipeline.k=3,5",
                           "retriever=bm25,bm52", f"dataset.path={TINY}", f"output.root={tmp_path}",
                           "tracking=none"], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode != 0 and "bm52" in done.stderr
    assert not list(tmp_path.glob("default/*/DONE")), "validation runs before the first cell"


def test_slurm_launcher_config_composes(tmp_path):
    done = subprocess.run([str(BIN / "rag-bench"), "run", "hydra/launcher=slurm", "hydra.launcher.partition=cpu",
                           f"output.root={tmp_path}", "--cfg", "hydra", "--package", "hydra.launcher"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "SlurmLauncher" in done.stdout and "partition: cpu" in done.stdout
    assert "array_parallelism: 32" in done.stdout


def test_a_sweep_id_hydra_would_read_as_a_number_reaches_its_cells_as_written(tmp_path, monkeypatch):
    # A sweep id is 16 hex digits from the command line's hash; one of digits and a single 'e'
    # (582668e844564991) was read by Hydra as the float inf, and every cell of that sweep failed
    # looking for .hydra/sweep-inf.json (a test's tmp path happened to hash to one).
    from rag_bench.cli import main as cli
    from rag_bench.runner import sweep_context

    for sweep_id in ("582668e844564991", "0000000000000042"):
        monkeypatch.setattr(sweep_context, "sweep_id_from_argv", lambda experiment, argv, s=sweep_id: s)
        out = tmp_path / sweep_id
        assert cli(["run", "-m", f"dataset.path={TINY}", f"output.root={out}", "generator=none", "tracking=none",
                    "pipeline.k=3,5", "experiment.name=numeric"]) == 0
        assert (out / "numeric" / ".hydra" / f"sweep-{sweep_id}.json").is_file()
        assert len(list((out / "numeric").glob("*/DONE"))) == 2
