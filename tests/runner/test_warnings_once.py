"""A warning every cell of a sweep repeats is printed once on the console (issue 42: the extractive
stand-in cannot ask a clarifying question, which 36 demo cells said 36 times); each cell's
metrics.json keeps its own warnings."""

from __future__ import annotations

import json
import logging

from rag_bench.memo import SharedWork
from rag_bench.runner.main import run_cell
from tests.adapters.test_clarify_outputs import clarify_dataset
from tests.conftest import compose_config


def test_a_warning_every_cell_repeats_is_printed_once_per_sweep(tmp_path, caplog):
    ds = clarify_dataset(tmp_path)
    work = SharedWork()  # what the Hydra app passes every cell of a sweep
    cells = []
    with caplog.at_level(logging.WARNING, logger="rag_bench"):
        for k in (3, 5):
            cells.append(run_cell(compose_config(["tracking=none", f"output.root={tmp_path / 'out'}",
                                                  f"dataset.path={ds}", "chunker=section", "generator=extractive",
                                                  f"pipeline.k={k}"]), work))
    said = [r.getMessage() for r in caplog.records if "expect a clarifying question" in r.getMessage()]
    assert len(said) == 1 and said[0].startswith(f"warning: cell {cells[0].name}: 4 question(s)")
    for cell in cells:  # both cells record it
        warnings = json.loads((cell / "metrics.json").read_text())["warnings"]
        assert any("expect a clarifying question" in w for w in warnings)
    # a run of its own (no shared work) says it again
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="rag_bench"):
        run_cell(compose_config(["tracking=none", f"output.root={tmp_path / 'other'}", f"dataset.path={ds}",
                                 "chunker=section", "generator=extractive"]))
    assert any("expect a clarifying question" in r.getMessage() for r in caplog.records)
