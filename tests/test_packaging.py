"""A built wheel is a working install: configs, the demo set and the sweeper and launcher plugins are inside it.

The wheel is built from a copy of the sources (so the checkout gets no build/ folder) without
build isolation or an index (offline), installed with ``pip --target`` into a temporary folder and
run from an empty folder, where neither the checkout nor its top-level ``conf/`` is visible.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from rag_bench.runner.config import CONF_DIR, DEMO_DATASET
from tests.conftest import REPO

PROBE = """
import sys
import hydra_plugins.rag_bench_sweeper, rag_bench
from rag_bench.runner.config import CONF_DIR, DEMO_DATASET
print("rag_bench:", rag_bench.__file__)
print("sweeper:", hydra_plugins.rag_bench_sweeper.__file__)
print("conf:", CONF_DIR)
print("demo:", DEMO_DATASET)
"""


def _run(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"{args} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc


def _rel_files(root: Path) -> set[str]:
    return {p.relative_to(REPO / "rag_bench").as_posix() for p in root.rglob("*") if p.is_file()}


def _wheel(tmp_path: Path) -> Path:
    """The package's wheel, built offline from a copy of the sources."""
    src = tmp_path / "src"
    src.mkdir()
    junk = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, src / name)
    for name in ("rag_bench", "hydra_plugins"):
        shutil.copytree(REPO / name, src / name, ignore=junk)
    dist = tmp_path / "dist"
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "--no-index",
          "-w", str(dist), str(src)], cwd=tmp_path)
    (wheel,) = dist.glob("rag_bench_harness-*.whl")  # the distribution's name: rag-bench-harness
    return wheel


@pytest.mark.slow
def test_wheel_ships_configs_demo_data_and_sweeper(tmp_path):
    wheel = _wheel(tmp_path)

    names = set(zipfile.ZipFile(wheel).namelist())
    for must in ("rag_bench/conf/config.yaml", "rag_bench/conf/gate/release.yaml",
                 "rag_bench/datasets/kettleby/questions.jsonl", "rag_bench/datasets/kettleby/dataset.yaml",
                 "hydra_plugins/rag_bench_sweeper/__init__.py",
                 "hydra_plugins/rag_bench_sweeper/rag_bench_sweeper.py",
                 "hydra_plugins/rag_bench_sweeper/rag_bench_launcher.py"):
        assert must in names, f"{must} missing from {wheel.name}"
    # Every config and every file of the demo set, not just a sample (a new extension would be lost).
    shipped = {f"rag_bench/{rel}" for rel in _rel_files(CONF_DIR) | _rel_files(DEMO_DATASET)}
    assert shipped - names == set(), f"not in the wheel: {sorted(shipped - names)}"

    site = tmp_path / "site"
    _run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target", str(site),
          str(wheel)], cwd=tmp_path)
    empty = tmp_path / "empty"
    empty.mkdir()
    env = {**os.environ, "PYTHONPATH": str(site), "RAG_BENCH_CACHE": str(tmp_path / "cache")}

    probe = _run([sys.executable, "-c", PROBE], cwd=empty, env=env).stdout
    for line in probe.splitlines():
        where = line.split(": ", 1)[1]
        assert Path(where).is_relative_to(site), f"not imported from the installed wheel: {line}\n{probe}"

    demo = site / "rag_bench" / "datasets" / "kettleby"
    out = _run([sys.executable, "-m", "rag_bench.cli", "validate", str(demo)], cwd=empty, env=env).stdout
    assert out.startswith("ok: kettleby (native): 21 documents") and "fingerprint" in out, out

    out_root = tmp_path / "out"
    ran = _run([sys.executable, "-m", "rag_bench.cli", "run", "tracking=none", f"output.root={out_root}"],
               cwd=empty, env=env)
    assert " done: " in ran.stdout, ran.stdout + ran.stderr
    cells = [p for p in (out_root / "default").iterdir() if p.is_dir() and not p.name.startswith(".")]
    assert len(cells) == 1 and (cells[0] / "DONE").exists(), cells
    assert list(empty.iterdir()) == [], "the run wrote into the working folder"


# A team's stack that is not ours: other minor versions of the three libraries a team most often has
# already, and the pyarrow that mlflow 3.14 caps below 25 (the verified set, constraints.txt, has mlflow
# 3.17.2, pandas 3.1.1, numpy 2.4.6, pyarrow 25.0.1). These are
# the lower bounds pyproject.toml declares for them.
THEIR_STACK = {"mlflow": "3.14.0", "pandas": "2.3.3", "numpy": "2.3.5", "pyarrow": "24.0.0"}


@pytest.mark.slow
def test_installs_beside_a_teams_other_minor_versions_and_runs(tmp_path):
    """``pip install`` of the wheel into a venv that already holds other minor versions of mlflow,
    pandas and numpy resolves without touching them, ``pip check`` is clean, and a run tracked in
    MLflow plus its report work there (pyproject declares ranges; only constraints.txt pins)."""
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], cwd=tmp_path)
    py = str(venv / "bin" / "python")
    pip = [py, "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    _run([*pip, "torch==2.13.0"], cwd=tmp_path)  # the CPU build (see Makefile): before anything pulls torch in
    _run([*pip, *(f"{name}=={version}" for name, version in THEIR_STACK.items())], cwd=tmp_path)
    _run([*pip, str(_wheel(tmp_path))], cwd=tmp_path)

    listed = _run([py, "-m", "pip", "list", "--format=json"], cwd=tmp_path).stdout
    have = {row["name"].lower(): row["version"] for row in json.loads(listed)}
    assert {name: have.get(name) for name in THEIR_STACK} == THEIR_STACK, "the install changed the team's versions"
    _run([py, "-m", "pip", "check"], cwd=tmp_path)

    empty = tmp_path / "empty"
    empty.mkdir()
    env = {**os.environ, "RAG_BENCH_CACHE": str(tmp_path / "cache")}
    env.pop("PYTHONPATH", None)
    out_root = tmp_path / "out"
    ran = _run([str(venv / "bin" / "rag-bench"), "run", f"output.root={out_root}", "tracking=mlflow"],
               cwd=empty, env=env)
    assert " done: " in ran.stdout, ran.stdout + ran.stderr
    (cell,) = [p for p in (out_root / "default").iterdir() if p.is_dir() and not p.name.startswith(".")]
    metrics = json.loads((cell / "metrics.json").read_text())
    assert metrics, "no metrics written"
    report = _run([str(venv / "bin" / "rag-bench"), "report", str(out_root / "default")], cwd=empty, env=env)
    assert report.returncode == 0
    probe = _run([py, "-c", "import sys, mlflow, pandas, numpy, rag_bench; "
                  "mlflow.set_tracking_uri(f'sqlite:///{sys.argv[1]}/mlflow.db'); "
                  "runs = mlflow.search_runs(search_all_experiments=True); "
                  "print(mlflow.__version__, pandas.__version__, numpy.__version__, rag_bench.__file__, "
                  "len(runs), sorted(set(runs['status'])))", str(out_root)], cwd=empty, env=env).stdout.split(" ", 5)
    assert probe[:3] == [THEIR_STACK[name] for name in ("mlflow", "pandas", "numpy")] and Path(probe[3]).is_relative_to(venv), probe
    assert int(probe[4]) >= 1 and probe[5].strip() == "['FINISHED']", probe  # the cell's run, logged by their mlflow


def _wheel_metadata(wheel: Path) -> dict[str, str]:
    with zipfile.ZipFile(wheel) as zf:
        (meta,) = [n for n in zf.namelist() if n.endswith(".dist-info/METADATA")]
        head = zf.read(meta).decode("utf-8").split("\n\n", 1)[0]
    return dict(line.split(": ", 1) for line in head.splitlines() if ": " in line and not line.startswith(" "))


@pytest.mark.slow  # about 15 s: a wheel build and a one-cell sweep
def test_the_readme_and_ci_install_path_from_the_built_wheel_in_a_fresh_venv(tmp_path):
    """What the README's install line and the CI recipe do -- ``pip install rag-bench-harness``, then
    ``rag-bench`` -- from the built wheel (not the index: the name is ours, but the test is offline) into a
    fresh venv. The venv reuses this interpreter's installed dependencies through a ``.pth`` line, so pip
    resolves every declared dependency without an index and installs only the wheel; the package, its
    command and a one-cell sweep then run from the venv's copy, not the checkout."""
    wheel = _wheel(tmp_path)
    meta = _wheel_metadata(wheel)
    assert meta["Name"] == "rag-bench-harness", meta  # not rag_bench / rag-bench: another author's project on PyPI
    recipe = (REPO / "examples" / "ci" / "rag-bench.yml").read_text(encoding="utf-8")
    assert "RAG_BENCH: rag-bench-harness " in recipe  # what the copied workflow installs
    assert "pip install rag-bench-harness" in (REPO / "README.md").read_text(encoding="utf-8").replace("`", "")

    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=tmp_path)  # its own older setuptools would shadow ours
    py = venv / "bin" / "python"
    pip = [sys.executable, "-m", "pip", "--python", str(py), "--disable-pip-version-check"]
    site_dir = Path(_run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                         cwd=tmp_path).stdout.strip())
    ours = [p for p in sys.path if p.endswith("site-packages") and Path(p).is_dir()]
    (site_dir / "_deps.pth").write_text("\n".join(ours) + "\n", encoding="utf-8")  # plain paths: no editable hook
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["RAG_BENCH_CACHE"] = str(tmp_path / "cache")
    _run([*pip, "install", "-q", "--no-index", str(wheel)], cwd=tmp_path, env=env)
    shown = _run([*pip, "show", "rag-bench-harness"], cwd=tmp_path, env=env).stdout
    assert "Name: rag-bench-harness" in shown and str(site_dir) in shown, shown

    empty = tmp_path / "empty"
    empty.mkdir()
    cli = str(venv / "bin" / "rag-bench")
    helped = _run([cli, "--help"], cwd=empty, env=env).stdout
    assert "rag-bench run" in helped and "validate" in helped, helped
    where = _run([str(py), "-c", "import rag_bench; print(rag_bench.__file__)"], cwd=empty, env=env).stdout.strip()
    assert Path(where).is_relative_to(site_dir), f"rag_bench imported from {where}, not the installed wheel"

    out_root = tmp_path / "out"
    ran = _run([cli, "run", "-m", "retriever=bm25", "tracking=none", f"output.root={out_root}",
                "experiment.name=installed"], cwd=empty, env=env)
    assert " done: " in ran.stdout and "Best: " in ran.stdout, ran.stdout + ran.stderr
    cells = [p for p in (out_root / "installed").iterdir() if p.is_dir() and not p.name.startswith(".")]
    assert len(cells) == 1 and (cells[0] / "DONE").exists(), cells
    assert list(empty.iterdir()) == [], "the run wrote into the working folder"
