"""A sweep's console: one line per cell, the leaderboard, the failure table; what libraries print
(Hydra's job list, faiss, model loading, MLflow's migrations) goes to <experiment>/.hydra/rag_bench.log."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import TINY

pytestmark = pytest.mark.slow
NOISE = re.compile(r"HYDRA|faiss|Loading|alembic|mlflow\.|Creating initial|Launching \d+ jobs|it/s\]")


def test_sweep_prints_only_its_own_lines(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("MLFLOW_TRACKING_URI", "RAG_BENCH_PROGRESS")}
    done = subprocess.run([str(Path(sys.executable).parent / "rag-bench"), "run", "-m", "chunker=fixed,section",
                           "retriever=dense", f"dataset.path={TINY}", f"output.root={tmp_path}",
                           "experiment.name=quiet"], capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    assert not [line for line in lines if NOISE.search(line)], lines
    cell_lines = [line for line in lines if line.startswith("cell ") and " done: " in line]
    assert len(cell_lines) == 2
    assert "Leaderboard" in done.stdout and "Where questions were lost" in done.stdout
    board = done.stdout.split("Leaderboard", 1)[1].split("Where questions were lost", 1)[0]
    assert max(len(line) for line in board.splitlines()) < 140  # the default columns fit a terminal
    log = (tmp_path / "quiet" / ".hydra" / "rag_bench.log").read_text()
    # Kept, with timestamps. MLflow's store opening logs through alembic (a store seeded from the
    # cached empty one has no "Creating initial MLflow database tables" line of mlflow's own).
    assert "faiss" in log and "Launching 2 jobs" in log and "alembic" in log


def _screen(raw: str) -> list[str]:
    """What a terminal shows after ``raw``: rows of characters, ``\\r`` back to column 0, ``\\n``
    down a row, ESC[A up a row (tqdm's moves between bars), other escape sequences (colours) ignored."""
    rows: list[list[str]] = [[]]
    row = col = 0
    i = 0
    while i < len(raw):
        esc = re.match(r"\x1b\[([0-9;]*)([A-Za-z])", raw[i:])
        if esc:
            if esc.group(2) == "A":
                row = max(0, row - int(esc.group(1) or 1))
            i += esc.end()
            continue
        ch = raw[i]
        if ch == "\r":
            col = 0
        elif ch == "\n":
            row += 1
            rows.extend([] for _ in range(row + 1 - len(rows)))
        else:
            line = rows[row]
            line.extend(" " * (col + 1 - len(line)))
            line[col] = ch
            col += 1
        i += 1
    return ["".join(r).rstrip() for r in rows]


def test_the_bar_stays_on_the_last_line_under_a_terminal(tmp_path):
    """Under a pseudo-terminal (the bar drawn): each cell line on a row of its own, never glued to
    the bar, and no stale copy of the bar left above a cell line."""
    import fcntl
    import pty
    import struct
    import termios

    env = {k: v for k, v in os.environ.items() if k not in ("MLFLOW_TRACKING_URI", "RAG_BENCH_PROGRESS", "NO_COLOR")}
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 160, 0, 0))  # tqdm sizes the bar to it
    proc = subprocess.Popen([str(Path(sys.executable).parent / "rag-bench"), "run", "-m", "chunker=fixed,section",
                             "retriever=bm25,dense", f"dataset.path={TINY}", f"output.root={tmp_path}",
                             "experiment.name=tty", "tracking=none"],
                            stdin=follower, stdout=follower, stderr=follower, env=env, close_fds=True)
    os.close(follower)
    raw = b""
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        raw += data
    os.close(leader)
    assert proc.wait(timeout=600) == 0, raw.decode(errors="replace")[-3000:]
    text = raw.decode(errors="replace")
    assert "sweep:" in text, text[-2000:]  # the bar was drawn
    rows = _screen(text)
    cells = [i for i, r in enumerate(rows) if re.search(r"cell \w+ done: ", r)]
    assert len(cells) == 4, rows
    for i in cells:
        assert rows[i].startswith("cell ") and not re.search(r"sweep:|retrieve:|/s\]|\?cell", rows[i]), rows[i]
    bars = [i for i, r in enumerate(rows) if r.startswith("sweep:")]
    assert len(bars) == 1 and bars[0] > cells[-1], rows  # one bar, below the last cell line
