"""Loader and validator: one test per error class, all problems at once, native and BEIR layouts."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from rag_bench.cli import main as cli
from rag_bench.data.loader import load_dataset
from rag_bench.errors import DataError
from tests.conftest import TINY


def copy_tiny(tmp_path: Path) -> Path:
    root = tmp_path / "ds"
    shutil.copytree(TINY, root)
    return root


def questions(root: Path) -> list[dict]:
    return [json.loads(line) for line in (root / "questions.jsonl").read_text().splitlines() if line.strip()]


def write_questions(root: Path, qs: list[dict | str]) -> None:
    lines = [q if isinstance(q, str) else json.dumps(q) for q in qs]
    (root / "questions.jsonl").write_text("\n".join(lines) + "\n")


def problems(root: Path) -> list[str]:
    with pytest.raises(DataError) as info:
        load_dataset(root)
    return [str(p) for p in info.value.problems]


def only_problem(root: Path) -> str:
    found = problems(root)
    assert len(found) == 1, found
    return found[0]


def test_tiny_dataset_loads_with_resolved_spans(tiny_dataset):
    q1 = next(q for q in tiny_dataset.questions if q.qid == "q1")
    doc = tiny_dataset.documents["billing"]
    span = q1.evidence[0]
    assert doc.text[span.start:span.end] == "A full refund is available if you cancel within 14 days of a renewal."
    assert span.heading_path == ("Billing", "Annual plans")
    q3 = next(q for q in tiny_dataset.questions if q.qid == "q3")  # section-only locator = whole body
    sec = tiny_dataset.documents["security"].text[q3.evidence[0].start:q3.evidence[0].end]
    assert sec.startswith("Managers review") and sec.endswith("revoked automatically.")
    assert tiny_dataset.documents["billing-old"].archived
    assert tiny_dataset.documents["security"].acl == ("staff",)


@pytest.mark.parametrize(("mutate", "where", "field", "needle"), [
    (lambda q: q[0]["evidence"][0].update(doc_id="nope"), ":1:", "evidence[0].doc_id", "unknown document 'nope'"),
    (lambda q: q[0]["evidence"][0].update(quote="not in the text"), ":1:", "evidence[0].quote", "quote not found"),
    (lambda q: q[1]["evidence"][0].update(quote="plan"), ":2:", "evidence[0].quote", "ambiguous"),
    (lambda q: q[1].update(id="q1"), ":2:", "id", "duplicate question id 'q1' (first at line 1)"),
    (lambda q: q[0].pop("question"), ":1:", "question", "missing or empty"),
    (lambda q: q[0].pop("answerable"), ":1:", "answerable", "must be true or false"),
    (lambda q: q[0].update(evidence=[]), ":1:", "evidence", "answerable question without evidence"),
    (lambda q: q[4].update(evidence=[{"doc_id": "billing", "quote": "Students get a further 10% off."}]),
     ":5:", "evidence", "unanswerable question has evidence"),
    (lambda q: q[0]["evidence"][0].update(section="Yearly plans"), ":1:", "evidence[0].section", "no section"),
    (lambda q: q[0].update(tagz=["x"]), ":1:", "tagz", "unknown field 'tagz'"),
    (lambda q: q[0].update(facts="14 days"), ":1:", "facts", "must be a list of strings"),
    (lambda q: q[0]["evidence"][0].update(doc_id="billing-old", section=None, quote="within 7 days"),
     ":1:", "evidence[0].doc_id", "archived document"),
    (lambda q: q[2].update(asker={"tenant": "acme", "groups": ["customers"]}), ":3:", "evidence[0].doc_id",
     "may not read"),
    (lambda q: q[0]["evidence"].__setitem__(0, {"doc_id": "billing", "start": 5, "end": 99999}), ":1:",
     "evidence[0].start/end", "outside document"),
    (lambda q: q[0]["evidence"].__setitem__(0, {"doc_id": "billing"}), ":1:", "evidence[0]",
     "needs 'quote', 'section' or 'start'/'end'"),
    (lambda q: q[0].update(asker={"tenant": "acme", "groups": "staff"}), ":1:", "asker.groups", "list of group"),
])
def test_question_errors(tmp_path, mutate, where, field, needle):
    root = copy_tiny(tmp_path)
    qs = questions(root)
    mutate(qs)
    for q in qs:  # a None section means "drop it"
        for ev in q.get("evidence", []):
            if isinstance(ev, dict) and ev.get("section", "") is None:
                ev.pop("section")
    write_questions(root, qs)
    msg = only_problem(root)
    assert f"questions.jsonl{where}" in msg and f"[{field}]" in msg and needle in msg and "fix:" in msg


def _clarify(q: dict, **fields) -> None:
    q.update({"expects": "clarify", "clarify_facts": ["annual", "renewal"], **fields})


@pytest.mark.parametrize(("mutate", "where", "field", "needle"), [
    (lambda q: q[0].update(expects="ask"), ":1:", "expects", "must be one of answer, refuse, clarify, got 'ask'"),
    (lambda q: q[0].update(expects=None), ":1:", "expects", "must be one of answer, refuse, clarify, got None"),
    (lambda q: _clarify(q[0], clarify_facts=[]), ":1:", "clarify_facts", "must be a non-empty list of strings"),
    (lambda q: _clarify(q[0], clarify_facts="annual"), ":1:", "clarify_facts", "must be a non-empty list of strings"),
    (lambda q: _clarify(q[0], clarify_facts=["annual", "is it"]), ":1:", "clarify_facts[1]", "no content word"),
    (lambda q: _clarify(q[0], clarify_facts=["annual\x1b[2J"]), ":1:", "clarify_facts[0]", "control character"),
    (lambda q: q[0].update(clarify_facts=["annual"]), ":1:", "clarify_facts", "on a question that expects the default"),
    (lambda q: q[0].update(expects="answer", clarify_facts=["annual"]), ":1:", "clarify_facts",
     "on a question that expects answer"),
    # contradictions with answerable
    (lambda q: q[0].update(expects="refuse"), ":1:", "expects", '"expects": "refuse" on an answerable question'),
    (lambda q: q[4].update(expects="answer"), ":5:", "expects", '"expects": "answer" on an unanswerable question'),
    (lambda q: _clarify(q[4]), ":5:", "expects", '"expects": "clarify" on an unanswerable question'),
    # without "answerable", expects says it: a clarify question is answerable, so it needs evidence
    (lambda q: (_clarify(q[4]), q[4].pop("answerable")), ":5:", "evidence", "answerable question without evidence"),
])
def test_expects_errors(tmp_path, mutate, where, field, needle):
    root = copy_tiny(tmp_path)
    qs = questions(root)
    mutate(qs)
    write_questions(root, qs)
    msg = only_problem(root)
    assert f"questions.jsonl{where}" in msg and f"[{field}]" in msg and needle in msg and "fix:" in msg


def test_expects_defaults_and_a_clarify_question_loads(tmp_path):
    root = copy_tiny(tmp_path)
    qs = questions(root)
    _clarify(qs[0])
    qs[1].update(expects="answer")
    qs[1].pop("answerable")  # implied by expects
    qs[4].update(expects="refuse")
    write_questions(root, qs)
    loaded = {q.qid: q for q in load_dataset(root).questions}
    assert (loaded["q1"].outcome, loaded["q1"].answerable, loaded["q1"].clarify_facts) == (
        "clarify", True, ("annual", "renewal"))
    assert (loaded["q2"].outcome, loaded["q2"].answerable) == ("answer", True)
    assert (loaded["q5"].outcome, loaded["q5"].answerable) == ("refuse", False)
    # the default of every question without the field: answer if answerable, refuse if not
    assert (loaded["q3"].expects, loaded["q3"].outcome, loaded["q4"].outcome) == (None, "answer", "refuse")
    assert not loaded["q1"].wants_answer and loaded["q2"].wants_answer


def test_clarify_without_clarify_facts_loads(tmp_path):
    # Public multi-turn data marks underspecified turns and names no facts (issue 53 item 2).
    root = copy_tiny(tmp_path)
    qs = questions(root)
    qs[0].update(expects="clarify")
    write_questions(root, qs)
    q1 = next(q for q in load_dataset(root).questions if q.qid == "q1")
    assert (q1.outcome, q1.clarify_facts) == ("clarify", ())


USER, BOT = {"role": "user", "content": "Do you offer annual plans?"}, {"role": "assistant", "content": "Yes."}


def test_history_and_standalone_load(tmp_path):
    root = copy_tiny(tmp_path)
    qs = questions(root)
    qs[0].update(history=[USER, BOT], standalone="How long is the refund window of an annual plan?")
    write_questions(root, qs)
    loaded = {q.qid: q for q in load_dataset(root).questions}
    assert [(t.role, t.content) for t in loaded["q1"].history] == [("user", USER["content"]), ("assistant", "Yes.")]
    assert loaded["q1"].standalone == "How long is the refund window of an annual plan?"
    assert (loaded["q2"].history, loaded["q2"].standalone) == ((), None)


@pytest.mark.parametrize(("history", "field", "needle"), [
    ({"role": "user"}, "history", "must be a list of turns, got an object"),
    (["hello", BOT], "history[0]", "must be an object, got a string"),
    ([{**USER, "role": "system"}, BOT], "history[0].role", "must be one of user, assistant, got 'system'"),
    ([{**USER, "speaker": "me"}, BOT], "history[0].speaker", "unknown field 'speaker'"),
    ([USER, USER, BOT], "history[1].role", "two user turns in a row"),
    ([USER, BOT, USER], "history[2].role", "the history ends with a user turn"),
    ([{**USER, "content": 5}, BOT], "history[0].content", "must be non-empty text, got a number"),
    ([{**USER, "content": "  "}, BOT], "history[0].content", "must be non-empty text, empty"),
    ([{**USER, "content": "hi\x1b[2J"}, BOT], "history[0].content", "control character"),
    ([USER, BOT] * 33, "history", "66 turns, more than 64"),
    ([{**USER, "content": "x" * 100_001}, BOT], "history", "more than 100000"),
])
def test_history_errors(tmp_path, history, field, needle):
    root = copy_tiny(tmp_path)
    qs = questions(root)
    qs[0]["history"] = history
    write_questions(root, qs)
    msg = only_problem(root)
    assert "questions.jsonl:1:" in msg and f"[{field}]" in msg and needle in msg and "fix:" in msg


@pytest.mark.parametrize("value", ["", 3])
def test_standalone_errors(tmp_path, value):
    root = copy_tiny(tmp_path)
    qs = questions(root)
    qs[0]["standalone"] = value
    write_questions(root, qs)
    msg = only_problem(root)
    assert "questions.jsonl:1:" in msg and "[standalone]" in msg and "must be non-empty text" in msg


def test_malformed_json_line(tmp_path):
    root = copy_tiny(tmp_path)
    qs = questions(root)
    write_questions(root, [qs[0], '{"id": "q2", "question": ', qs[2], "[1, 2]"])
    found = problems(root)
    assert any("questions.jsonl:2:" in p and "malformed JSON" in p for p in found)
    assert any("questions.jsonl:4:" in p and "expected a JSON object" in p for p in found)


def test_empty_document(tmp_path):
    root = copy_tiny(tmp_path)
    (root / "docs" / "empty.md").write_text("  \n\n")
    assert "empty.md" in only_problem(root) and "document is empty" in only_problem(root)


def test_non_utf8_document_names_line(tmp_path):
    root = copy_tiny(tmp_path)
    (root / "docs" / "latin.md").write_bytes(b"# Title\n\nCaf\xe9 au lait\n")
    msg = only_problem(root)
    assert "latin.md:3:" in msg and "not valid UTF-8" in msg and "iconv" in msg


def test_bom_and_crlf_are_normalised(tmp_path):
    root = copy_tiny(tmp_path)
    path = root / "docs" / "billing.md"
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes().replace(b"\n", b"\r\n"))
    ds = load_dataset(root)
    doc = ds.documents["billing"]
    assert "\r" not in doc.text and not doc.text.startswith("\ufeff")
    q1 = next(q for q in ds.questions if q.qid == "q1")
    assert doc.text[q1.evidence[0].start:q1.evidence[0].end].startswith("A full refund")


def test_doc_metadata_errors(tmp_path):
    root = copy_tiny(tmp_path)
    with open(root / "docs.jsonl", "a") as fh:
        fh.write(json.dumps({"doc_id": "ghost"}) + "\n")
        fh.write(json.dumps({"doc_id": "billing", "status": "current"}) + "\n")
    lines = (root / "docs.jsonl").read_text().splitlines()
    lines[2] = lines[2].replace('"acl": ["staff"]', '"acl": "staff", "stauts": "x"')
    (root / "docs.jsonl").write_text("\n".join(lines) + "\n")
    found = problems(root)
    assert any("docs.jsonl:4:" in p and "unknown document 'ghost'" in p for p in found), found
    assert any("docs.jsonl:5:" in p and "duplicate entry" in p for p in found), found
    assert any("docs.jsonl:3:" in p and "[acl]" in p for p in found), found
    assert any("docs.jsonl:3:" in p and "unknown field 'stauts'" in p for p in found), found


def test_missing_parts(tmp_path):
    root = tmp_path / "empty"
    root.mkdir()
    found = problems(root)
    assert any("docs/" in p and "missing" in p for p in found)
    assert any("questions.jsonl" in p and "missing" in p for p in found)
    with pytest.raises(DataError, match="does not exist"):
        load_dataset(tmp_path / "nowhere")


def test_doc_id_with_whitespace(tmp_path):
    root = copy_tiny(tmp_path)
    (root / "docs" / "my doc.md").write_text("# A\n\ntext\n")
    assert "contains whitespace" in only_problem(root)


def test_ten_planted_errors_all_listed_by_cli(tmp_path, capsys):
    root = copy_tiny(tmp_path)
    qs = questions(root)
    qs[0]["evidence"][0]["doc_id"] = "nope"                  # 1 unknown doc id
    qs[1]["evidence"][0]["quote"] = "| Gold | $99 |"           # 2 quote not found
    qs[2]["id"] = "q1"                                       # 3 duplicate id
    qs[3]["answerable"] = "no"                               # 4 wrong type
    qs[4]["evidence"] = [{"doc_id": "billing", "section": "Monthly plans"}]  # 5 unanswerable with evidence
    qs[5]["evidence"][1]["quote"] = "plan"                   # 6 ambiguous quote
    qs.append({"id": "q7", "answerable": True, "evidence": []})  # 7 missing question + 8 no evidence
    write_questions(root, [*qs, "{not json"])                # 9 malformed JSON
    (root / "docs" / "blank.md").write_text("\n")            # 10 empty document
    code = cli(["validate", str(root)])
    err = capsys.readouterr().err
    assert code == 2
    listed = [line for line in err.splitlines() if line.startswith("  ")]
    assert len(listed) == 10, err
    for needle in ("unknown document 'nope'", "quote not found", "duplicate question id", "[answerable]",
                   "unanswerable question has evidence", "ambiguous", "[question] missing",
                   "answerable question without evidence", "malformed JSON", "document is empty"):
        assert needle in err, needle


def test_validate_ok_exit_zero(capsys):
    assert cli(["validate", str(TINY)]) == 0
    assert "ok: tiny (native): 3 documents" in capsys.readouterr().out


def make_beir(root: Path) -> Path:
    root.mkdir()
    (root / "corpus.jsonl").write_text("\n".join(json.dumps(d) for d in [
        {"_id": "d1", "title": "Kettles", "text": "A kettle boils water quickly."},
        {"_id": "d2", "title": "Toasters", "text": "A toaster browns bread."},
        {"_id": "d3", "title": "", "text": "Fridges keep food cold."}]) + "\n")
    (root / "queries.jsonl").write_text("\n".join(json.dumps(q) for q in [
        {"_id": "1", "text": "what boils water"}, {"_id": "2", "text": "what browns bread"},
        {"_id": "3", "text": "unjudged query"}]) + "\n")
    (root / "qrels").mkdir()
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n1\td1\t1\n2\td2\t2\n2\td3\t0\n")
    return root


def test_beir_layout(tmp_path):
    ds = load_dataset(make_beir(tmp_path / "beir"))
    assert ds.layout == "beir" and set(ds.documents) == {"d1", "d2", "d3"}
    assert [q.qid for q in ds.questions] == ["1", "2"]  # query 3 is not judged in this split
    ev = ds.questions[0].evidence[0]
    assert (ev.doc_id, ev.start, ev.end) == ("d1", 0, len(ds.documents["d1"].text))
    assert ds.documents["d1"].text == "Kettles\n\nA kettle boils water quickly."


def test_beir_errors(tmp_path):
    root = make_beir(tmp_path / "beir")
    with open(root / "qrels" / "test.tsv", "a") as fh:
        fh.write("9\td1\t1\n1\tdX\t1\n1\td1\n")
    found = problems(root)
    assert any("test.tsv:5:" in p and "unknown query '9'" in p for p in found)
    assert any("test.tsv:6:" in p and "unknown document 'dX'" in p for p in found)
    assert any("test.tsv:7:" in p and "3 tab-separated columns" in p for p in found)
    with pytest.raises(DataError, match="split 'dev' missing"):
        load_dataset(root, split="dev")


def test_fingerprint_keeps_digests_of_settled_files_and_sees_every_edit(tmp_path, monkeypatch):
    import os
    import time
    from pathlib import Path

    from rag_bench import digests
    from rag_bench.data import loader

    f = tmp_path / "doc.md"
    f.write_text("alpha")
    old = 1_000_000_000  # 2001
    os.utime(f, (old, old))
    reads = []
    real = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", lambda self: reads.append(self) or real(self))
    with monkeypatch.context() as m:
        real_ns = time.time_ns
        m.setattr(digests.time, "time_ns", lambda: real_ns() + 2 * digests.SETTLED_NS)  # as if 4 s later
        first = loader.fingerprint(tmp_path, [f])
        assert loader.fingerprint(tmp_path, [f]) == first and len(reads) == 1  # kept: read once
        time.sleep(0.05)  # the edit below lands in a later tick of the file system's clock
        f.write_text("omega")  # same size, mtime put back: the ctime still moves
        os.utime(f, (old, old))
        assert loader.fingerprint(tmp_path, [f]) != first and len(reads) == 2
    fresh = tmp_path / "new.md"
    fresh.write_text("just written")  # changed under 2 s ago: read every time
    loader.fingerprint(tmp_path, [f, fresh])
    loader.fingerprint(tmp_path, [f, fresh])
    assert reads.count(fresh) == 2


def test_the_public_conversation_set_validates(shared_dir, capsys):
    """issue 53: mtrag-un-cloud (122 turns of MTRAG-UN's IBM Cloud conversations, each with its history)
    passes validate as it is."""
    root = shared_dir / "datasets" / "mtrag-un-cloud"
    if not root.is_dir():
        pytest.skip(f"{root} is not on this machine (external data, never copied into the repo)")
    assert cli(["validate", str(root)]) == 0, capsys.readouterr().err
    qs = load_dataset(root).questions
    follow = [q for q in qs if "mt:Follow-up" in q.tags]
    assert len(qs) == 122 and follow and all(q.history for q in follow)
