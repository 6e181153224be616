"""MLflow's ``log_batch`` within its limits: what the tracker and the experiment's view
(:mod:`rag_bench.tracking.view`) both write with."""

from __future__ import annotations

from typing import Any


def log_batches(client: Any, run_id: str, metrics: list[Any], params: list[Any], tags: list[Any]) -> None:
    """``log_batch`` in as few calls as MLflow's limits allow (1000 entities, 100 params or tags)."""
    from mlflow.utils.validation import MAX_ENTITIES_PER_BATCH, MAX_PARAMS_TAGS_PER_BATCH

    while metrics or params or tags:
        p, params = params[:MAX_PARAMS_TAGS_PER_BATCH], params[MAX_PARAMS_TAGS_PER_BATCH:]
        t, tags = tags[:MAX_PARAMS_TAGS_PER_BATCH - len(p)], tags[MAX_PARAMS_TAGS_PER_BATCH - len(p):]
        room = MAX_ENTITIES_PER_BATCH - len(p) - len(t)
        m, metrics = metrics[:room], metrics[room:]
        client.log_batch(run_id, metrics=m, params=p, tags=t)
