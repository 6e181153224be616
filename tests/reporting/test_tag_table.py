"""The per-tag table covers every tag: unanswerable tags (off_topic, internal_only) with their
refusal measures, answerable ones with their answer measures beside the ranking ones (issue 28 item 9)."""

from __future__ import annotations

import json

from rag_bench.cli import main as cli
from tests.conftest import TINY


def test_unanswerable_tags_have_refusal_measures_in_metrics_and_the_report(tmp_path, capsys):
    out = tmp_path / "out"
    assert cli(["run", f"dataset.path={TINY}", f"output.root={out}", "tracking=none", "experiment.name=t",
                "generator=extractive"]) == 0
    (done,) = (out / "t").glob("*/DONE")
    tags = json.loads((done.parent / "metrics.json").read_text())["by_tag"]
    assert {"off_topic", "internal_only"} <= set(tags)  # tags of unanswerable questions (dropped before)
    assert tags["off_topic"]["n"] == 1 and 0.0 <= tags["off_topic"]["correct_refusal_rate"] <= 1.0
    assert "correct" in tags["lexical"] and "ndcg@10" in tags["lexical"]
    assert cli(["report", str(out / "t"), "--out", str(tmp_path / "reports")]) == 0
    capsys.readouterr()
    page = next((tmp_path / "reports").rglob("index.html")).read_text()
    section = page.split("id='tags'", 1)[1] if "id='tags'" in page else page
    assert "off_topic" in section and "internal_only" in section and "correct_refusal_rate" in section


def test_failure_colours_are_semantic_successes_green_no_loss_green():
    # Issue 41 gave each stage its own hue family (tests/reporting/test_charts.py); what stays from
    # issue 28: a success is green and no loss is.
    from matplotlib.colors import to_rgb

    from rag_bench.failure_labels import GENERATION_CELL_LABELS
    from rag_bench.reporting.charts import FAILURE_COLORS

    assert set(GENERATION_CELL_LABELS) <= set(FAILURE_COLORS)
    for label in ("correct", "correct_refusal", "in_context"):
        r, g, b = to_rgb(FAILURE_COLORS[label])
        assert g > r and g > b, label
    for label in ("chunking", "unauthorized", "stale_version", "retrieval_miss", "ranking", "partial_evidence",
                  "context", "false_refusal", "generation", "citation", "hallucinated_answer"):
        r, g, b = to_rgb(FAILURE_COLORS[label])
        assert not (g > r and g > b), label


def test_an_axis_acting_after_the_ranking_has_no_main_effect_on_a_ranking_measure(tmp_path, capsys):
    out = tmp_path / "out"
    assert cli(["run", "-m", f"dataset.path={TINY}", f"output.root={out}", "tracking=none", "experiment.name=k",
                "generator=extractive", "pipeline.k=1,3", "retriever=bm25,dense"]) == 0
    assert cli(["report", str(out / "k"), "--out", str(tmp_path / "reports")]) == 0
    capsys.readouterr()
    page = next((tmp_path / "reports").rglob("index.html")).read_text()
    effects = page.split("<h2 id='effects'>", 1)[1].split("<h2", 1)[0]
    ndcg = effects.split("data-measure='retrieval/ndcg@10'", 1)[1].split("</div>", 1)[0]
    assert "data-v='retriever'" in ndcg and "data-v='pipeline.k'" not in ndcg.split("<tbody>", 1)[1]
    assert "Not shown: pipeline.k" in ndcg
    # The primary measure (correct: a generator ran) is one k can change: k is in its table.
    correct = effects.split("data-measure='generation/correct'", 1)[1].split("</div>", 1)[0]
    assert "data-v='pipeline.k'" in correct and "data-v='retriever'" in correct
