"""The speed wing: every trick rag_bench plays on Hydra, OmegaConf and CPython, behind one switch.

``RAG_BENCH_STOCK_HYDRA=1`` in the environment runs stock Hydra instead: Hydra's own composition
(no :class:`~rag_bench.fast.compose.ComposeOnce`, every job of a sweep composed and validated as
:class:`BasicSweeper` does), Hydra's basic launcher (``hydra/launcher=basic`` unless the command
line names a launcher) and the interpreter's normal exit. Cell folders are the same either way
(tests/fast/test_switch.py); the wing only makes a sweep cheaper. Stage ordering and the progress
bar of the sweeper are features, not tricks: they stay on both ways.

The tricks (each module says what it saves and how it stays equal to Hydra):

* ``fast/compose.py`` -- compose once per template, parse YAML once per sweep;
* ``fast/launcher.py`` -- hydra/launcher=rag_bench, Hydra's basic launcher with cheaper bookkeeping;
* ``runner/sweeper.py`` -- validation of a covering subset of the grid;
* :func:`exit_now` -- leave without the interpreter's teardown after ``rag-bench run``.

``tests/fast/test_private_names.py`` pins every private Hydra/OmegaConf name they use.
"""

from __future__ import annotations

import contextlib
import os
import sys

from rag_bench import switches

STOCK_ENV = switches.STOCK_ENV


def stock() -> bool:
    """True when ``RAG_BENCH_STOCK_HYDRA`` is set to anything but ``""``/``0``: run stock Hydra
    (:mod:`rag_bench.switches`)."""
    return switches.current().stock


def launcher_overrides(args: list[str], is_stock: bool | None = None) -> list[str]:
    """``args`` plus ``hydra/launcher=basic`` when stock and the line names no launcher.

    >>> launcher_overrides(["-m", "k=1,2"], is_stock=True)
    ['-m', 'k=1,2', 'hydra/launcher=basic']
    >>> launcher_overrides(["hydra/launcher=joblib"], is_stock=True)
    ['hydra/launcher=joblib']
    >>> launcher_overrides(["-m"], is_stock=False)
    ['-m']
    """
    if not (stock() if is_stock is None else is_stock) or any(a.lstrip("+~").startswith("hydra/launcher=") for a in args):
        return list(args)
    return [*args, "hydra/launcher=basic"]


def in_hydra() -> contextlib.AbstractContextManager[None]:
    """Hydra composes through ComposeOnce for the duration (wing on); nothing when stock."""
    if stock():
        return contextlib.nullcontext()
    from rag_bench.fast.compose import in_hydra as compose_in_hydra

    return compose_in_hydra()


def exit_now(code: int) -> None:
    """Leave as the interpreter would, without its teardown of every object a sweep made.

    After ``rag-bench run`` the interpreter spent ~0.65 s freeing the sweep's objects (a warm
    72-cell demo sweep takes ~7 s). Everything that exit does for the user's data still happens,
    in the interpreter's order: the streams flushed, the atexit handlers run (logging's flush and
    close of every log file, MLflow's, rag_bench's close of its SQLite caches, which checkpoints
    their WAL); then ``os._exit``. Every file rag_bench writes is closed before ``main`` returns;
    an error or Ctrl-C before that, or a thread still running that the interpreter would join (a
    joblib launcher's executor), leaves through the normal exit; so does stock mode.
    """
    import atexit
    import threading

    run_exitfuncs = getattr(atexit, "_run_exitfuncs", None)
    others = [t for t in threading.enumerate() if t is not threading.main_thread() and t.is_alive() and not t.daemon]
    if stock() or run_exitfuncs is None or others:
        # Stock, not CPython, or threads the interpreter would join, after running the exit hooks
        # some of them wait for (joblib's executor): the normal exit.
        sys.exit(code)
    _flush_streams()
    run_exitfuncs()
    _flush_streams()  # what the handlers printed
    os._exit(code)


def _flush_streams() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
