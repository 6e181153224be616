"""The report's numbers behind its charts (issue 41, "charts that cannot mislead"): the main effects'
intervals are over questions, recomputed from every cell's records on one shared draw; the cost
table sets end-to-end latency per question (retrieval + rerank + the generator's call) beside the
retrieval p50 instead of the generation stage's wall time; the Pareto chart gets each cell's CI."""

from __future__ import annotations

import html
import re

import numpy as np
import pytest

from rag_bench.cells import experiment_cells
from rag_bench.decision import effects
from rag_bench.evaluation import measures
from rag_bench.reporting import report, views


@pytest.fixture(scope="module")
def cells(demo_cells):
    return experiment_cells(demo_cells["baseline"].path.parent)


def _text(fragment: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", " ", fragment))


def test_main_effects_in_the_page_are_over_questions(cells, tmp_path):
    shown = views.views(cells, measures.CORRECT.key)
    body = report._effects(cells, ["chunker", "retriever.k1"], shown, None, tmp_path)
    # The numbers the page prints are those of a bootstrap over the questions, every cell on one draw.
    qids = views.question_ids(cells)
    frame = report._effect_frame(cells, ["chunker", "retriever.k1"], shown[0])
    samples = shown[0].resampled(cells, qids, effects.draws(len(qids)))
    found = effects.main_effects(frame, ["chunker", "retriever.k1"], shown[0].key, samples=samples)
    chunker = next(e for e in found if e.axis == "chunker")
    best = chunker.levels[0]
    assert f"{best.value}: {best.mean:.3f} [{best.lo:.3f}, {best.hi:.3f}]" in body
    assert f"[{chunker.spread_lo:.3f}, {chunker.spread_hi:.3f}]" in body
    # A level of one cell has the cell's own interval over questions (its metrics.json CI, drawn the
    # same way), where an interval over cells would have been a point.
    alone = next(lv for lv in chunker.levels if lv.cells == 1)  # the fixed chunker: one cell
    one = next(c for i, c in enumerate(cells) if frame.loc[i, "chunker"] == alone.value)
    own = one.metrics["ci"][measures.CORRECT.key]
    assert alone.hi - alone.lo == pytest.approx(own[1] - own[0], rel=0.25) and alone.hi - alone.lo > 0.05
    text = _text(body)
    assert "Every interval is over questions, not over cells" in text
    assert "the axis starts at 0 unless its label says otherwise" in text
    assert "colour scale is fitted to the values shown" in text


def test_every_view_resamples_from_the_records(cells):
    qids = views.question_ids(cells)
    d = effects.draws(len(qids), resamples=200)
    for view in views.views(cells, measures.CORRECT.key):
        samples = view.resampled(cells, qids, d)
        assert samples.shape == (len(cells), 200)
        have = [i for i, c in enumerate(cells) if view.of(c) is not None]
        assert have and not np.isnan(samples[have]).all(axis=1).any(), view.key
        # each cell's draws straddle the cell's own number
        for i in have:
            lo, hi = np.nanquantile(samples[i], [0.025, 0.975])
            assert lo <= view.of(cells[i]) + 1e-9 and view.of(cells[i]) <= hi + 1e-9, (view.key, cells[i].cell_id)


def test_end_to_end_view_rebuilds_the_scorers_figure_from_the_records(cells):
    from rag_bench.evaluation.scorers.latency import E2E_P50

    qids = views.question_ids(cells)
    timed = [c for c in cells if c.metrics["latency"].get(E2E_P50.name) is not None]
    assert timed  # the test session's generation cache starts empty: the first cell generated
    for c in timed:
        per_question = views.end_to_end_ms(c, qids)
        fresh = ~c.records["generation_cached"].to_numpy(bool)
        assert np.isnan(per_question[~fresh]).all() and not np.isnan(per_question[fresh]).any()
        assert np.percentile(per_question[fresh], 50) == pytest.approx(c.metrics["latency"][E2E_P50.name])


def test_cost_table_sets_end_to_end_latency_beside_retrieval(cells):
    names = {c.cell_id: c.cell_id for c in cells}
    body = report._costs(cells, names)
    head = re.search(r"<thead>(.*?)</thead>", body).group(1)
    columns = [_text(h).strip() for h in re.findall(r"<th[^>]*>(.*?)</th>", head)]
    assert "s / question" not in columns
    assert columns[1:8] == ["retrieve p50 ms", "retrieve p95 ms", "rerank p50 ms", "end to end p50 ms",
                            "end to end p95 ms", "generator call p50 ms", "answers timed"]
    rows = {re.search(r"<td class='l'[^>]*>([0-9a-f]+)</td>", r).group(1): r
            for r in re.findall(r"<tr>(.*?)</tr>", body.split("<tbody>", 1)[1]) if "<td class='l'" in r}
    for c in cells:
        e2e = c.metrics["latency"].get("e2e_p50_ms")
        cached = int(c.records["generation_cached"].sum())
        tds = re.findall(r"<td[^>]*>(.*?)</td>", rows[c.cell_id])
        assert tds[7] == f"{len(c.records) - cached}/{len(c.records)}"
        assert tds[4] == ("" if e2e is None else report._short(e2e))
    text = _text(body)
    assert "retrieval + rerank + the generator's call, summed per question" in text
    assert "left out, not counted as free" in text


def test_pareto_chart_gets_each_cells_interval_over_questions(cells, tmp_path, monkeypatch):
    from rag_bench.reporting import charts

    seen = {}

    def pareto(quality, cost, front, names, path, **kw):
        seen.setdefault(kw["cost_label"], kw["ci"])
        return None

    monkeypatch.setattr(charts, "pareto", pareto)
    report._pareto(cells, {c.cell_id: c.cell_id for c in cells}, measures.CORRECT.key, tmp_path)
    assert seen[views.LATENCY.title] == [c.metrics["ci"][measures.CORRECT.key] for c in cells]
