"""The report's section "Can we trust the automatic answer measures?": from --labels or labels.jsonl
beside the dataset, kappa with CI, the labellers' kappa, raw vs PPI; escaped; absent without labels."""

from __future__ import annotations

import pytest

from rag_bench.calibration.report_section import section
from rag_bench.cells import load_cell
from rag_bench.errors import DataError
from tests.calibration.test_calibrate import write_cell, write_labels


def test_section_from_labels_beside_the_dataset_or_given(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    d = write_cell(tmp_path / "exp")
    (d / "config.yaml").write_text(f"dataset: {{path: '{data}'}}\npipeline: {{k: 3}}\n", encoding="utf-8")
    cell = load_cell(d)
    names = {cell.cell_id: "fixed <b>bm25</b>"}
    assert section([cell], names, [cell], None) is None  # no labels anywhere: no section
    write_labels(data / "labels.jsonl")
    body = section([cell], names, [cell], None)
    assert body is not None
    assert "<td>correct</td><td class='l'>correct</td><td>8</td><td>0.50</td><td>0.50</td><td>0.50" in body
    assert "(n=4)" in body and "PPI [95% CI]" in body
    assert "fixed &lt;b&gt;bm25&lt;/b&gt;" in body and "<b>bm25" not in body
    (data / "labels.jsonl").write_text("{oops\n", encoding="utf-8")
    assert "does not validate" in (section([cell], names, [cell], None) or "")
    with pytest.raises(DataError):  # a file given explicitly must be right
        section([cell], names, [cell], data / "labels.jsonl")


# --- issue 41: no machine path in the report; say when PPI reorders the cells ------------------


def test_the_labels_file_is_named_without_the_machines_path(tmp_path, monkeypatch):
    data = tmp_path / "kettleby"
    data.mkdir()
    d = write_cell(tmp_path / "exp")
    (d / "config.yaml").write_text(f"dataset: {{path: '{data}'}}\npipeline: {{k: 3}}\n", encoding="utf-8")
    cell = load_cell(d)
    write_labels(data / "labels.jsonl")
    monkeypatch.chdir(tmp_path / "exp")  # the report is made elsewhere than the dataset
    body = section([cell], {cell.cell_id: "c"}, [cell], None) or ""
    assert "from labels.jsonl beside the dataset (kettleby);" in body and str(tmp_path) not in body
    (data / "labels.jsonl").write_text("{oops\n", encoding="utf-8")
    broken = section([cell], {cell.cell_id: "c"}, [cell], None) or ""
    assert "labels.jsonl beside the dataset (kettleby) does not validate" in broken and str(tmp_path) not in broken
    # --labels: relative to the folder the report is made in, else the file's name alone.
    elsewhere = write_labels(tmp_path / "people.jsonl")
    assert "from people.jsonl;" in (section([cell], {cell.cell_id: "c"}, [cell], elsewhere) or "")
    monkeypatch.chdir(tmp_path)
    inside = tmp_path / "sub"
    inside.mkdir()
    write_labels(inside / "people.jsonl")
    assert "from sub/people.jsonl;" in (section([cell], {cell.cell_id: "c"}, [cell], inside / "people.jsonl") or "")


def _agreement(measure: str, estimates: dict[str, tuple[float, float, float, float]]):
    from rag_bench.calibration.agreement import Interval
    from rag_bench.calibration.calibrate import Agreement
    from rag_bench.calibration.ppi import PpiEstimate

    return Agreement(measure, "correct", measure, "", 40, 0, 0.3, 0.3, (0, 1), ((1, 0), (0, 1)), 0.8, Interval(), False,
                     cells=tuple((cid, cid, PpiEstimate(raw, ppi, lo, hi, 20, 60))
                                 for cid, (raw, ppi, lo, hi) in estimates.items()))


def _cells(*ids: str):
    from types import SimpleNamespace

    return [SimpleNamespace(cell_id=i) for i in ids]


def test_the_pairs_ppi_swaps_are_named():
    from rag_bench.calibration.report_section import Swap, _swaps_note, reorderings

    # The demo's top cells: raw 0.311 first, PPI puts two of the 0.295s above it (one stays level).
    a = _agreement("correct", {"top": (0.311, 0.277, 0.11, 0.44), "b": (0.295, 0.334, 0.20, 0.47),
                               "c": (0.295, 0.295, 0.14, 0.45), "d": (0.262, 0.230, 0.10, 0.36),
                               "few": (0.50, float("nan"), float("nan"), float("nan"))})
    swaps = reorderings([a], _cells("top", "b", "c", "d", "few"))
    assert swaps == [Swap("correct", "top", "b", 0.311, 0.295, 0.277, 0.334, True),
                     Swap("correct", "top", "c", 0.311, 0.295, 0.277, 0.295, True)]
    # b and c tie on the raw mean: PPI separating them is no swap; d stays below; "few" has no PPI.
    note = _swaps_note(swaps, {"top": "section hybrid", "b": "section dense", "c": "section bm25"},
                       _cells("top", "b", "c", "d"))
    assert "The PPI-corrected means reorder the cells" in note and "2 pair(s)" in note
    assert ("<b>section hybrid</b> (raw 0.311 → PPI 0.277) falls below 2 cell(s) it was ahead of: "
            "<b>section dense</b> (0.295 → 0.334), <b>section bm25</b> (0.295 → 0.295)") in note
    assert "the labels cannot tell those cells apart" in note
    apart = reorderings([_agreement("correct", {"x": (0.6, 0.2, 0.1, 0.3), "y": (0.5, 0.7, 0.6, 0.8)})],
                        _cells("x", "y"))
    assert apart == [Swap("correct", "x", "y", 0.6, 0.5, 0.2, 0.7, False)]
    assert "1 of the 1 swapped pairs have PPI intervals that do not overlap" in _swaps_note(apart, {}, _cells("x", "y"))
    kept = reorderings([_agreement("correct", {"x": (0.6, 0.55, 0.4, 0.7), "y": (0.5, 0.45, 0.3, 0.6)})],
                       _cells("x", "y"))
    assert kept == [] and "keep the order of the raw means" in _swaps_note(kept, {}, _cells("x", "y"))
