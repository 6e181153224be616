"""A library's FutureWarning (sentence-transformers renamed ``get_sentence_embedding_dimension``) is not
printed on the console of ``rag-bench``, through the real command (``run --plan`` set up no log file)."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import warnings
from pathlib import Path

from tests.conftest import TINY


def test_run_plan_prints_no_future_warning(tmp_path):
    env = {**os.environ, "RAG_BENCH_CACHE": str(tmp_path / "cache")}  # nothing cached: the probe loads the model
    done = subprocess.run([str(Path(sys.executable).parent / "rag-bench"), "run", "-m", "retriever=dense",
                           f"dataset.path={TINY}", f"output.root={tmp_path / 'out'}", "--plan"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "Warning" not in done.stdout + done.stderr, done.stderr


def test_only_notices_to_developers_are_kept_off_the_console():
    from rag_bench.logs import api_notice

    def record(category: type[Warning]) -> logging.LogRecord:
        text = warnings.formatwarning("renamed", category, "lib.py", 3)
        return logging.LogRecord("py.warnings", logging.WARNING, "lib.py", 3, "%s", (text,), None)

    assert api_notice(record(FutureWarning)) and api_notice(record(DeprecationWarning))
    assert not api_notice(record(UserWarning)) and not api_notice(record(RuntimeWarning))
