"""The MLflow parent run of each sweep this process knows, by (tracking URI, experiment, sweep id).

Created by the launching process, or by the child finishing cells and reported back through
:class:`~rag_bench.tracking.background.BackgroundLogger`; closed by
:func:`rag_bench.tracking.mlflow_tracker.finish_all` with the sweep. A module of its own so the
calling side of the background finisher records a parent run without importing the tracker,
which imports it.
"""

from __future__ import annotations

PARENT_RUNS: dict[tuple[str, str, str], str] = {}  # (uri, experiment, sweep_id) -> parent run id
