"""State passed in (issue 26): work shared between cells lives in a SharedWork the runner passes
(rag_bench/memo.py); what remains at module level is bounded and says why it is safe.

* every ``functools.lru_cache`` in rag_bench has a finite ``maxsize`` and a comment (on its
  decorator, just above it or in the function's first lines) saying why keeping it is safe;
* every module-level container that starts empty and fills at run time is listed in
  :data:`MODULE_STATE` with its bound and why it cannot change a result.

A new cache fails here naming file:line until it is bounded and documented (or made a SharedWork
kind).
"""

from __future__ import annotations

import ast
from pathlib import Path

import rag_bench

ROOT = Path(rag_bench.__file__).parent

# file:name -> its bound and why it is safe.
MODULE_STATE: dict[str, str] = {
    "reranking/cross_encoder.py:_PAIR_SCORES": "MAX_PAIR_SCORES pairs, oldest dropped (_remember); a pair's "
                                               "score is a pure function of (model identity, question, text)",
    "digests.py:_DIGESTS": "_DIGESTS_KEPT files, then cleared; kept only for settled files by stat signature",
    "embedding/models.py:_WEIGHTS": "_WEIGHTS_KEPT folders, then cleared; kept only for settled folders by the "
                                    "stat signature of every file",
    "metrics/bootstrap.py:_SEEN": "_SEEN_SIZE intervals, oldest dropped; a pure function of the column's bytes",
    "runner/main.py:_PROBED": "_PROBED_KEPT folders, then cleared; only skips a write probe (a failing write is "
                              "still an error)",
    "tracking/parents.py:PARENT_RUNS": "one entry per open sweep, popped when the sweep's parent run is closed",
    "tracking/mlflow_tracker.py:_CREATED": "one entry per MLflow experiment this process created, cleared by "
                                           "finish_all; only decides whether a failed run's empty experiment goes",
    "logs.py:_CREATED": "one entry per experiment folder this process created for its log file, cleared at the start "
                        "of each rag-bench run and by remove_created_experiments; only decides whether a failed "
                        "run's empty experiment folder goes",
    "cell_cache.py:_PRUNED": "one entry per code version, and a process runs one; only decides whether this "
                               "process already dropped the cell store's rows of other versions",
    "faults.py:ALSO_KILL": "fault injection for tests (RAG_BENCH_FAILPOINT): the processes one kill point ends",
    **{f"metrics/support.py:{name}": "memo.Lru(pure=True) of a pure function keyed by content digests, oldest "
                                     "dropped past its size (issue 57: each text read, each claim weighed once)"
       for name in ("_READINGS", "_CLAIM_READINGS", "_FITS", "_SPLITS", "_CITED", "_MARKED", "_JUDGED")},
    "metrics/support.py:_FIELDS": "one entry per frozen dataclass of metrics/support.py that _new builds (five): its "
                                  "field names, fixed when the class is defined",
    "metrics/support.py:_STEMS": "_STEMS_KEPT words, then cleared; a word's Snowball stem is a pure function of the "
                                 "word (issue 57: each distinct word stemmed once)",
    "tracking/wal.py:_STORES": "one entry per local MLflow store this process put in WAL mode (a sweep has one); "
                               "only says which stores get synchronous=NORMAL and a checkpoint at exit",
    "tracking/wal.py:_LISTENING": "at most one entry: the SQLAlchemy connect listener is registered",
    "redaction.py:_forms": "six escaped forms of each distinct API key this process sent (one key per "
                           "api_key_env variable); only masks text in messages, never changes a result",
}
_EMPTY_CALLS = {"dict", "set", "list", "OrderedDict", "defaultdict", "WeakValueDictionary", "WeakKeyDictionary"}


def _lru_name(node: ast.expr) -> bool:
    name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""
    return name in ("lru_cache", "cache")


def _caches(tree: ast.AST) -> list[tuple[ast.Call, int, int]]:
    """Each lru_cache of a module: its call (a bare ``@cache`` as one without arguments), its
    0-based line and the last line a comment about it may be on."""
    out, seen = [], set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for d in node.decorator_list:
                if _lru_name(d) or (isinstance(d, ast.Call) and _lru_name(d.func)):
                    call = d if isinstance(d, ast.Call) else ast.Call(func=d, args=[], keywords=[])
                    seen.add(id(d))
                    out.append((call, d.lineno - 1, node.body[0].lineno + 2))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _lru_name(node.func) and id(node) not in seen:
            out.append((node, node.lineno - 1, node.lineno))
    return out


def _bounded(call: ast.Call) -> bool:
    args = [*call.args, *(k.value for k in call.keywords if k.arg == "maxsize")]
    if not args:
        return False  # lru_cache() keeps 128, but say it: functools.cache and a bare lru_cache are unbounded-looking
    return not (isinstance(args[0], ast.Constant) and args[0].value is None)


def _commented(lines: list[str], first: int, last: int) -> bool:
    return any("#" in lines[i] for i in range(max(first, 0), min(last, len(lines))))


def problems(root: Path = ROOT) -> list[str]:
    """``file:line: what`` for each unbounded or undocumented cache and each unlisted module-level container."""
    out = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        tree = ast.parse(text)
        for call, line, last in _caches(tree):
            if not _bounded(call):
                out.append(f"rag_bench/{rel}:{line + 1}: lru_cache without a finite maxsize")
            elif not _commented(lines, line - 2, last):
                out.append(f"rag_bench/{rel}:{line + 1}: lru_cache without a comment saying why it is safe")
        for stmt in tree.body:
            target, value = None, None
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                target, value = stmt.targets[0].id, stmt.value
            elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
                target, value = stmt.target.id, stmt.value
            if target is None or value is None:
                continue
            empty = (isinstance(value, (ast.Dict, ast.List, ast.Set)) and not getattr(value, "keys", None)
                     and not getattr(value, "elts", None)) or (
                isinstance(value, ast.Call) and not value.args and
                (value.func.attr if isinstance(value.func, ast.Attribute) else getattr(value.func, "id", ""))
                in _EMPTY_CALLS)
            if empty and f"{rel}:{target}" not in MODULE_STATE:
                out.append(f"rag_bench/{rel}:{stmt.lineno}: module-level {target} fills at run time: make it a "
                           "SharedWork kind (rag_bench/memo.py) or bound it and list it in MODULE_STATE")
    return out


def test_module_level_state_is_bounded_and_documented() -> None:
    found = problems()
    assert not found, "\n".join(found)


def test_the_check_finds_unbounded_and_undocumented_state(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(
        "from functools import cache, lru_cache\n_SEEN = {}\n\n"
        "@lru_cache(maxsize=None)\ndef a(x):\n    return x\n\n"
        "@cache\ndef b(x):\n    return x\n\n"
        "@lru_cache(maxsize=8)\ndef c(x):\n    return x\n\n\nX = 1\n\n\n"
        "# Pure: the same x gives the same value.\n@lru_cache(maxsize=8)\ndef d(x):\n    return x\n",
        encoding="utf-8")
    found = problems(tmp_path)
    assert [f.split(": ", 1)[1].split(" ")[0:3] for f in found] == [
        ["lru_cache", "without", "a"], ["lru_cache", "without", "a"], ["lru_cache", "without", "a"],
        ["module-level", "_SEEN", "fills"]]
    assert [f.split(":")[1] for f in found] == ["4", "8", "12", "2"]


def test_every_listed_state_still_exists() -> None:
    stale = []
    for entry in MODULE_STATE:
        rel, name = entry.split(":")
        path = ROOT / rel
        if not path.exists() or not any(isinstance(s, (ast.Assign, ast.AnnAssign)) and name in ast.dump(s)
                                        for s in ast.parse(path.read_text(encoding="utf-8")).body):
            stale.append(entry)
    assert not stale, f"listed but gone: {stale}"


def test_model_folder_hashes_are_bounded(tmp_path: Path, monkeypatch) -> None:
    from rag_bench.embedding import models

    monkeypatch.setattr(models, "_WEIGHTS", {})
    monkeypatch.setattr(models, "_WEIGHTS_KEPT", 2)
    monkeypatch.setattr(models, "SETTLED_NS", -1)  # every folder counts as settled
    for i in range(3):
        (tmp_path / str(i)).mkdir()
        (tmp_path / str(i) / "w.bin").write_bytes(bytes([i]))
        models.weights_hash(str(tmp_path / str(i)))
        assert len(models._WEIGHTS) <= 2
    assert str(tmp_path / "2") in models._WEIGHTS  # the newest kept
