"""rag-bench label: the static page in headless Chromium (DevTools protocol): it continues an existing
labels file, three answers are labelled by key presses, the download is a labels.jsonl that calibrate
reads; an answer holding markup stays text. Sampling and the CLI's refusals without a browser."""

from __future__ import annotations

import json
import time
from pathlib import Path

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


def _name(page: Page, who: str) -> None:
    """Type a labeller's name as a person does: into the field, then Enter (the field's change)."""
    page.eval(f"(function () {{ var w = document.getElementById('lb-labeller'); w.focus(); w.value = {who!r}; "
              "w.dispatchEvent(new Event('change')); w.blur(); }())")


def _download(page: Page, downloads) -> Path:
    page.eval("document.getElementById('lb-download').click()")
    target = downloads / "labels.jsonl"
    deadline = time.monotonic() + 30
    while not target.is_file() and time.monotonic() < deadline:
        time.sleep(0.1)
    return target


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
def test_label_three_answers_by_key_download_and_calibrate(tmp_path, capsys):
    exp = tmp_path / "exp"
    cell = write_cell(exp)
    order = [f"q{i + 1:02d}" for i in sample(pd.read_parquet(cell / "records.parquet"), 10, 0)]  # the page's order
    before = tmp_path / "before.jsonl"  # the first answer shown is labelled already: the page starts at the second
    first = int(order[0][1:]) - 1
    before.write_text("".join(json.dumps({"qid": order[0], "answer_sha256": answer_digest(ANSWERS[first]),
                                          "measure": m, "value": 1, "labeller": "t", "note": "kept"}) + "\n"
                              for m in ("correct", "faithfulness")), encoding="utf-8")
    html = tmp_path / "label.html"
    assert main(["label", str(cell), "--n", "10", "--labels", str(before), "--out", str(html)]) == 0
    downloads = tmp_path / "dl"
    downloads.mkdir()
    with Page(tmp_path / "p") as page:
        page.send("Page.setDownloadBehavior", behavior="allow", downloadPath=str(downloads))
        page.send("Page.navigate", url=html.as_uri())
        page.wait("document.body && document.body.dataset.ready === '1'")
        # no name yet: a key labels nothing and asks for one (the page never borrows the last labeller's)
        assert page.eval("document.getElementById('lb-labeller').value") == ""
        _key(page, "y")
        assert page.eval("document.getElementById('lb-progress').textContent") == "type your name in Labeller first"
        _name(page, "t")
        assert page.eval("document.body.dataset.current") == "1"
        assert page.eval("document.body.dataset.labelled") == "1"
        for key in ("y", "y", "n", "1", "0", "n"):  # 2nd: yes/yes; 3rd: no/yes; 4th: no/no
            _key(page, key)
        page.wait("document.body.dataset.labelled === '4'")
        assert page.eval("document.body.dataset.current") == "4"
        steps = order.index("q04") - 4  # to q04, whose answer holds markup
        for _ in range(abs(steps)):
            _key(page, "ArrowRight" if steps > 0 else "ArrowLeft")
        text = page.eval("document.getElementById('lb-item').textContent")
        assert "<img src=x" in text and "</script><b>x</b>" in text  # q04's answer shown as text
        assert "[3] names no passage it was given" in text  # q04 cites [3] of two passages
        assert page.eval("document.body.dataset.pwned") is None
        assert page.eval("document.querySelectorAll('#lb-item img, #lb-item b.x').length") == 0
        assert page.eval("document.getElementById('lb-progress').textContent") == "4 / 10 answers labelled by t"
        target = _download(page, downloads)
        assert page.errors == []
    got = load_labels(target)
    want = {(order[0], "correct", 1), (order[0], "faithfulness", 1), (order[1], "correct", 1),
            (order[1], "faithfulness", 1), (order[2], "correct", 0), (order[2], "faithfulness", 1),
            (order[3], "correct", 0), (order[3], "faithfulness", 0)}
    assert {(lb.qid, lb.measure, lb.value) for lb in got} == want
    new = [lb for lb in got if lb.qid != order[0]]
    assert all(lb.sample is not None and (lb.sample.cell, lb.sample.seed) == (cell.name, 0) for lb in new)
    capsys.readouterr()
    assert main(["calibrate", str(exp), "--labels", str(target), "--json"]) == 0
    measured = {m["measure"]: m for m in json.loads(capsys.readouterr().out)["measures"]}
    answerable = [q for q in order[:4] if int(q[1:]) <= 8]
    assert measured["correct"]["n"] == len(answerable)


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
def test_a_second_labeller_never_replaces_the_first_ones_verdict_or_note(tmp_path):
    """The review's case: the page pre-filled the last label's labeller, so the next person's first
    key overwrote that labeller's verdict and dropped its note."""
    cell = write_cell(tmp_path / "exp")
    order = [f"q{i + 1:02d}" for i in sample(pd.read_parquet(cell / "records.parquet"), 3, 0)]
    before = tmp_path / "before.jsonl"
    before.write_text(json.dumps({"qid": order[0], "answer_sha256": answer_digest(ANSWERS[int(order[0][1:]) - 1]),
                                  "measure": "correct", "value": 1, "labeller": "ann", "note": "says 45 days"}) + "\n",
                      encoding="utf-8")
    html = tmp_path / "label.html"
    assert main(["label", str(cell), "--n", "3", "--labels", str(before), "--out", str(html)]) == 0
    downloads = tmp_path / "dl"
    downloads.mkdir()
    with Page(tmp_path / "p") as page:
        page.send("Page.setDownloadBehavior", behavior="allow", downloadPath=str(downloads))
        page.send("Page.navigate", url=html.as_uri())
        page.wait("document.body && document.body.dataset.ready === '1'")
        _key(page, "n")  # nobody named: nothing happens
        _name(page, "bob")
        assert page.eval("document.body.dataset.current") == "0"  # bob has labelled nothing yet
        _key(page, "n")
        _name(page, "ann")  # ann changes her own verdict: her note stays
        _key(page, "n")
        target = _download(page, downloads)
        assert page.errors == []
    got = {(lb.labeller, lb.measure): lb for lb in load_labels(target)}
    assert set(got) == {("ann", "correct"), ("bob", "correct")}
    assert got["bob", "correct"].value == 0 and got["bob", "correct"].note == ""
    assert got["ann", "correct"].value == 0 and got["ann", "correct"].note == "says 45 days"


def test_stratified_sample_takes_both_kinds():
    records = pd.DataFrame({"correct": [1.0] * 8 + [0.0] * 30 + [float("nan")] * 2, "answer": ["An answer."] * 40})
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
        _name(page, "t")
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
    order = [f"q{i + 1:02d}" for i in sample(pd.read_parquet(cell / "records.parquet"), 3, 0)]  # as shown
    got = sorted(load_labels(target), key=lambda lb: (order.index(lb.qid), lb.measure))
    assert [(lb.measure, lb.value, lb.scale) for lb in got] == [
        ("correct", 3, 4), ("faithfulness", 4, 4), ("correct", 0, 4), ("faithfulness", 2, 4)]
    assert got[0].score == 0.75


def test_cli_refuses_a_scale_that_is_not_one_digit(tmp_path, capsys):
    cell = write_cell(tmp_path / "exp")
    out = tmp_path / "x.html"
    assert main(["label", str(cell), "--scale", "10", "--out", str(out)]) == 2
    assert "--scale must be 1 (yes/no) to 9" in capsys.readouterr().err and not out.exists()


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
def test_an_answer_with_a_bidi_override_reads_as_stored(tmp_path):
    """U+202E made "Yes.<RLO>on si ti" read "Yes.it is no": the page shows the override as a marker and
    lays out each text in its own isolated direction."""
    cell = write_cell(tmp_path / "exp")
    r = pd.read_parquet(cell / "records.parquet")
    r["answer"] = ["Yes.\u202eon si ti"] * len(r)
    r.to_parquet(cell / "records.parquet")
    html = tmp_path / "label.html"
    assert main(["label", str(cell), "--n", "2", "--out", str(html)]) == 0
    with Page(tmp_path / "p") as page:
        page.send("Page.navigate", url=html.as_uri())
        page.wait("document.body && document.body.dataset.ready === '1'")
        assert page.eval("document.querySelector('#lb-item .ans').textContent") == "Yes.\\u202eon si ti"
        assert page.eval("getComputedStyle(document.querySelector('#lb-item .ans')).unicodeBidi") == "plaintext"
        assert page.eval("getComputedStyle(document.querySelector('#lb-item .q')).unicodeBidi") == "plaintext"
        assert page.errors == []
