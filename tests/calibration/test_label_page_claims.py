"""rag-bench label shows what the claim judge judged (issue 42): each claim of the answer with its verdict,
and in the passages the window each verdict rests on, marked (<mark>), in headless Chromium."""

from __future__ import annotations

import pandas as pd
import pytest

from rag_bench.cli import main
from rag_bench.evaluation.scorers.claims import claim_record
from rag_bench.metrics.support import judge_claims
from tests.calibration.test_calibrate import write_cell
from tests.reporting.cdp import CHROMIUM, Page

VIKING = "Rollo was a Viking chief from Scandinavia. <b>He</b> sailed up the Seine."
NORMANDY = "Rollo became the first ruler of Normandy in 911."
ANSWER = "Rollo was a Viking chief [1]. Rollo became ruler of Normandy in 1066 [2]. Paris is a big city."


def _cell_with_claims(root):
    cell = write_cell(root)
    r = pd.read_parquet(cell / "records.parquet").iloc[:1].copy()
    judged = judge_claims(ANSWER, (1, 2), [(1, VIKING), (2, NORMANDY)])
    r["answer"], r["refused"], r["answerable"] = [ANSWER], [False], [True]
    r["context_ids"], r["context_texts"], r["citations"] = [["d#0", "d#1"]], [[VIKING, NORMANDY]], [[1, 2]]
    r["claims"] = [[claim_record(v) for v in judged]]
    r.to_parquet(cell / "records.parquet")
    return cell, judged


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
def test_the_label_page_shows_each_claim_its_verdict_and_the_marked_window(tmp_path):
    cell, judged = _cell_with_claims(tmp_path / "exp")
    assert [(v.supported, v.context_supported) for v in judged] == [(True, True), (False, False), (False, False)]
    html = tmp_path / "label.html"
    assert main(["label", str(cell), "--n", "1", "--out", str(html)]) == 0
    with Page(tmp_path / "p") as page:
        page.send("Page.navigate", url=html.as_uri())
        page.wait("document.body && document.body.dataset.ready === '1'")
        claims = page.eval("Array.from(document.querySelectorAll('#lb-item .claim')).map(function (d) {"
                           " return [d.className, d.textContent]; })")
        assert [c[0] for c in claims] == ["claim ok", "claim bad", "claim bad"]
        assert claims[0][1].startswith("✓ 1. Rollo was a Viking chief") and "cites [1]: supported" in claims[0][1]
        assert claims[1][1].startswith("✗ 2. Rollo became ruler of Normandy in 1066") and "unsupported" in claims[1][1]
        assert "marked in passage [2]" in claims[1][1]  # the cited passage it was judged by, short of it
        assert "cites nothing" in claims[2][1]  # no marker in its sentence: uncited
        marks = page.eval("Array.from(document.querySelectorAll('#lb-item .pass mark')).map(function (m) {"
                          " return [m.className, m.dataset.claims, m.textContent]; })")
        # the verdicts rest on whole passages (one window per passage): passage 1 supports claim 1,
        # passage 2 is where claim 2 falls short (1066 is not there)
        assert marks == [["cited", "1", VIKING], ["short", "2", NORMANDY]]
        assert page.eval("document.querySelectorAll('#lb-item mark *').length") == 0  # the passage's <b> stays text
        assert page.errors == []
