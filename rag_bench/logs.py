"""Console and log file: rag_bench's own lines on the console, everything in a log file.

A sweep's console shows one line per cell, warnings and the progress bar; what libraries print
while they work (Hydra's job list, faiss's CPU-feature notice, model and weight loading, MLflow's
schema migrations) goes to ``<output.root>/<experiment.name>/.hydra/rag_bench.log`` with timestamps
and logger names, in the folder where Hydra keeps the sweep's own records (``multirun.yaml``);
hidden, like Hydra's, so nothing but cells is listed in the experiment folder. ``rag-bench run`` sets this up through Hydra's
logging configs (``hydra/job_logging=rag_bench``, ``hydra/hydra_logging=rag_bench`` in
``conf/hydra/``); the other commands call :func:`setup_console`.
"""

from __future__ import annotations

import logging
import os
import re
import sys
from pathlib import Path

from rag_bench.untrusted import visible

OWN = ("rag_bench", "hydra_plugins.rag_bench")


def quiet_libraries() -> None:
    """Before a library is imported: no progress bars of model loading (huggingface), MLflow
    logging through the root logger (so it reaches the log file, not the console), Python
    warnings routed to logging. Settings the user made in the environment win."""
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("MLFLOW_CONFIGURE_LOGGING", "false")
    logging.captureWarnings(True)


# ``extra=`` of a record for the log file only (a figure kept for later, e.g. benchmarks/sweep.py): the
# console passes it by.
FILE_ONLY = {"file_only": True}


class OwnRecords(logging.Filter):
    """Passes rag_bench's records (and plugins of it) but those marked :data:`FILE_ONLY`; drops every
    library's."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.name.startswith(OWN) and not getattr(record, "file_only", False)


class ConsoleHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """A stream handler that keeps tqdm's progress bars on the last line: while a bar is drawn on
    the terminal (a sweep's ``sweep`` bar, a cell's ``retrieve`` bar), a line is written the way
    ``tqdm.write`` does -- the bars cleared, the line written and flushed, the bars redrawn below
    it -- instead of being glued to the bar and leaving a stale copy of it above."""

    def emit(self, record: logging.LogRecord) -> None:
        from tqdm import tqdm

        try:
            msg = visible(self.format(record))  # a logged question or answer cannot drive the terminal
            with tqdm.external_write_mode(file=self.stream):
                self.stream.write(msg + self.terminator)
                self.flush()
        except RecursionError:
            raise
        except Exception:  # noqa: BLE001 -- logging's own contract: report, never raise
            self.handleError(record)


# Experiment folders this process created for its log file (``<experiment>/.hydra/rag_bench.log``):
# a run that fails on bad input before any cell is written removes them (remove_created_experiments).
_CREATED: list[Path] = []


def experiment_file_handler(filename: str, formatter: str | None = None) -> logging.Handler:
    """An appending file handler for ``filename``, its folder created; a folder that cannot be
    written gives a handler that drops records (the cell's own write check then names the
    problem with a fix, instead of a traceback from logging's setup)."""
    try:
        experiment = Path(filename).parent.parent
        if not experiment.exists():
            _CREATED.append(experiment)
        Path(filename).parent.mkdir(parents=True, exist_ok=True)
        return ExperimentFileHandler(filename, mode="a", encoding="utf-8", delay=True)
    except OSError:
        return logging.NullHandler()


class ExperimentFileHandler(logging.FileHandler):
    """The experiment's log file, opened at its first record. A record whose file cannot be opened
    (its folder removed meanwhile) is dropped, as logging's contract says: CPython's FileHandler opens
    a delayed file outside its error handling, so the OSError reached whoever logged -- a cell's
    "done" line failed the cell."""

    def emit(self, record: logging.LogRecord) -> None:
        if self.stream is None:
            try:
                self.stream = self._open()
            except OSError:
                return
        super().emit(record)


def remove_created_experiments() -> None:
    """After a run that failed on bad input or configuration: every experiment folder this process
    created that holds nothing but its ``.hydra`` records (no cell) is removed, so a failed first try
    leaves no empty experiment behind (its ``error:`` line says what went wrong). A folder that existed
    before, or holds anything else, is kept."""
    import shutil

    while _CREATED:
        experiment = _CREATED.pop()
        if experiment.is_dir() and all(p.name == ".hydra" for p in experiment.iterdir()):
            loggers = [logging.getLogger(), *(v for v in logging.Logger.manager.loggerDict.values()
                                              if isinstance(v, logging.Logger))]
            for logger in loggers:  # its log file closed (and no longer written) before its folder goes
                for handler in list(logger.handlers):
                    if isinstance(handler, logging.FileHandler) and Path(handler.baseFilename).is_relative_to(
                            experiment.resolve()):
                        logger.removeHandler(handler)
                        handler.close()
            shutil.rmtree(experiment, ignore_errors=True)


def forget_created_experiments() -> None:
    """At the start of a ``rag-bench run``: the folders an earlier run in this process created are not its own."""
    _CREATED.clear()


_API_NOTICE = re.compile(r": (?:Future|Deprecation|PendingDeprecation)Warning: ")


def api_notice(record: logging.LogRecord) -> bool:
    """A library's notice to developers (a Python FutureWarning or DeprecationWarning, routed to logging by
    :func:`quiet_libraries`), e.g. sentence-transformers' renamed ``get_sentence_embedding_dimension``:
    not for the console of a person running rag-bench."""
    return record.name == "py.warnings" and bool(_API_NOTICE.search(record.getMessage()))


def setup_console(level: int = logging.INFO) -> None:
    """Outside a sweep: rag_bench's messages on stderr, libraries' only from WARNING up."""
    handler = ConsoleHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    handler.addFilter(lambda r: not getattr(r, "file_only", False) and (
        r.name.startswith(OWN) or (r.levelno >= logging.WARNING and not api_notice(r))))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
