"""Fault injection for crash-safety tests: ``RAG_BENCH_FAILPOINT=<name>`` kills the process
(SIGKILL, as a power cut or an OOM killer would) when execution reaches that point.

Points: ``cell_written`` (cell files in place, before MLflow), ``mlflow_run_created`` (a cell's
run exists but is not finished), ``before_done`` (everything logged, DONE not yet written),
``trace_infos_written`` (a chunk of per-question traces created, their spans not logged yet).
``RAG_BENCH_FAILPOINT=<name>:sleep=<seconds>`` pauses there instead, to widen a race window in
concurrency tests. Unset in normal use; costs one environment lookup per point.

A helper process doing part of a cell's work (the background MLflow logger) adds its parent to
:data:`ALSO_KILL`: reaching a point there kills the parent first, so the whole run dies there.
"""

from __future__ import annotations

import os
import signal
import time

FAILPOINT_ENV = "RAG_BENCH_FAILPOINT"
ALSO_KILL: list[int] = []  # processes killed before this one at a point (a helper's parent)


def armed() -> bool:
    """Whether a fault injection point is set (a crash test is running: what it kills must be computed)."""
    return bool(os.environ.get(FAILPOINT_ENV))


def failpoint(name: str) -> None:
    """Die (or pause) here if the environment asks for it."""
    point = os.environ.get(FAILPOINT_ENV)
    if point is None or not point.startswith(name):
        return
    if point == name:
        for pid in ALSO_KILL:
            os.kill(pid, signal.SIGKILL)
        os.kill(os.getpid(), signal.SIGKILL)
    elif point.startswith(f"{name}:sleep="):
        time.sleep(float(point[len(name) + 7:]))
