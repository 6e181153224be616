"""A real model's claims, end to end (issue 42): the in-process llama.cpp generator (gemma3-270m, the
packaged model) answers demo questions; records.parquet holds each answer's claims with their
citations and verdicts; the label page (headless Chromium) shows them; a person's labels typed on
that page go to ``rag-bench calibrate``, which sets the claim judge beside them.

The questions are four of the demo set that this model answers instead of refusing (measured:
17 demo questions gave 4 such answers, 2m40s on 2 cores). What the tiny model says is not asserted,
only that what was judged is what is shown and compared."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest

from rag_bench.cli import main
from tests.calibration.test_label_page import _download, _key, _name
from tests.conftest import demo_subset
from tests.e2e.test_llm_endpoint import assert_claims_sane
from tests.reporting.cdp import CHROMIUM, Page

pytestmark = pytest.mark.slow
pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (pip install 'rag-bench-harness[llm]')")
ANSWERED = ("q001", "q025", "q061", "q079")


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
def test_a_real_models_claims_reach_records_the_label_page_and_calibrate(tmp_path, capsys, packaged_gguf):
    from tests.runner.test_run_cell import run

    data = demo_subset(tmp_path / "demo", ANSWERED)
    cell = run(tmp_path / "out", "generator=llama_cpp", f"generator.model={packaged_gguf}", "generator.max_tokens=160",
               dataset=data)
    records = pd.read_parquet(cell / "records.parquet")
    metrics = json.loads((cell / "metrics.json").read_text())
    assert metrics["generation"]["unparseable"] == 0  # the grammar bounds the sources list
    assert_claims_sane(records, metrics)
    judged = [q for q, c in zip(records["qid"], records["claims"]) if len(c)]
    assert judged, "no answer of the real model had a claim to judge"
    claims = {q: list(c) for q, c in zip(records["qid"], records["claims"])}

    html = tmp_path / "label.html"
    assert main(["label", str(cell), "--n", str(len(records)), "--out", str(html)]) == 0
    downloads = tmp_path / "dl"
    downloads.mkdir()
    with Page(tmp_path / "p") as page:
        page.send("Page.setDownloadBehavior", behavior="allow", downloadPath=str(downloads))
        page.send("Page.navigate", url=html.as_uri())
        page.wait("document.body && document.body.dataset.ready === '1'")
        _name(page, "person")
        shown = 0
        for _ in range(len(records)):
            item = page.eval("document.getElementById('lb-item').textContent")
            qid = re.search(r" · (q\d+)", item).group(1)  # "answer 1 of 4 · q001 ..."
            texts = page.eval("Array.from(document.querySelectorAll('#lb-item .claim')).map(function (d) {"
                              " return d.textContent; })")
            # every claim shown with its verdict: the records' own
            assert len(texts) == len(claims[qid])
            for t, c in zip(texts, claims[qid]):
                assert c["text"] in t and t.startswith("✓") == bool(c["supported"])
            shown += bool(texts)
            _key(page, "n")  # correct: no
            _key(page, "n")  # faithfulness: no
        assert shown == len(judged)
        target = _download(page, downloads)
        assert page.errors == []
    capsys.readouterr()
    assert main(["calibrate", str(cell), "--labels", str(target), "--json"]) == 0
    measured = {m["measure"]: m for m in json.loads(capsys.readouterr().out)["measures"]}
    for name in ("faithfulness (offline claim judge)", "citation support per claim"):
        row = measured[name]
        assert row["n"] == len(judged) and row["n"] + row["n_undefined"] == len(records) - int(records["refused"].sum())
