"""A finding about the data set every cell of a sweep repeats is not a console warning (issue 42: the
extractive stand-in cannot ask a clarifying question, which 36 demo cells said 36 times; issue 56: not
even once -- the verdict and the report say it); each cell's metrics.json keeps its own findings."""

from __future__ import annotations

import json
import logging

from rag_bench.memo import SharedWork
from rag_bench.runner.main import run_cell
from tests.adapters.test_clarify_outputs import clarify_dataset
from tests.conftest import compose_config


def test_a_finding_every_cell_repeats_is_no_console_warning(tmp_path, caplog):
    ds = clarify_dataset(tmp_path)
    work = SharedWork()  # what the Hydra app passes every cell of a sweep
    cells = []
    with caplog.at_level(logging.WARNING, logger="rag_bench"):
        for k in (3, 5):
            cells.append(run_cell(compose_config(["tracking=none", f"output.root={tmp_path / 'out'}",
                                                  f"dataset.path={ds}", "chunker=section", "generator=extractive",
                                                  f"pipeline.k={k}"]), work))
    said = [r.getMessage() for r in caplog.records if "expect a clarifying question" in r.getMessage()]
    assert said == []
    for cell in cells:  # both cells record it, as a finding
        metrics = json.loads((cell / "metrics.json").read_text())
        assert any(f.startswith("4 question(s) expect a clarifying question") for f in metrics["findings"])
        assert not any("expect a clarifying question" in w for w in metrics["warnings"])
