"""benchmarks/sweep.py's arithmetic (no timing asserted: speeds are what it prints on the machine at hand)."""

from __future__ import annotations

import doctest
import importlib.util
import sys
from pathlib import Path


def _bench():  # type: ignore[no-untyped-def]
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "sweep.py"
    spec = importlib.util.spec_from_file_location("sweep_bench", path)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = bench  # its dataclasses look their module up by name
    try:
        spec.loader.exec_module(bench)
    finally:
        del sys.modules[spec.name]
    return bench


def test_paired_rounds_give_the_median_of_each_rounds_ratio_not_of_the_fastest_runs():
    bench = _bench()
    # the fastest runs (40 / 42) would say 0.95; the rounds, minutes apart, say 0.95, 1.11 and 1.00
    line = bench.paired("cold", [(40.0, 60.0), (50.0, 70.0), (44.0, 66.0)],
                        [(42.0, 57.0), (45.0, 64.0), (44.0, 60.0)], "today / ref")
    assert line.startswith("ratio today / ref (cold), median of 3 rounds: 1.00 wall, 1.09 CPU")
    assert line.endswith("(rounds, wall: 0.95 1.11 1.00)")
    # an even number of rounds: the mean of the middle two
    assert "median of 2 rounds: 1.05 wall" in bench.paired("cold", [(40.0, 1.0), (55.0, 1.0)],
                                                          [(40.0, 1.0), (50.0, 1.0)], "a / b")


def test_its_examples_run():
    result = doctest.testmod(_bench())
    assert result.attempted > 0 and result.failed == 0
