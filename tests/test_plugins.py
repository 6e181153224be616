"""Plugins: any importable class can be a component; its shape is checked before any work.

The example plugin (examples/rag_bench_example_plugin) is put on the path and swept beside the
built-in BM25; a plugin written here that lacks a protocol method is refused, naming it.
"""

from __future__ import annotations

import json
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


PARSER_PLUGIN = '''
import re

from rag_bench.parsing.base import Parsed, ParseFailure


class TagStripper:
    """A team's own HTML parser: tags dropped, each <h2> a Markdown heading."""

    name = "tag_stripper"
    suffixes = (".html",)

    def version(self) -> str:
        return "1"

    def parse(self, data: bytes, suffix: str) -> Parsed:
        html = data.decode("utf-8")
        if "<html" not in html:
            raise ParseFailure("not an HTML page")
        html = re.sub(r"<h2>(.*?)</h2>", r"\\n\\n## \\1\\n\\n", html)
        text = re.sub(r"<[^>]+>", " ", html)
        return Parsed(text="\\n".join(" ".join(line.split()) for line in text.splitlines()).strip(),
                      warnings=("read by the team's own parser",))


class NoParse:
    name = "no_parse"
    suffixes = (".html",)

    def version(self) -> str:
        return "1"
'''


def test_a_plugin_parser_reads_a_dataset_like_a_built_in_one_and_a_broken_one_is_refused(tmp_path):
    root = tmp_path / "src"
    conf = root / "myparser" / "conf" / "parser"
    conf.mkdir(parents=True)
    (root / "myparser" / "__init__.py").write_text(PARSER_PLUGIN)
    for name, target in (("tag_stripper", "TagStripper"), ("no_parse", "NoParse")):
        (conf / f"{name}.yaml").write_text(f"name: {name}\n_target_: myparser.{target}\n")
    data = tmp_path / "data"
    (data / "docs").mkdir(parents=True)
    (data / "docs" / "fees.html").write_text(
        "<html><body><h2>Fees</h2><p>A late return costs twelve crowns per day.</p><h2>Hours</h2>"
        "<p>The library opens at nine in the morning.</p></body></html>")
    (data / "docs" / "notes.html").write_text("plain text, no page")  # the plugin's own failure, recorded
    (data / "questions.jsonl").write_text(
        '{"id": "q1", "question": "What does a late return cost?", "answerable": true, "answers": ["twelve crowns '
        'per day"], "evidence": [{"doc_id": "fees", "quote": "A late return costs twelve crowns per day."}]}\n'
        '{"id": "q2", "question": "When does the library open?", "answerable": true, "answers": ["at nine in the '
        'morning"], "evidence": [{"doc_id": "fees", "quote": "The library opens at nine in the morning."}]}\n')
    search = f"hydra.searchpath=[file://{root / 'myparser' / 'conf'}]"
    out = tmp_path / "out"
    done = _run(["run", "parser=tag_stripper", search, f"dataset.path={data}", "tracking=none", f"output.root={out}",
                 "experiment.name=own"], root, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    (cell,) = (out / "own").glob("*/metrics.json")
    metrics = json.loads(cell.read_text())
    assert metrics["parse"]["evidence_exact"] == 1.0 and metrics["parse"]["parsed_documents"] == 2
    assert metrics["parse_failures"] == {"notes": "not an HTML page"} and metrics["retrieval"]["hit@5"] == 1.0
    assert "_target_: myparser.TagStripper" in (cell.parent / "config.yaml").read_text()
    refused = _run(["run", "parser=no_parse", search, f"dataset.path={data}", "tracking=none",
                    f"output.root={tmp_path / 'out2'}"], root, tmp_path)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert "parser._target_ 'myparser.NoParse' does not implement the parser stage: missing parse" in refused.stderr
