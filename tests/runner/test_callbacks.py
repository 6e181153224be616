"""rag_bench.runner.callbacks: the sweep's closing runs with the collector tuned (issue 57)."""

import gc

from rag_bench import heap
from rag_bench.runner.callbacks import SweepCallbacks


def test_the_closing_report_runs_with_the_collector_tuned_and_puts_it_back(monkeypatch):
    """Two full collections of ~1 s each walked the loaded models in the squad2-normans grid's closing
    MLflow publish, which ran after the launcher's batch had put the collector back."""
    seen = []
    callbacks = SweepCallbacks()
    monkeypatch.setattr(callbacks, "_end", lambda config=None: seen.append((gc.get_freeze_count(),
                                                                             gc.get_threshold()[0])))
    before = gc.get_threshold(), gc.get_freeze_count()
    callbacks.on_multirun_end(config=None)
    assert len(seen) == 1 and seen[0][0] > before[1] and seen[0][1] >= heap.YOUNG_THRESHOLD
    assert (gc.get_threshold(), gc.get_freeze_count()) == before


def test_the_mlflow_store_is_opened_with_the_collector_tuned(monkeypatch, tmp_path):
    """Importing MLflow and opening the store before the sweep ran five full collections (0.6 s) over
    the growing heap; tuned (rag_bench.heap), none of them ran."""
    from omegaconf import OmegaConf

    from rag_bench.runner import callbacks, config
    from rag_bench.runner.sweep_context import SweepContext

    seen = []

    class Tracker:
        def bind(self, **kwargs):
            pass

        def prepare(self):
            seen.append((gc.get_freeze_count(), gc.get_threshold()[0]))
            return "parent-run"

    monkeypatch.setattr(config, "build", lambda cfg, what: Tracker())
    cfg = OmegaConf.create({"tracking": {"name": "mlflow"}, "experiment": {"name": "exp"},
                            "output": {"root": str(tmp_path)}})
    before = gc.get_threshold(), gc.get_freeze_count()
    assert callbacks.prepare_tracking(cfg, SweepContext("s1")) == "parent-run"
    assert len(seen) == 1 and seen[0][0] > before[1] and seen[0][1] >= heap.YOUNG_THRESHOLD
    assert (gc.get_threshold(), gc.get_freeze_count()) == before
