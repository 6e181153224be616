"""rag-bench review: the static page in headless Chromium (DevTools protocol) -- a question's quote
highlighted in the parse of its document, accept / edit / reject / retype by key, the download is a
decisions.jsonl that `review --apply` turns into a questions.jsonl that validates; the decisions
and the previous file are kept. Apply's refusals (a stale decision, an unknown id, a retype that
would not validate) exit 2 and change nothing; the type rules without a browser."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from rag_bench.cli.main import main
from rag_bench.data.loader import load_dataset
from rag_bench.data.review import apply, question_type, read_decisions, retyped, row_digest
from tests.conftest import TINY
from tests.reporting.cdp import CHROMIUM, Page


def _copy(tmp_path: Path) -> Path:
    root = tmp_path / "ds"
    shutil.copytree(TINY, root)
    return root


def _rows(root: Path) -> list[dict]:
    return [json.loads(line) for line in (root / "questions.jsonl").read_text(encoding="utf-8").splitlines()
            if line.strip()]


def _key(page: Page, key: str) -> None:
    if len(key) == 1:
        page.send("Input.dispatchKeyEvent", type="keyDown", key=key, text=key)
    else:
        page.send("Input.dispatchKeyEvent", type="rawKeyDown", key=key, windowsVirtualKeyCode=39)
    page.send("Input.dispatchKeyEvent", type="keyUp", key=key)


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
def test_review_by_key_download_apply_and_validate(tmp_path, capsys):
    root = _copy(tmp_path)
    rows = _rows(root)
    rows[0]["question"] = "Refund <b class=x>window</b>?<img src=x onerror=\"document.body.dataset.pwned=1\">"
    (root / "questions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    first = next(r for r in rows if r.get("answerable", True) and r.get("evidence"))
    quote = first["evidence"][0].get("quote")
    html = tmp_path / "review.html"
    assert main(["review", str(root), "--out", str(html)]) == 0
    downloads = tmp_path / "dl"
    downloads.mkdir()
    order = [r["id"] for r in rows]
    with Page(tmp_path / "p") as page:
        page.send("Page.setDownloadBehavior", behavior="allow", downloadPath=str(downloads))
        page.send("Page.navigate", url=html.as_uri())
        page.wait("document.body && document.body.dataset.ready === '1'")
        # the first answerable question's quote is marked inside the text of its document's parse
        for _ in range(order.index(first["id"])):
            _key(page, "ArrowRight")
        marked = page.eval("document.querySelector('#rv-item mark.quote').textContent")
        parse = page.eval("document.querySelector('#rv-item .parse').textContent")
        assert quote is None or marked == quote
        assert len(parse) > len(marked) and marked in parse
        for _ in range(order.index(first["id"])):
            _key(page, "ArrowLeft")
        assert "<b class=x>window</b>" in page.eval("document.getElementById('rv-question').value")  # as text
        assert page.eval("document.querySelectorAll('#rv-item b.x, #rv-item img').length") == 0
        assert page.eval("document.body.dataset.pwned") is None
        _key(page, "a")  # no reviewer yet: nothing is decided
        assert page.eval("document.getElementById('rv-progress').textContent") == "type your name in Reviewer first"
        page.eval("(function () { var w = document.getElementById('rv-reviewer'); w.focus(); w.value = 'ann'; "
                  "w.dispatchEvent(new Event('change')); w.blur(); }())")  # typed, then Enter
        _key(page, "a")  # q1: accept
        _key(page, "2")  # q2: retype as multi_hop, then a
        assert page.eval("document.getElementById('rv-type').value") == "multi_hop"
        _key(page, "a")
        # q3: edit its question in the box, then a
        page.eval("(function () { var q = document.getElementById('rv-question'); q.value = 'An edited question?'; }())")
        _key(page, "a")
        _key(page, "r")  # q4: reject
        page.wait("document.body.dataset.decided === '4'")
        assert page.eval("document.getElementById('rv-progress').textContent") == \
            f"4 / {len(rows)} questions decided (reviewer ann)"
        for _ in range(3):
            _key(page, "ArrowLeft")
        assert page.eval("document.getElementById('rv-decided').textContent") == "decided: retype (multi_hop) by ann"
        page.eval("document.getElementById('rv-download').click()")
        target = downloads / "decisions.jsonl"
        deadline = time.monotonic() + 30
        while not target.is_file() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert page.errors == []
    got = [json.loads(line) for line in target.read_text(encoding="utf-8").splitlines()]
    assert [(d["id"], d["decision"]) for d in got] == [(order[0], "accept"), (order[1], "retype"), (order[2], "edit"),
                                                       (order[3], "reject")]
    assert got[2]["question"] == "An edited question?" and got[1]["type"] == "multi_hop" and "type" not in got[2]
    assert all(d["reviewer"] == "ann" and d["row_sha256"] == row_digest(rows[order.index(d["id"])]) for d in got)
    before = (root / "questions.jsonl").read_bytes()
    capsys.readouterr()
    assert main(["review", str(root), "--apply", str(target)]) == 0
    said = capsys.readouterr().out
    assert f"{len(rows)} -> {len(rows) - 1} questions" in said and "1 rejected" in said and "1 retyped" in said
    after = _rows(root)
    by_id = {r["id"]: r for r in after}
    assert order[3] not in by_id and by_id[order[2]]["question"] == "An edited question?"
    assert by_id[order[1]]["tags"][-1] == "type:multi_hop" and by_id[order[0]] == rows[0]
    assert len(load_dataset(root).questions) == len(rows) - 1  # the reviewed set validates
    kept = sorted(p.name for p in (root / "review").iterdir())
    assert kept[0].startswith("decisions-") and kept[1].startswith("questions-before-")
    assert (root / "review" / kept[1]).read_bytes() == before
    assert main(["review", str(root), "--apply", str(target)]) == 2  # twice: said, not read as stale decisions
    assert "these decisions were applied already" in capsys.readouterr().err


def test_apply_refuses_stale_unknown_and_invalid_decisions_and_changes_nothing(tmp_path, capsys):
    root = _copy(tmp_path)
    rows = _rows(root)
    before = (root / "questions.jsonl").read_bytes()
    answerable = next(r for r in rows if r.get("answerable", True) and r.get("evidence"))
    unanswerable = next(r for r in rows if r.get("answerable") is False)
    bad = tmp_path / "decisions.jsonl"
    bad.write_text("\n".join(json.dumps(d) for d in [
        {"id": answerable["id"], "decision": "accept", "row_sha256": "0" * 64},  # made on another version
        {"id": "nope", "decision": "accept", "row_sha256": "x"},
        {"id": answerable["id"], "decision": "retype", "type": "trivia", "row_sha256": row_digest(answerable)},
    ]) + "\n", encoding="utf-8")
    assert main(["review", str(root), "--apply", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "decisions.jsonl:1: [row_sha256]" in err and "review it again" in err
    assert "decisions.jsonl:2: [id]" in err and "decisions.jsonl:3: [type]" in err
    # a retype the loader refuses: an unanswerable question made factoid has no evidence
    invalid = tmp_path / "retype.jsonl"
    invalid.write_text(json.dumps({"id": unanswerable["id"], "decision": "retype", "type": "factoid",
                                   "row_sha256": row_digest(unanswerable)}) + "\n", encoding="utf-8")
    assert main(["review", str(root), "--apply", str(invalid)]) == 2
    err = capsys.readouterr().err
    assert "would not validate" in err and f"question {unanswerable['id']!r} as reviewed" in err
    assert "retype.jsonl:1" in err
    assert (root / "questions.jsonl").read_bytes() == before and sorted(p.name for p in root.iterdir()) == \
        ["dataset.yaml", "docs", "docs.jsonl", "questions.jsonl"]  # nothing written, nothing left behind
    assert main(["review", str(root), "--apply", str(tmp_path / "missing.jsonl")]) == 2
    assert "no such decisions file" in capsys.readouterr().err


def test_types_are_read_from_the_question_and_retyping_sets_what_the_type_implies():
    assert question_type({"type": "follow_up", "tags": ["type:factoid"]}) == ("follow_up", True)
    assert question_type({"tags": ["clarify"]}) == ("clarify", True)
    assert question_type({"history": [{"role": "user", "content": "hi"}], "answerable": True}) == ("follow_up", False)
    assert question_type({"expects": "clarify", "answerable": True}) == ("clarify", False)
    row = {"id": "q", "answerable": True, "expects": "clarify", "clarify_facts": ["x"], "tags": ["type:clarify"]}
    assert retyped(row, "factoid") == {"id": "q", "answerable": True, "tags": ["type:factoid"]}
    assert retyped({"id": "q", "answerable": False, "expects": "refuse"}, "clarify") == \
        {"id": "q", "answerable": True, "expects": "clarify", "tags": ["type:clarify"]}
    assert retyped({"id": "q", "type": "factoid"}, "multi_hop")["type"] == "multi_hop"


def test_the_last_decision_wins_and_an_edited_answer_replaces_the_first_reference(tmp_path):
    rows = [{"id": "a", "question": "A?", "answers": ["x", "y"]}, {"id": "b", "question": "B?"}]
    path = tmp_path / "d.jsonl"
    path.write_text("\n".join(json.dumps(d) for d in [
        {"id": "a", "decision": "reject", "row_sha256": row_digest(rows[0]), "reviewer": "ann"},
        {"id": "a", "decision": "edit", "answer": "z", "row_sha256": row_digest(rows[0]), "reviewer": "bob"},
    ]) + "\n", encoding="utf-8")
    found, log = read_decisions(path, {r["id"]: r for r in rows})
    assert log.problems == []
    applied = apply(rows, found)
    assert applied.rows == ({"id": "a", "question": "A?", "answers": ["z", "y"]}, {"id": "b", "question": "B?"})
    assert applied.counts["edit"] == 1 and applied.counts["reject"] == 0 and applied.counts["undecided"] == 1
    assert apply(rows, found, keep_undecided=False).rows == applied.rows[:1]


def test_a_beir_dataset_has_no_quotes_to_review(tmp_path, capsys):
    from tests.conftest import REPO

    assert main(["review", str(REPO / "tests" / "fixtures" / "beir_graded"), "--out", str(tmp_path / "x.html")]) == 2
    assert "holds no quotes to review" in capsys.readouterr().err and not (tmp_path / "x.html").exists()


def test_a_new_user_reads_short_lines_an_example_and_the_right_fix(tmp_path, capsys):
    """Piped, no line of the page's or --apply's report, nor --help, is over 120 characters (they were one
    line of 170-230); --help gives examples; a missing folder is named with review's own argument (the
    loader's message said `pass dataset.path=DIR`, an option review does not take) and nothing is written."""
    root = _copy(tmp_path)
    rows = _rows(root)
    html = tmp_path / "page.html"
    assert main(["review", str(root), "--out", str(html)]) == 0
    page = capsys.readouterr().out
    assert page.startswith(f"{len(rows)} questions to review: {html}")
    decisions = tmp_path / "decisions.jsonl"
    decisions.write_text(json.dumps({"id": rows[0]["id"], "decision": "reject", "reviewer": "ann",
                                     "row_sha256": row_digest(rows[0])}) + "\n", encoding="utf-8")
    assert main(["review", str(root), "--apply", str(decisions)]) == 0
    applied = capsys.readouterr().out
    assert f"{len(rows)} -> {len(rows) - 1} questions" in applied and len(_rows(root)) == len(rows) - 1
    with pytest.raises(SystemExit):
        main(["review", "--help"])
    helped = capsys.readouterr().out
    assert "examples:" in helped and "--apply decisions.jsonl" in helped
    for text in (page, applied, helped):
        assert all(len(line) <= 120 for line in text.splitlines()), text
    missing = tmp_path / "nope"
    assert main(["review", str(missing), "--out", str(tmp_path / "x.html")]) == 2
    err = capsys.readouterr().err
    assert f"{missing}: [DATASET_DIR] no such folder -- fix: pass a dataset folder" in err and "dataset.path" not in err
    assert not (tmp_path / "x.html").exists()
