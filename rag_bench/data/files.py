"""What a dataset folder may contain: regular files inside it, of bounded size.

Checked before anything is read (the fingerprint reads every file): a symbolic link that leaves
the dataset folder (``docs/x.md -> /etc/passwd``) would put outside text into the artifacts, and
a device or FIFO (``docs.jsonl -> /dev/zero``) would be read until memory runs out. Links that
stay inside the folder are followed; links to folders are not (a loop would never end).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from rag_bench.data.problems import ProblemLog

MAX_FILE_BYTES = 1 << 30  # one file of a dataset; larger ones are refused, not read


def dataset_files(root: Path, log: ProblemLog) -> list[Path]:
    """Every regular file under ``root`` (sorted); problems with the others go to ``log``."""
    base = root.resolve()
    files: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        here = Path(dirpath)
        for name in sorted(dirnames):
            p = here / name
            if p.is_symlink():
                log.add(p, 0, "", "symbolic link to a folder (not followed)",
                        "copy the files into the dataset folder instead of linking a folder")
        for name in sorted(filenames):
            p = here / name
            if p.is_symlink():
                target = Path(os.path.realpath(p))
                if not target.is_relative_to(base):
                    log.add(p, 0, "", f"symbolic link leaves the dataset folder (-> {target})",
                            "copy the file into the dataset folder; links may only point inside it")
                    continue
            try:
                st = os.stat(p)
            except OSError as exc:
                log.add(p, 0, "", f"cannot be read ({exc.strerror})", "fix the link or the permissions")
                continue
            if not stat.S_ISREG(st.st_mode):
                log.add(p, 0, "", "not a regular file (a device, FIFO or socket)",
                        "replace it with a regular file or remove it from the dataset folder")
                continue
            if st.st_size > MAX_FILE_BYTES:
                log.add(p, 0, "", f"file is {st.st_size / 2**30:.1f} GiB (limit {MAX_FILE_BYTES / 2**30:.0f} GiB)",
                        "split the corpus or remove the file from the dataset folder")
                continue
            files.append(p)
    return sorted(files)
