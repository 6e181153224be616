"""The experiment's log file (rag_bench.logs): what happens when its folder goes away."""

from __future__ import annotations

import logging
import shutil

from rag_bench.logs import experiment_file_handler


def test_a_log_file_whose_folder_was_removed_drops_the_record_instead_of_raising(tmp_path):
    """CPython's FileHandler opens a delayed file outside its error handling: the folder of an
    earlier experiment removed, the next record raised FileNotFoundError at whoever logged (a
    cell's "done" line failed the cell; the suite's tests failed so once their folders were
    removed on passing)."""
    experiment = tmp_path / "exp"
    handler = experiment_file_handler(str(experiment / ".hydra" / "rag_bench.log"))
    logger = logging.getLogger("rag_bench.test_logs")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        logger.warning("first")
        assert "first" in (experiment / ".hydra" / "rag_bench.log").read_text()
        handler.close()  # a delayed handler closed (Hydra's reconfiguration does so) reopens at its next record
        shutil.rmtree(experiment)
        logger.warning("second")  # raised FileNotFoundError before
        assert not experiment.exists()  # dropped, and nothing recreated
    finally:
        logger.removeHandler(handler)
        logger.propagate = True
