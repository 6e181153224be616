"""rag-bench label: the static page in headless Chromium (DevTools protocol): it continues an existing
labels file, three answers are labelled by key presses, the download is a labels.jsonl that calibrate
reads; an answer holding markup stays text. Sampling and the CLI's refusals without a browser."""

from __future__ import annotations

import json
import time

import pandas as pd
import pytest

from rag_bench.calibration.labels import answer_digest, load_labels
from rag_bench.cli import main
from rag_bench.reporting.label_page import sample
from tests.calibration.test_calibrate import ANSWERS, write_cell
from tests.reporting.cdp import CHROMIUM, Page


def _key(page: Page, key: str) -> None:
    if len(key) == 1:
        page.send("Input.dispatchKeyEvent", type="keyDown", key=key, text=key)
    else:  # a named key (ArrowLeft) carries no text
        page.send("Input.dispatchKeyEvent", type="rawKeyDown", key=key, windowsVirtualKeyCode=37)
    page.send("Input.dispatchKeyEvent", type="keyUp", key=key)


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
def test_label_three_answers_by_key_download_and_calibrate(tmp_path, capsys):
    exp = tmp_path / "exp"
    cell = write_cell(exp)
    before = tmp_path / "before.jsonl"  # q01 labelled already: the page starts at q02
    before.write_text("".join(json.dumps({"qid": "q01", "answer_sha256": answer_digest(ANSWERS[0]), "measure": m,
                                          "value": 1, "labeller": "t"}) + "\n" for m in ("correct", "faithfulness")),
                      encoding="utf-8")
    html = tmp_path / "label.html"
    assert main(["label", str(cell), "--n", "10", "--labels", str(before), "--out", str(html)]) == 0
    downloads = tmp_path / "dl"
    downloads.mkdir()
    with Page(tmp_path / "p") as page:
        page.send("Page.setDownloadBehavior", behavior="allow", downloadPath=str(downloads))
        page.send("Page.navigate", url=html.as_uri())
        page.wait("document.body && document.body.dataset.ready === '1'")
        assert page.eval("document.body.dataset.current") == "1"
        assert page.eval("document.body.dataset.labelled") == "1"
        for key in ("y", "y", "n", "1", "0", "n"):  # q02: yes/yes; q03: no/yes; q04: no/no
            _key(page, key)
        page.wait("document.body.dataset.labelled === '4'")
        assert page.eval("document.body.dataset.current") == "4"  # on to q05; back to q04
        _key(page, "ArrowLeft")
        text = page.eval("document.getElementById('lb-item').textContent")
        assert "<img src=x" in text and "</script><b>x</b>" in text  # q04's answer shown as text
        assert page.eval("document.body.dataset.pwned") is None
        assert page.eval("document.querySelectorAll('#lb-item img, #lb-item b.x').length") == 0
        assert "[3] names no passage it was given" in text  # q04 cites [3] of two passages
        assert page.eval("document.getElementById('lb-progress').textContent") == "4 / 10 answers labelled"
        page.eval("document.getElementById('lb-download').click()")
        target = downloads / "labels.jsonl"
        deadline = time.monotonic() + 30
        while not target.is_file() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert page.errors == []
    got = load_labels(target)
    assert {(lb.qid, lb.measure, lb.value) for lb in got} == {
        ("q01", "correct", 1), ("q01", "faithfulness", 1), ("q02", "correct", 1), ("q02", "faithfulness", 1),
        ("q03", "correct", 0), ("q03", "faithfulness", 1), ("q04", "correct", 0), ("q04", "faithfulness", 0)}
    assert next(lb for lb in got if lb.qid == "q04").answer_sha256 == answer_digest(ANSWERS[3])
    capsys.readouterr()
    assert main(["calibrate", str(exp), "--labels", str(target), "--json"]) == 0
    measured = {m["measure"]: m for m in json.loads(capsys.readouterr().out)["measures"]}
    assert measured["correct"]["n"] == 4 and measured["correct"]["confusion"] == [[2, 0], [0, 2]]


def test_stratified_sample_takes_both_kinds():
    records = pd.DataFrame({"correct": [1.0] * 8 + [0.0] * 30 + [float("nan")] * 2})
    rows = sample(records, 10, seed=3, stratify="correct")
    values = records["correct"].iloc[rows]
    assert len(rows) == 10 and (values >= 0.5).sum() >= 4 and (values < 0.5).sum() >= 4
    assert sample(records, 10, seed=3, stratify="correct") == rows  # same seed, same sample
    assert len(sample(records, 100, seed=0)) == 40


def test_cli_refuses_an_unknown_stratify_column_and_a_bad_labels_file(tmp_path, capsys):
    cell = write_cell(tmp_path / "exp")
    out = tmp_path / "x.html"
    assert main(["label", str(cell), "--stratify", "corect", "--out", str(out)]) == 2
    assert "no such records column" in capsys.readouterr().err and not out.exists()
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n", encoding="utf-8")
    assert main(["label", str(cell), "--labels", str(bad), "--out", str(out)]) == 2
    assert "bad.jsonl:1" in capsys.readouterr().err and not out.exists()


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
def test_graded_labels_by_digit_key(tmp_path, capsys):
    """--scale 4: digit keys 0..4 give grades (y = 4, n = 0), a digit above the scale does nothing, and
    the download holds "scale": 4 on each label, which calibrate reads as graded."""
    exp = tmp_path / "exp"
    cell = write_cell(exp)
    html = tmp_path / "label.html"
    assert main(["label", str(cell), "--n", "3", "--scale", "4", "--out", str(html)]) == 0
    assert "<kbd>0</kbd>&hellip;<kbd>4</kbd> the grade" in html.read_text(encoding="utf-8")
    downloads = tmp_path / "dl"
    downloads.mkdir()
    with Page(tmp_path / "p") as page:
        page.send("Page.setDownloadBehavior", behavior="allow", downloadPath=str(downloads))
        page.send("Page.navigate", url=html.as_uri())
        page.wait("document.body && document.body.dataset.ready === '1'")
        for key in ("3", "7", "y", "n", "2"):  # q1: correct 3, (7 ignored), faithfulness 4; q2: 0, 2
            _key(page, key)
        page.wait("document.body.dataset.labelled === '2'")
        _key(page, "ArrowLeft")
        assert "correct: 0/4" in page.eval("document.getElementById('lb-item').textContent")
        page.eval("document.getElementById('lb-download').click()")
        target = downloads / "labels.jsonl"
        deadline = time.monotonic() + 30
        while not target.is_file() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert page.errors == []
    got = sorted(load_labels(target), key=lambda lb: (lb.qid, lb.measure))
    assert [(lb.measure, lb.value, lb.scale) for lb in got] == [
        ("correct", 3, 4), ("faithfulness", 4, 4), ("correct", 0, 4), ("faithfulness", 2, 4)]
    assert got[0].score == 0.75


def test_cli_refuses_a_scale_that_is_not_one_digit(tmp_path, capsys):
    cell = write_cell(tmp_path / "exp")
    out = tmp_path / "x.html"
    assert main(["label", str(cell), "--scale", "10", "--out", str(out)]) == 2
    assert "--scale must be 1 (yes/no) to 9" in capsys.readouterr().err and not out.exists()
