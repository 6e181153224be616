"""What a cell knows of the sweep it belongs to: one object, passed in.

The launching process (rag_bench's sweeper, :mod:`hydra_plugins.rag_bench_sweeper`) makes the
sweep's :class:`SweepContext` -- its id (the experiment and the command's overrides: re-running the
command finds the same MLflow parent run), its axes (what the cells' run names show), the progress
file the sweep's bar counts, and the MLflow parent run it opened -- writes it to the experiment's
folder (``.hydra/sweep-<id>.json``) and hands each cell the sweep's id as the cell's ``sweep``
key. The Hydra task function reads it there
(a single ``rag-bench run`` makes its own) and passes it to :func:`rag_bench.runner.main.run_cell`;
nothing below the entry points reads sweep state from the environment, and a cell's run name and
parent depend on its arguments only.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path

from rag_bench.errors import ConfigError

CONTEXT_KEY = "sweep"  # the cell config's key holding its sweep's id (not part of a cell id)


def sweep_id_from_argv(experiment: str, argv: list[str]) -> str:
    """Identity of a sweep: experiment name + the command-line overrides, order-insensitive.

    Re-running the same command (to resume) finds the same parent run.
    """
    args = sorted(a for a in argv if not a.startswith("-"))
    return hashlib.sha256(("\0".join([experiment, *args])).encode()).hexdigest()[:16]


def context_override(sweep_id: str) -> str:
    """The override handing a cell its sweep's id, quoted: Hydra reads an unquoted hex id of digits
    and one ``e`` as a float (``582668e844564991`` is ``inf``) and one of digits as an int (leading
    zeros lost), and the cell then looked for ``sweep-inf.json``.

    >>> context_override("582668e844564991")
    "sweep='582668e844564991'"
    """
    return f"{CONTEXT_KEY}='{sweep_id}'"


@dataclass(frozen=True)
class SweepContext:
    """``sweep_id``: the sweep's identity; ``axes``: the config keys it varies; ``progress``: the
    file a finished cell appends its line to (None: no progress bar); ``parent_run``: the MLflow
    parent run the launching process opened (None: the tracker finds or opens it)."""

    sweep_id: str
    axes: tuple[str, ...] = ()
    progress: str | None = None
    parent_run: str | None = None

    @classmethod
    def of_command(cls, experiment: str, overrides: list[str], axes: tuple[str, ...] = ()) -> SweepContext:
        """The context of a command's sweep (or single run) from its experiment and overrides."""
        return cls(sweep_id_from_argv(experiment, overrides), tuple(axes))

    @staticmethod
    def path(experiment_dir: Path, sweep_id: str) -> Path:
        """Where the context of sweep ``sweep_id`` of the experiment folder ``experiment_dir`` is kept."""
        return experiment_dir / ".hydra" / f"sweep-{sweep_id}.json"

    def write(self, experiment_dir: Path) -> Path:
        """Write the context to the experiment folder (atomically: a cell never reads half of it); its path."""
        path = self.path(experiment_dir, self.sweep_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        part = path.with_name(f".{path.name}.{os.getpid()}.part")
        part.write_text(json.dumps(asdict(self), sort_keys=True), encoding="utf-8")
        os.replace(part, path)
        return path

    @classmethod
    def read(cls, path: str | Path) -> SweepContext:
        """The context written at ``path``; ConfigError when it cannot be read (a sweep folder
        removed while its cells ran). Every cell of a sweep reads it: kept per file state."""
        try:
            st = os.stat(path)
            return _read(str(path), st.st_mtime_ns, st.st_size, st.st_ino)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ConfigError(f"{path}: the sweep's context cannot be read ({exc}) -- fix: run the cell from its sweep "
                              "command again (the sweep writes it), or drop the sweep= override") from exc


# Pure in the file's path and state (all in the key: a rewritten context is read again); bounded;
# the result is frozen.
@lru_cache(maxsize=8)
def _read(path: str, mtime_ns: int, size: int, inode: int) -> SweepContext:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    return SweepContext(str(data["sweep_id"]), tuple(str(a) for a in data.get("axes") or ()), data.get("progress"),
                        data.get("parent_run"))
