"""Fault injection for crash-safety tests: ``RAG_BENCH_FAILPOINT=<name>`` kills the process
(SIGKILL, as a power cut or an OOM killer would) when execution reaches that point.

Points: ``cell_written`` (cell files in place, before MLflow), ``mlflow_run_created`` (a cell's
run exists but is not finished), ``before_done`` (everything logged, DONE not yet written).
Unset in normal use; costs one environment lookup per point.
"""

from __future__ import annotations

import os
import signal


def failpoint(name: str) -> None:
    """Die here if the environment asks for it."""
    if os.environ.get("RAG_BENCH_FAILPOINT") == name:
        os.kill(os.getpid(), signal.SIGKILL)
