"""The sweeper behind ``rag-bench run -m``: Hydra's basic grid, ordered for sharing, with progress.

The class lives in ``hydra_plugins.rag_bench_sweeper`` (Hydra only loads plugins from that
namespace); its logic is here. It is Hydra's :class:`BasicSweeper` (same override syntax, ``hydra.sweeper.params`` presets,
``max_batch_size``) with four changes:

* **Order.** The grid is expanded stage by stage — dataset, chunker, embedder, index,
  retriever, reranker, generator, judge, then everything else (k, eval settings) innermost —
  whatever order the overrides were typed in. Cells that share chunks, an index or rankings then
  run back to back, so the pipeline's small in-process LRU caches hit and memory stays bounded.
* **Validation.** Hydra composes every job twice (once to validate the batch, once to run it);
  at ~0.1 s per composition that is minutes for a large grid. Here the batch is validated on a
  covering subset: every ``key=value`` of the sweep appears in at least one validated job, so a
  misspelt option still fails before the first cell runs.
* **Compose once.** The launcher and the validation compose through
  :class:`~rag_bench.fast.compose.ComposeOnce`: the same configs Hydra composes, but cells that
  differ only in values share one composition and the YAML files are parsed once per sweep.
* **Progress.** A ``sweep`` progress bar (cells finished / total, ETA), fed by a progress file
  that every cell appends to when it ends (:class:`~rag_bench.runner.callbacks.SweepCallbacks`),
  so it also counts cells finished by joblib workers or submitit jobs. Quiet when stderr is not
  a terminal.
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.override_parser.types import Override
from tqdm import tqdm

from rag_bench.components import SWEEP_ORDER
from rag_bench.errors import ConfigError
from rag_bench.runner.sweep_context import SweepContext

log = logging.getLogger(__name__)



@dataclass
class RagBenchSweeperConf:
    """Hydra config of the sweeper (``hydra/sweeper=rag_bench``, the default)."""

    _target_: str = "hydra_plugins.rag_bench_sweeper.rag_bench_sweeper.RagBenchSweeper"
    max_batch_size: int | None = None
    params: dict[str, str] | None = None


def stage_rank(key: str) -> int:
    """Position of an override key in :data:`SWEEP_ORDER` (others after every stage).

    >>> [stage_rank(k) for k in ("pipeline.k", "chunker", "chunker.max_chars", "+dataset.path")]
    [10, 2, 2, 0]
    """
    head = key.lstrip("+~").split(".")[0].split("/")[0]
    return SWEEP_ORDER.index(head) if head in SWEEP_ORDER else len(SWEEP_ORDER)


def stage_order(overrides: list[Override]) -> list[Override]:
    """Overrides sorted by :func:`stage_rank`; stable, so ties keep the order they were typed in
    (and a repeated key still lets the last value win). A sweep over prices is refused: prices are
    not in the cell id, so its cells would be one cell computed twice."""
    for o in overrides:
        key = o.get_key_element().lstrip("+~")
        if o.is_sweep_override() and (key == "prices" or key.startswith(("prices.", "prices/"))):
            raise ConfigError(f"{key} is swept, but prices are not part of the cell id: every value would be the "
                              f"same cell -- fix: give one price table per run ({key}=<one value>); to compare "
                              "prices, run the sweep once per table under its own experiment.name")
    return sorted(overrides, key=lambda o: stage_rank(o.get_key_element()))


def expand(overrides: list[Override]) -> list[list[str]]:
    """The grid as one override list per cell, stages outermost: Hydra's own expansion of the
    stage-ordered overrides (its product varies the last axis fastest)."""
    return BasicSweeper.split_arguments(stage_order(overrides), None)[0]


def covering_subset(batch: list[list[str]]) -> list[list[str]]:
    """Jobs such that every override of ``batch`` occurs in at least one of them.

    >>> covering_subset([["a=1", "b=1"], ["a=1", "b=2"], ["a=2", "b=1"], ["a=2", "b=2"]])
    [['a=1', 'b=1'], ['a=1', 'b=2'], ['a=2', 'b=1']]
    """
    seen: set[str] = set()
    chosen = []
    for job in batch:
        if not seen.issuperset(job):
            chosen.append(job)
            seen.update(job)
    return chosen


class Progress:
    """A tqdm bar over cells, advanced by lines appended to a progress file."""

    def __init__(self, path: Path, total: int, disable: bool | None = None, file: Any = None) -> None:
        self.path, self.total = path, total
        self.stop = threading.Event()
        self.bar = tqdm(total=total, desc="sweep", unit="cell", disable=disable, dynamic_ncols=True, file=file)
        self.thread = threading.Thread(target=self._poll, name="rag_bench-progress", daemon=True)

    def _count(self) -> int:
        try:
            with open(self.path, "rb") as fh:
                return min(self.total, fh.read().count(b"\n"))
        except OSError:
            return 0

    def _poll(self) -> None:
        while not self.stop.wait(0.5):
            self.bar.update(self._count() - self.bar.n)

    def __enter__(self) -> Progress:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop.set()
        self.thread.join()
        self.bar.update(self._count() - self.bar.n)
        self.bar.close()


def record_progress(sweep: SweepContext, status: str, cell: str = "") -> None:
    """Append one line for a finished cell to the sweep's progress file (no-op without one)."""
    path = sweep.progress
    if not path:
        return
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"{status} {cell}\n".encode())  # one write with O_APPEND: lines never interleave
        finally:
            os.close(fd)
    except OSError:
        pass
