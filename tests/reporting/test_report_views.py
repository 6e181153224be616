"""The report's interactive views in headless Chromium, driven over the DevTools protocol: the
measure selector changes the main-effects view, the answers-side-by-side view shows N answers per
question and its disagreement filter narrows the list to the questions the cells disagree on; an
answer holding markup is shown as text (issue 28)."""

from __future__ import annotations

import math
import shutil

import pandas as pd
import pytest

from rag_bench.cells import experiment_cells
from rag_bench.decision import decide
from rag_bench.reporting.report import render_report
from tests.reporting.cdp import CHROMIUM, Page

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Debian chromium is not installed (.ci/run installs it)")


@pytest.fixture(scope="module")
def views_report(demo_cells, tmp_path_factory):
    exp = demo_cells["baseline"].path.parent
    return render_report(exp, out_root=tmp_path_factory.mktemp("views"), log_to_mlflow=False)


def _verdict(row: pd.Series) -> bool | None:
    """As the page judges an answer: correct when defined, else (unanswerable) refused."""
    c = row.get("correct")
    if c is not None and not (isinstance(c, float) and math.isnan(c)):
        return bool(c > 0)
    return bool(row["refused"]) if not row["answerable"] else None


def test_the_measure_selector_changes_the_main_effects_view(views_report, tmp_path):
    with Page(tmp_path / "p") as page:
        page.goto(views_report.as_uri())
        visible = "Array.from(document.querySelectorAll('.rb-effect')).filter(b => !b.hidden)"
        first = page.eval(f"{visible}.map(b => [b.dataset.measure, b.querySelector('table').textContent])")
        # the primary measure: a stand-in generator ran (context or refusal, not its answers)
        assert len(first) == 1 and first[0][0] == "answer/context_all"
        assert page.eval("document.body.dataset.effect") == "answer/context_all"
        page.eval("var s = document.getElementById('rb-effect'); s.value = 'retrieval/ndcg@10';"
                  "s.dispatchEvent(new Event('change'))")
        page.wait("document.body.dataset.effect === 'retrieval/ndcg@10'")
        after = page.eval(f"{visible}.map(b => [b.dataset.measure, b.querySelector('table').textContent])")
        assert len(after) == 1 and after[0][0] == "retrieval/ndcg@10" and after[0][1] != first[0][1]
        assert "effect=retrieval%2Fndcg%4010" in page.eval("location.hash")  # the state is in the URL
        options = page.eval("Array.from(document.getElementById('rb-effect').options).map(o => o.value)")
        assert options[:4] == ["answer/context_all", "generation/correct", "retrieval/ndcg@10", "latency"]
        assert "tokens" in options
        assert not page.errors


def test_answers_side_by_side_and_the_disagreement_filter(views_report, demo_cells, tmp_path):
    cells = experiment_cells(demo_cells["baseline"].path.parent)
    ranked = decide.rank(cells, decide.primary_measure(cells))  # the report's order
    # The best cell and a picked one: the cell of 100-character windows, which answers differently.
    picked = demo_cells["regression"]
    assert ranked[0].cell_id != picked.cell_id
    records = [c.records.set_index("qid") for c in (ranked[0], picked)]
    verdicts = {q: [_verdict(r.loc[q]) for r in records] for q in records[0].index}
    differ = {q for q, v in verdicts.items() if True in v and False in v}
    assert 0 < len(differ) < len(verdicts)  # the demo cells disagree on some questions, not all

    with Page(tmp_path / "p") as page:
        page.goto(views_report.as_uri() + f"#side=1&pick={picked.cell_id}")
        page.wait("document.body.dataset.sideRows === String(%d)" % len(verdicts))
        assert page.eval("document.body.dataset.sideCells") == "2"
        qid = records[0].index[0]
        answers = page.eval(f"Array.from(document.querySelectorAll('#rb-side tr[data-qid=\"{qid}\"] td.ans "
                            ".rb-answer')).map(d => d.textContent)")
        assert len(answers) == 2
        for shown, rec in zip(answers, records):
            assert str(rec.loc[qid, "answer"]) in shown
        heads = page.eval("Array.from(document.querySelectorAll('#rb-side thead th')).map(t => t.textContent)")
        rank = [c.cell_id for c in ranked].index(picked.cell_id) + 1
        assert heads[1].startswith("1. ") and heads[2].startswith(f"{rank}. ")

        page.eval("var d = document.getElementById('rb-side-differ'); d.checked = true;"
                  "d.dispatchEvent(new Event('change'))")
        page.wait("document.body.dataset.sideRows === String(%d)" % len(differ))
        shown = set(page.eval("Array.from(document.querySelectorAll('#rb-side tbody tr')).map(r => r.dataset.qid)"))
        assert shown == differ and "differ=1" in page.eval("location.hash")

        page.eval("location.hash = 'side=3'")  # a link to the top three: three answers per question
        page.wait("document.body.dataset.sideCells === '3'")
        assert page.eval(f"document.querySelectorAll('#rb-side tr[data-qid=\"{qid}\"] td.ans').length") == 3
        page.eval(f"document.querySelector('#rb-side tr[data-qid=\"{qid}\"] td.q a').click()")  # one question alone
        page.wait("document.body.dataset.sideRows === '1'")
        assert f"sq={qid}" in page.eval("location.hash")
        assert not page.errors


def test_an_answer_holding_markup_is_shown_as_text(demo_cells, tmp_path):
    exp = tmp_path / "exp"
    cell = shutil.copytree(demo_cells["baseline"].path, exp / demo_cells["baseline"].path.name)
    records = pd.read_parquet(cell / "records.parquet")
    records.loc[0, "answer"] = "<img id='pwn' src=x onerror=\"document.title='pwned'\"> 42"
    records.to_parquet(cell / "records.parquet")
    index = render_report(exp, out_root=tmp_path / "reports", log_to_mlflow=False)
    with Page(tmp_path / "p") as page:
        page.goto(index.as_uri() + "#side=1")
        page.wait("document.body.dataset.sideRows")
        assert page.eval("document.getElementById('pwn')") is None and page.eval("document.title") != "pwned"
        assert "<img id='pwn'" in page.eval("document.getElementById('rb-side').textContent")
