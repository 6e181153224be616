"""The report shows what the claim judge judged (issue 42): the drill-down and the answers-side-by-side
view list each claim of an answer with its verdict and the passage window its verdict rests on, marked;
the views' data (rag_bench/reporting/claims_view.py) on hand-built claims."""

from __future__ import annotations

import pytest

from rag_bench.reporting import claims_view
from rag_bench.reporting.report import render_report
from tests.reporting.cdp import CHROMIUM, Page

TEXT = "Rollo was a Viking. Rollo ruled Normandy from Rouen."


def _claim(**kw):
    base = {"text": "Rollo ruled Normandy", "citations": [2], "supported": False, "passage": None, "span_start": None,
            "span_end": None, "context_supported": False, "context_passage": None, "context_span_start": None,
            "context_span_end": None, "missing": []}
    return {**base, **kw}


def test_the_window_shown_is_the_supporting_one_first() -> None:
    cited = _claim(supported=True, passage=2, span_start=0, span_end=10, context_supported=True, context_passage=1,
                   context_span_start=0, context_span_end=5)
    assert claims_view.evidence(cited) == ("cited", 2, 0, 10)
    uncited = _claim(passage=2, span_start=0, span_end=10, context_supported=True, context_passage=1,
                     context_span_start=3, context_span_end=8)
    assert claims_view.evidence(uncited) == ("uncited", 1, 3, 8)
    assert claims_view.evidence(_claim(passage=2, span_start=0, span_end=10)) == ("short", 2, 0, 10)
    assert claims_view.evidence(_claim()) is None  # cites nothing, nothing supports it


def test_excerpt_and_segments_keep_the_records_offsets() -> None:
    s = TEXT.index("Rollo ruled")
    assert claims_view.excerpt(TEXT, s, len(TEXT)) == ["Rollo was a Viking. ", "Rollo ruled Normandy from Rouen.", ""]
    long = "x" * 1000
    before, marked, after = claims_view.excerpt(long, 100, 900)
    assert before.startswith("…") and " … " in marked and len(marked) < 500 and after.endswith("…")
    segs = claims_view.segments(TEXT, [(s, len(TEXT), 1, "cited"), (0, len(TEXT), 2, "short")])
    assert [(g["text"], g["claims"], g["kinds"]) for g in segs] == [
        ("Rollo was a Viking. ", [2], ["short"]), ("Rollo ruled Normandy from Rouen.", [1, 2], ["cited", "short"])]
    # a control character is shown visibly after the cut, so the cut is where the records say
    assert claims_view.segments("a\u202eb", [(2, 3, 1, "cited")])[1]["text"] == "b"
    shown = claims_view.shown([_claim(supported=True, passage=1, span_start=0, span_end=5)], [TEXT])
    assert shown[0]["evidence"] == {"kind": "cited", "passage": 1, "parts": ["", "Rollo", " was a Viking. Rollo ruled "
                                                                          "Normandy from Rouen."]}
    assert claims_view.records_claims(None) == [] and claims_view.records_claims(float("nan")) == []


@pytest.mark.skipif(CHROMIUM is None, reason="Debian chromium is not installed (.ci/run installs it)")
def test_drill_down_and_side_by_side_show_claims_and_marked_windows(demo_cells, tmp_path):
    cell = demo_cells["baseline"]
    r = cell.records
    judged = [(q, claims_view.records_claims(c)) for q, c in zip(r["qid"], r["claims"])]
    qid, claims = next((q, c) for q, c in judged if c)  # the extractive stand-in's answer: its claims judged
    index = render_report(cell.path.parent, out_root=tmp_path / "reports", log_to_mlflow=False)
    with Page(tmp_path / "p") as page:
        page.goto(index.as_uri() + f"#drill={cell.cell_id}&q={qid}&only=drill")
        page.wait(f"document.body.dataset.drillQ === '{qid}'")
        shown = page.eval("Array.from(document.querySelectorAll('#rb-detail .rb-claim')).map(d => "
                          "[d.className, d.querySelector('.rb-claim-text').textContent])")
        assert shown == [["rb-claim " + ("ok" if c["supported"] else "bad"), c["text"]] for c in claims]
        marks = page.eval("Array.from(document.querySelectorAll('#rb-detail .rb-claim mark')).map(m => m.className)")
        assert marks == [claims_view.evidence(c)[0] for c in claims if claims_view.evidence(c)]
        assert marks  # the stand-in copies passage sentences: its claims rest on a marked window
        page.eval(f"location.hash = 'side=1&sq={qid}'")
        page.wait("document.body.dataset.sideRows === '1'")
        side = page.eval("Array.from(document.querySelectorAll('#rb-side .rb-claim .rb-claim-text')).map(d => d.textContent)")
        assert side == [c["text"] for c in claims]
        assert page.eval("document.querySelectorAll('#rb-side .rb-claim mark').length") == len(marks)
        assert not page.errors
