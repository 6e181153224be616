"""A cross-process exclusive lock on a file, shared by the cell folder and the MLflow tracker."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive lock across processes (``fcntl.flock`` on ``path``); the file is removed
    on release.

    A waiter that wakes up holding a file another holder has meanwhile removed (or replaced) tries
    again on the file now at ``path``, so two processes never both hold the lock of one path. Not
    re-entrant: a process must not take the same path twice. A killed holder's lock is released by
    the kernel; its file is reused by the next holder.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            held = os.fstat(fd)
            try:
                now = os.stat(path)
            except FileNotFoundError:
                now = None
        except BaseException:
            os.close(fd)
            raise
        if now is not None and (now.st_dev, now.st_ino) == (held.st_dev, held.st_ino):
            break
        os.close(fd)
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)
        os.close(fd)
