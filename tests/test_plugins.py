"""Plugins: any importable class can be a component; its shape is checked before any work.

The example plugin (examples/rag_bench_example_plugin) is put on the path and swept beside the
built-in BM25; a plugin written here that lacks a protocol method is refused, naming it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, TINY

BIN = Path(sys.executable).parent / "rag-bench"
EXAMPLES = REPO / "examples"


def _run(args: list[str], pythonpath: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(pythonpath), "TQDM_DISABLE": "1"}
    env.pop("MLFLOW_TRACKING_URI", None)
    return subprocess.run([str(BIN), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def test_the_example_plugin_is_swept_beside_built_in_components(tmp_path):
    out = tmp_path / "out"
    done = _run(["run", "-m", "chunker=section,lc_markdown", "retriever=bm25,char_ngram",
                 "hydra.searchpath=[pkg://rag_bench_example_plugin.conf]",
                 f"dataset.path={TINY}", "tracking=none", f"output.root={out}", "generator=none",
                 "experiment.name=plugins"], EXAMPLES, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    board = _run(["leaderboard", str(out / "plugins")], EXAMPLES, tmp_path)
    assert board.returncode == 0 and " bm25 " in board.stdout and " char_ngram " in board.stdout
    assert "lc_markdown" in board.stdout and "section" in board.stdout
    configs = sorted((out / "plugins").glob("*/config.yaml"))
    assert len(configs) == 4
    assert any("_target_: rag_bench_example_plugin.retriever.CharNgramRetriever" in c.read_text() for c in configs)


PLUGIN = '''
from rag_bench.domain import Ranking


class NoSearch:
    """Has fit, forgot search."""

    def __init__(self, depth: int = 3) -> None:
        self.depth = depth

    def fit(self, chunks):
        self.n = len(chunks)


class First:
    """Returns the first chunks, whatever the question (a retriever that never learned)."""

    def __init__(self, offset: int = 0) -> None:
        self.offset = offset

    def fit(self, chunks):
        self.n = len(chunks)

    def search(self, questions, depth, access):
        ids = tuple(range(self.offset, min(self.n, self.offset + depth)))
        return [Ranking(q.qid, ids, tuple(float(-i) for i in range(len(ids)))) for q in questions]
'''


def _plugin(root: Path) -> Path:
    pkg = root / "myplugin"
    (pkg / "conf" / "retriever").mkdir(parents=True)
    (pkg / "__init__.py").write_text(PLUGIN)
    for name, body in (("no_search", "_target_: myplugin.NoSearch\n"), ("first", "_target_: myplugin.First\noffset: 0\n")):
        (pkg / "conf" / "retriever" / f"{name}.yaml").write_text(f"name: {name}\n{body}")
    return root


def test_a_plugin_missing_a_protocol_method_is_refused_naming_it(tmp_path):
    root = _plugin(tmp_path / "src")
    out = tmp_path / "out"
    done = _run(["run", "retriever=no_search", f"hydra.searchpath=[file://{root / 'myplugin' / 'conf'}]",
                 f"dataset.path={TINY}", "tracking=none", f"output.root={out}"], root, tmp_path)
    assert done.returncode == 2
    assert "retriever._target_ 'myplugin.NoSearch' does not implement the retriever stage: missing search" in done.stderr
    assert "Traceback" not in done.stderr and not list(out.glob("*/*/DONE"))


def test_plugins_with_other_parameters_never_share_a_cell(tmp_path):
    root = _plugin(tmp_path / "src")
    out = tmp_path / "out"
    done = _run(["run", "-m", "retriever=first", "retriever.offset=0,2", f"hydra.searchpath=[file://{root}/myplugin/conf]",
                 f"dataset.path={TINY}", "tracking=none", f"output.root={out}", "generator=none"], root, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    runs = sorted((out / "default").glob("*/run.trec"))
    assert len(runs) == 2 and runs[0].read_text() != runs[1].read_text()


@pytest.mark.parametrize("target", ["os.system", "subprocess.Popen", "builtins.dict"])
def test_a_target_that_is_no_component_is_refused(tmp_path, target):
    done = _run(["run", f"retriever._target_={target}", f"dataset.path={TINY}", "tracking=none",
                 f"output.root={tmp_path / 'out'}"], tmp_path, tmp_path)
    assert done.returncode == 2 and "retriever._target_" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").rglob("DONE"))
