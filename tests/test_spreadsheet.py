"""rag_bench.spreadsheet: text a spreadsheet would run is written as text; numbers never change."""

from __future__ import annotations

import csv
import io

import numpy as np
import pandas as pd
import pytest

from rag_bench.spreadsheet import FORMULA_STARTS, neutralize, to_csv


@pytest.mark.parametrize("start", FORMULA_STARTS)
def test_every_formula_start_is_quoted(start):
    assert neutralize(start + "cmd|' /C calc'!A0") == "'" + start + "cmd|' /C calc'!A0"


@pytest.mark.parametrize("text", ["-3", "+1.5e3", "-0.25", ".5", "fixed", "", " =1+2", "x=1", "[-1, 2]"])
def test_plain_text_and_numbers_as_text_are_kept(text):
    assert neutralize(text) == text


def test_numeric_columns_keep_negative_numbers_and_text_columns_are_quoted():
    frame = pd.DataFrame({"label": ["=1+2", "-1+2", "plain"], "delta": [-0.5, -2.0, np.nan],
                          "rank": pd.array([-1, 2, None], dtype="Int64"), "ok": [True, False, True],
                          "mixed": ["-7", -7, None], "=col": [1, 2, 3]})
    rows = list(csv.reader(io.StringIO(str(to_csv(frame)))))
    assert rows[0] == ["label", "delta", "rank", "ok", "mixed", "'=col"]
    assert rows[1] == ["'=1+2", "-0.5", "-1", "True", "-7", "1"]
    assert rows[2] == ["'-1+2", "-2.0", "2", "False", "-7", "2"]
    assert rows[3] == ["plain", "", "", "True", "", "3"]
    assert frame["label"].tolist() == ["=1+2", "-1+2", "plain"]  # the caller's frame is not changed


def test_writes_a_file(tmp_path):
    path = tmp_path / "f.csv"
    assert to_csv(pd.DataFrame({"answer": ["@SUM(A1)"]}), path) is None
    assert path.read_text() == "answer\n'@SUM(A1)\n"
