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
