"""What the CLI tests of the search modes share: the newest sweep summary, a cell's setting, and a
sweep killed with SIGKILL (its whole process group) once some of its cells are DONE."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import yaml

from tests.conftest import REPO


def summary(exp: Path) -> dict:
    """The newest sweep's summary (each sweep writes its own)."""
    newest = max((exp / ".hydra").glob("search-*.json"), key=lambda p: p.stat().st_mtime_ns)
    return json.loads(newest.read_text())


def setting(folder: Path, key: str) -> str:
    config = yaml.safe_load((folder / "config.yaml").read_text())
    if key == "pipeline.k":
        return str(config["pipeline"]["k"])
    return str(config[key]["name"])


def kill_after_done(cmd: Sequence[str], env: Mapping[str, str], exp: Path, n: int = 2,
                    timeout_s: float = 600) -> dict[str, int]:
    """Run ``cmd`` in its own session, SIGKILL the whole group once ``n`` cells of the experiment
    folder ``exp`` are DONE (within ``timeout_s``), and return each DONE cell's mtime (ns)."""
    proc = subprocess.Popen(list(cmd), cwd=REPO, env=dict(env), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    deadline = time.monotonic() + timeout_s
    try:
        while len(list(exp.glob("*/DONE"))) < n:
            assert proc.poll() is None, "the sweep ended before it could be killed"
            assert time.monotonic() < deadline, f"no {n} cells DONE within {timeout_s} s"
            time.sleep(0.2)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    return {p.parent.name: p.stat().st_mtime_ns for p in exp.glob("*/DONE")}
