"""Tracker protocol: where a cell's results are logged besides its folder."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from rag_bench.stages import STAGES, Null, stage_names


def cell_tags(config: Mapping[str, Any], *, dataset_fingerprint: str, dataset: str,
              **extra: str) -> dict[str, str]:
    """The tags of a cell's run, the same whether it is logged live or uploaded by ``sync``: the
    dataset, each stage's option name, and ``extra`` (``git_sha``, ``synced``)."""
    return {"dataset_fingerprint": dataset_fingerprint, "dataset": dataset, **stage_names(config, STAGES), **extra}


class Tracker(Protocol):
    """Logs one run per cell, nested under one parent run per sweep."""

    def bind(self, *, output_root: Path, experiment: str, sweep_id: str) -> None:
        """Tell the tracker where results live and which sweep the cell belongs to."""
        ...

    def check(self) -> None:
        """Raise TrackingError before any work when the backend cannot be reached."""
        ...

    def log_cell(self, *, cell_id: str, cell_dir: Path, params: dict[str, Any], metrics: dict[str, float],
                 tags: dict[str, str]) -> str | None:
        """Create the cell's run, log params/metrics/tags/artifacts, finish it; return its id."""
        ...

    def finish_sweep(self, ok: bool) -> None:
        """Close the sweep's parent run (FINISHED or FAILED)."""
        ...

    def describe(self) -> dict[str, str | None]:
        """Where results went (stored in the cell's DONE), e.g. tracking URI and parent run id."""
        ...


class NullTracker(Null):
    """``tracking=none``: results live only in the cell folders."""

    def bind(self, *, output_root: Path, experiment: str, sweep_id: str) -> None:
        """Nothing to bind."""

    def check(self) -> None:
        """Always reachable."""

    def log_cell(self, *, cell_id: str, cell_dir: Path, params: dict[str, Any], metrics: dict[str, float],
                 tags: dict[str, str]) -> str | None:
        """Log nothing."""
        return None

    def finish_sweep(self, ok: bool) -> None:
        """Nothing to close."""

    def describe(self) -> dict[str, str | None]:
        """No tracking."""
        return {"tracking": "none"}
