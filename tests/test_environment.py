"""No sweep state travels through the environment, and the switches are read at one place.

A cell's run name, parent run and progress bar come from its :class:`~rag_bench.runner.sweep_context.SweepContext`
(an argument), and the process-wide switches (``RAG_BENCH_SHARE``, ``RAG_BENCH_CACHE_SHARDS``,
``RAG_BENCH_STOCK_HYDRA``) from :mod:`rag_bench.switches`, configured by the entry points. Every
other place that touches ``os.environ`` is listed here with what it reads or sets: a new read fails
this test until it is listed (or removed)."""

from __future__ import annotations

import ast
from pathlib import Path

import rag_bench

ROOT = Path(rag_bench.__file__).parent
# file -> what its environment access is (none of it sweep state).
ALLOWED = {
    "switches.py": "the switches, read once by an entry point (configure) or by a library call",
    "storage.py": "RAG_BENCH_CACHE: where the persistent caches live (a location, like XDG_CACHE_HOME)",
    "faults.py": "RAG_BENCH_FAILPOINT: the crash tests' fault injection",
    "http.py": "the API key, from the variable api_key_env names (never from config)",
    "judging/ragas_judge.py": "the judge's API key (api_key_env); ragas' telemetry off",
    "reranking/cross_encoder.py": "HF_HUB_OFFLINE defaulted on (no model hub here)",
    "embedding/models.py": "HF_HUB_OFFLINE / TRANSFORMERS_OFFLINE defaulted on (no model hub here)",
    "logs.py": "quiet defaults for libraries' progress bars and logging",
    "tracking/background.py": "the finisher child's environment (this process's, PYTHONPATH first)",
    "tracking/server.py": "proxy variables cleared around a loopback MLflow server lookup",
    "tracking/mlflow_tracker.py": "MLFLOW_TRACKING_URI, MLflow's own setting",
    "tracking/download.py": "MLflow's artifact progress bar switched off around a download when stderr is no terminal",
    "fast/compose.py": "Hydra's hydra.job.env_set semantics (the job's environment), kept by the speed wing",
    "runner/main.py": "NO_COLOR (the console's colour convention)",
    "cli/run.py": "HYDRA_FULL_ERROR set before Hydra runs (tracebacks of Hydra's own errors)",
}
SWEEP_STATE = ("RAG_BENCH_SWEEP_ID", "RAG_BENCH_AXES", "RAG_BENCH_PROGRESS", "RAG_BENCH_PARENT_RUN_ID")
SWITCHES = ("RAG_BENCH_SHARE", "RAG_BENCH_CACHE_SHARDS", "RAG_BENCH_STOCK_HYDRA")


def _environ_uses(root: Path) -> dict[str, list[int]]:
    found: dict[str, list[int]] = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            attr = node.attr if isinstance(node, ast.Attribute) else None
            if attr in ("environ", "getenv", "putenv") and isinstance(node.value, ast.Name) and node.value.id == "os":
                found.setdefault(rel, []).append(node.lineno)
    return found


def test_every_environment_access_is_listed_with_its_reason():
    uses = _environ_uses(ROOT)
    unlisted = [f"rag_bench/{f}:{lines}" for f, lines in uses.items() if f not in ALLOWED]
    assert not unlisted, f"os.environ used outside the listed places -- pass the value in instead: {unlisted}"
    assert [f for f in ALLOWED if f not in uses] == [], "listed but no longer reading the environment"


def test_no_sweep_state_and_no_switch_outside_its_module():
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        text = path.read_text(encoding="utf-8")
        assert not [n for n in SWEEP_STATE if n in text], f"{rel} names a sweep-state variable"
        if rel != "switches.py":
            assert not [n for n in SWITCHES if f'"{n}"' in text], f"{rel} reads a switch itself"


def test_the_check_finds_an_access(tmp_path):
    (tmp_path / "x.py").write_text("import os\nA = os.environ.get('X')\nB = os.getenv('Y')\n")
    assert {f: sorted(lines) for f, lines in _environ_uses(tmp_path).items()} == {"x.py": [2, 3]}
