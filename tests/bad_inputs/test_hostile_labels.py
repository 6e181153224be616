"""Fourth round of hostile inputs, around people's labels and the untrusted text the commands show:
control characters that drive a terminal or break the gate's JUnit file, bidirectional overrides on
the labelling page, labels that conflict or were drawn from the wrong answers, agreement and PPI
figures that claimed more than the labels show. Every case goes through the real command line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from rag_bench.cli import main as cli
from tests.bad_inputs.test_bad_inputs import copy_tiny, edit_questions
from tests.conftest import REPO
from tests.runner.test_run_cell import run

# What a hostile text tries on a terminal: set the window title (OSC ... BEL), clear the screen
# (CSI 2J), the same through the 8-bit CSI (C1), and a NUL.
TERMINAL_ATTACK = "\x1b]0;pwned\x07\x1b[2J\x9b2J\x00"
RAW = ("\x1b", "\x07", "\x9b", "\x00")


def no_raw_controls(text: str) -> None:
    assert not any(c in text for c in RAW), repr(text)
    assert "\\u001b" in text  # shown, escaped, where it was


# --- 4. control characters: refused in a dataset, shown escaped on the terminal ----------------

CONTROL_CASES = [
    ("esc-in-question", lambda q: q[0].update(question="How long\x1b[2J do I have?"), "question", "U+001B"),
    ("bel-in-question", lambda q: q[1].update(question="Pro plan\x07 cost?"), "question", "U+0007"),
    ("nul-in-answer", lambda q: q[0].update(answers=["within 14 days", "14\x00 days"]), "answers[1]", "U+0000"),
    ("del-in-fact", lambda q: q[0].update(facts=["14\x7f days"]), "facts[0]", "U+007F"),
    ("c1-csi-in-question", lambda q: q[2].update(question="How often\x9b2J?"), "question", "U+009B"),
]


@pytest.mark.parametrize("case,edit,field,code", CONTROL_CASES, ids=[c[0] for c in CONTROL_CASES])
def test_validate_refuses_control_characters_in_question_texts(tmp_path, capsys, case, edit, field, code):
    root = copy_tiny(tmp_path)
    edit_questions(root, edit)
    assert cli(["validate", str(root)]) == 2
    err = capsys.readouterr().err
    line = next(x for x in err.splitlines() if f"[{field}]" in x)
    assert "questions.jsonl:" in line and f"control character {code}" in line and "-- fix:" in line, err
    assert not any(c in err for c in RAW)


def test_validate_keeps_tab_newline_and_carriage_return(tmp_path, capsys):
    root = copy_tiny(tmp_path)
    edit_questions(root, lambda q: q[0].update(question="How long\tdo I have\r\nto get a refund?"))
    assert cli(["validate", str(root)]) == 0, capsys.readouterr().err


def test_validate_refuses_a_control_character_in_a_beir_query(tmp_path, capsys):
    root = tmp_path / "beir"
    shutil.copytree(REPO / "tests" / "fixtures" / "beir_graded", root)
    lines = (root / "queries.jsonl").read_text(encoding="utf-8").splitlines()
    lines[1] = json.dumps({**json.loads(lines[1]), "text": "delivery\x1b[2J cost"})
    (root / "queries.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert cli(["validate", str(root)]) == 2
    assert "queries.jsonl:2: [text] control character U+001B" in capsys.readouterr().err


def test_validate_shows_a_hostile_dataset_name_escaped(tmp_path, capsys):
    root = copy_tiny(tmp_path)
    (root / "dataset.yaml").write_text('name: "tiny\\e]0;pwned\\a\\e[2J"\n', encoding="utf-8")
    assert cli(["validate", str(root)]) == 0
    no_raw_controls(capsys.readouterr().out)


@pytest.fixture(scope="module")
def demo_pair(tmp_path_factory):
    """Two demo cells whose answers flip, their records' questions rewritten with terminal attacks
    (written before validation refused them, or by another tool)."""
    root = tmp_path_factory.mktemp("pair")
    cells = [run(root, "experiment.name=demo", dataset=None),
             run(root, "experiment.name=demo", "chunker=fixed", "chunker.size=100", "chunker.overlap=0", dataset=None)]
    for c in cells:
        r = pd.read_parquet(c / "records.parquet")
        r["question"] = [q + TERMINAL_ATTACK for q in r["question"]]
        r.to_parquet(c / "records.parquet")
    return cells


def test_compare_shows_question_texts_escaped(demo_pair, capsys):
    assert cli(["compare", str(demo_pair[0]), str(demo_pair[1])]) == 0
    out = capsys.readouterr().out
    assert "right in A, wrong in B" in out
    no_raw_controls(out)


def _labels_by(cell: Path, path: Path, *names: str, note: str = "") -> Path:
    from rag_bench.calibration.labels import answer_digest

    r = pd.read_parquet(cell / "records.parquet")
    rows = [{"qid": q, "answer_sha256": answer_digest(a), "measure": "correct", "value": 1, "labeller": who,
             **({"note": note} if note else {})} for q, a in zip(r["qid"][:3], r["answer"][:3]) for who in names]
    path.write_text("".join(json.dumps(x) + "\n" for x in rows), encoding="utf-8")
    return path


def test_calibrate_shows_a_labeller_name_with_a_bidi_override_escaped(demo_pair, tmp_path, capsys):
    labels = _labels_by(demo_pair[0], tmp_path / "labels.jsonl", "ann", "bob\u202eeve")
    assert cli(["calibrate", str(demo_pair[0]), "--labels", str(labels)]) == 0
    out = capsys.readouterr().out
    assert "ann vs bob\\u202eeve" in out and "\u202e" not in out


@pytest.mark.parametrize("field", ["labeller", "note"])
def test_labels_with_terminal_controls_are_refused(demo_pair, tmp_path, capsys, field):
    bad = "bob" + TERMINAL_ATTACK
    labels = _labels_by(demo_pair[0], tmp_path / "labels.jsonl", *(["ann", bad] if field == "labeller" else ["ann"]),
                        note=bad if field == "note" else "")
    assert cli(["calibrate", str(demo_pair[0]), "--labels", str(labels)]) == 2
    err = capsys.readouterr().err
    assert f"labels.jsonl:{2 if field == 'labeller' else 1}: [{field}] control character U+001B" in err, err
    assert not any(c in err for c in RAW)


def test_a_logged_question_cannot_drive_the_terminal(capsys):
    import logging

    from rag_bench.logs import setup_console

    setup_console()
    logging.getLogger("rag_bench.test").warning("question q1 %s", "How long?" + TERMINAL_ATTACK)
    no_raw_controls(capsys.readouterr().err)


# --- 21. the gate's JUnit file stays well-formed XML whatever the messages hold ---------------

@pytest.mark.parametrize("char", ["\x00", "\x01", "\x1b", "\x08", "\ufffe"], ids=["nul", "soh", "esc", "backspace", "fffe"])
def test_gate_junit_parses_whatever_control_character_a_message_holds(demo_pair, tmp_path, capsys, char):
    from xml.etree import ElementTree

    policy = tmp_path / "policy.yaml"
    # the labels path is echoed in the rule's message (no such labels file)
    policy.write_text("thresholds: {generation/correct: {min: 0.1}}\njudge_agreement: {measure: generation/correct, "
                      f"min_kappa: 0.5, labels: {json.dumps('lab' + char + 'els.jsonl')}}}\n", encoding="utf-8")
    junit = tmp_path / "gate.xml"
    assert cli(["gate", str(demo_pair[0]), "--policy", str(policy), "--junit", str(junit)]) == 2
    capsys.readouterr()
    suite = ElementTree.parse(junit).getroot()
    assert suite.get("tests") == "2" and suite.get("errors") == "1"
    (error,) = suite.iter("error")
    assert f"lab\\u{ord(char):04x}els.jsonl: no such labels file" in error.get("message", "")
    assert error.text == error.get("message")


# --- 26, 27: options the label and calibrate commands once crashed on --------------------------

@pytest.mark.parametrize("column", ["answer", "failure", "tags", "chunk_ids", "nosuch"])
def test_label_stratify_by_a_column_that_is_not_numeric_exits_2_with_the_choices(demo_pair, tmp_path, capsys, column):
    out = tmp_path / "label.html"
    assert cli(["label", str(demo_pair[0]), "--stratify", column, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"--stratify {column!r}" in err and "-- fix: one of correct, faithfulness, " in err, err
    assert "Traceback" not in err and not out.exists()


def test_calibrate_with_a_negative_seed_exits_2_with_a_hint(demo_pair, capsys):
    labels = REPO / "rag_bench" / "datasets" / "kettleby" / "labels.jsonl"
    assert cli(["calibrate", str(demo_pair[0]), "--labels", str(labels), "--seed", "-5"]) == 2
    err = capsys.readouterr().err
    assert "--seed must be a non-negative integer, got -5 -- fix: e.g. --seed 0" in err, err


# --- 23. a cell without answers is not labelled; an empty answer carries no label --------------

def test_label_refuses_a_cell_without_answers(tmp_path, capsys):
    cell = run(tmp_path, "experiment.name=none", "generator=none", dataset=None)
    out = tmp_path / "label.html"
    assert cli(["label", str(cell), "--out", str(out)]) == 2
    assert "the cell has no answers to label" in capsys.readouterr().err and not out.exists()


def _failed_cell(root: Path, failed: set[int]) -> Path:
    from tests.calibration.test_calibrate import write_cell

    d = write_cell(root)
    r = pd.read_parquet(d / "records.parquet")
    r["generation_error"] = [("HTTP 500" if i in failed else None) for i in range(len(r))]
    r.loc[r.index.isin(failed), "answer"] = ""
    r.to_parquet(d / "records.parquet")
    return d


def test_the_page_never_offers_a_failed_generation(tmp_path, capsys):
    d = _failed_cell(tmp_path / "exp", {0, 2})
    out = tmp_path / "label.html"
    assert cli(["label", str(d), "--n", "50", "--out", str(out)]) == 0
    assert "8 answers to label" in capsys.readouterr().out
    page = out.read_text(encoding="utf-8")
    assert '"qid": "q01"' not in page and '"qid": "q03"' not in page and '"answer": ""' not in page


def test_a_label_of_the_empty_answer_is_refused(tmp_path, capsys):
    from rag_bench.calibration.labels import answer_digest

    d = _failed_cell(tmp_path / "exp", {0})
    labels = tmp_path / "labels.jsonl"
    labels.write_text(json.dumps({"qid": "q01", "answer_sha256": answer_digest(""), "measure": "correct", "value": 0,
                                  "labeller": "a"}) + "\n", encoding="utf-8")
    assert cli(["calibrate", str(d), "--labels", str(labels)]) == 2
    assert "labels.jsonl:1: [answer_sha256] names the empty answer" in capsys.readouterr().err


def test_a_cell_label_does_not_judge_a_failed_generation(tmp_path, capsys):
    d = _failed_cell(tmp_path / "exp", {0})
    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(json.dumps({"qid": q, "cell": d.name, "measure": "correct", "value": 1, "labeller": "a"})
                              + "\n" for q in ("q01", "q02")), encoding="utf-8")
    assert cli(["calibrate", str(d), "--labels", str(labels), "--json"]) == 0
    (correct,) = [m for m in json.loads(capsys.readouterr().out)["measures"] if m["measure"] == "correct"]
    assert correct["n"] + correct["n_undefined"] == 1  # q02 only: q01 has no answer to judge


# --- 20. one labeller, one answer, two lines: refused however the answer is named -------------

def _keyed(how: str, cell: str, digest: str) -> dict:
    return {"digest": {"answer_sha256": digest}, "cell": {"cell": cell},
            "both": {"answer_sha256": digest, "cell": cell}}[how]


CONFLICTS = [("digest", "both"), ("both", "digest"), ("cell", "both"), ("both", "cell"), ("cell", "digest"),
             ("digest", "cell"), ("both", "both")]


@pytest.mark.parametrize("first,second", CONFLICTS, ids=[f"{a}-then-{b}" for a, b in CONFLICTS])
def test_two_verdicts_of_one_labeller_on_one_answer_are_refused(tmp_path, capsys, first, second):
    from rag_bench.calibration.labels import answer_digest
    from tests.calibration.test_calibrate import ANSWERS, write_cell

    d = write_cell(tmp_path / "exp")
    rows = [{"qid": "q02", **_keyed(how, d.name, answer_digest(ANSWERS[1])), "measure": "correct", "value": v,
             "labeller": "ann"} for how, v in ((first, 1), (second, 0))]
    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert cli(["calibrate", str(d), "--labels", str(labels)]) == 2
    err = capsys.readouterr().err
    assert "labels.jsonl:2: [labeller] ann labelled this answer's correct already on line 1" in err, err
    policy = tmp_path / "policy.yaml"
    policy.write_text("judge_agreement: {measure: generation/correct, min_kappa: 0, labels: labels.jsonl}\n")
    assert cli(["gate", str(d), "--policy", str(policy)]) == 2
    assert "labels.jsonl:2" in capsys.readouterr().out


def test_one_text_labelled_per_cell_and_by_two_labellers_is_no_conflict(tmp_path, capsys):
    from rag_bench.calibration.labels import answer_digest

    digest = answer_digest("Ten years.")
    rows = [{"qid": "q02", "answer_sha256": digest, "cell": c, "measure": "faithfulness", "value": v,
             "labeller": "ann"} for c, v in (("c0ffee000001", 1), ("c0ffee000002", 0))]
    rows.append({"qid": "q02", "answer_sha256": digest, "measure": "correct", "value": 1, "labeller": "bob"})
    rows.append({"qid": "q02", "cell": "c0ffee000001", "measure": "correct", "value": 1, "labeller": "ann"})
    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    from tests.calibration.test_calibrate import write_cell

    assert cli(["calibrate", str(write_cell(tmp_path / "exp")), "--labels", str(labels)]) == 0, capsys.readouterr().err


# --- 5. bidirectional overrides: the person sees the text that is stored ----------------------

RLO = "\u202e"  # RIGHT-TO-LEFT OVERRIDE: "Yes." + RLO + "on si ti" reads "Yes. it is no"
BIDI_FIELDS = {"answer": lambda r: r.__setitem__("answer", [a + RLO + "on si ti" for a in r["answer"]]),
               "question": lambda r: r.__setitem__("question", [q + "\u2067" + "?" for q in r["question"]]),
               "passage": lambda r: r.__setitem__("context_texts", [[t + "\u202d" for t in ts] for ts in r["context_texts"]]),
               "passage-id": lambda r: r.__setitem__("context_ids", [[c + "\u200f" for c in cs] for cs in r["context_ids"]])}


@pytest.mark.parametrize("field", sorted(BIDI_FIELDS))
def test_label_page_shows_bidi_controls_as_markers_and_isolates_texts(tmp_path, capsys, field):
    from tests.calibration.test_calibrate import write_cell

    d = write_cell(tmp_path / "exp")
    r = pd.read_parquet(d / "records.parquet")
    BIDI_FIELDS[field](r)
    r.to_parquet(d / "records.parquet")
    out = tmp_path / "label.html"
    assert cli(["label", str(d), "--out", str(out)]) == 0
    page = out.read_text(encoding="utf-8")
    assert not any(c in page for c in "\u202e\u2067\u202d\u200f"), field  # nothing reorders what is shown
    assert {"answer": "on si ti", "question": "\\\\u2067?", "passage": "\\\\u202d",
            "passage-id": "\\\\u200f"}[field] in page
    assert ".q,.ans,.pass,.ref{unicode-bidi:plaintext}" in page  # each text its own direction, isolated


def test_report_drill_down_and_tables_show_bidi_controls_as_markers(tmp_path):
    from rag_bench.cells import load_cell
    from rag_bench.reporting import drill, page
    from tests.calibration.test_calibrate import write_cell

    d = write_cell(tmp_path / "exp")
    r = pd.read_parquet(d / "records.parquet")
    for f in BIDI_FIELDS.values():
        f(r)
    r["tags"] = [[] for _ in range(len(r))]
    r.to_parquet(d / "records.parquet")
    cell = load_cell(d)
    drill.write(tmp_path / "report", [cell], ["cell" + RLO])
    written = "".join(p.read_text(encoding="utf-8") for p in (tmp_path / "report" / "drill").glob("*.js"))
    assert "on si ti" in written and not any(c in written for c in "\u202e\u2067\u202d")
    html = page.table([{"question": "Yes?" + RLO + "on"}])
    assert RLO not in html and "Yes?\\u202eon" in html
    assert ("td.l,.rb-answer,.pass,#rb-detail p,#rb-detail h3,#rb-side td,.rb-claim-text,.rb-excerpt"
            "{unicode-bidi:plaintext}") in page.CSS  # the claims' text and excerpts too (issue 42)


# --- 6. kappa's interval at small n: none, or exact, never a degenerate [1, 1] ----------------

@pytest.mark.parametrize("n", [3, 4, 9, 40])
def test_agreeing_labels_on_few_answers_do_not_pass_a_high_min_kappa(tmp_path, capsys, n):
    """The review's case: kappa's CI was [1.000, 1.000] whenever the labels agreed, so min_kappa 0.95
    passed on 3 labelled answers. Below 10 answers there is no interval; from 10 on, all agreeing,
    the exact bound; either way the rule fails and says how many more labels would do."""
    from rag_bench.calibration.agreement import items_without_disagreement
    from tests.calibration.test_gate_agreement import big_cell, label_rows

    auto = [float(i % 2) for i in range(n)]
    d = big_cell(tmp_path / "exp", auto)
    label_rows(tmp_path / "labels.jsonl", d, {i: int(v) for i, v in enumerate(auto)})
    policy = tmp_path / "policy.yaml"
    policy.write_text("judge_agreement: {measure: generation/correct, min_kappa: 0.95, labels: labels.jsonl}\n")
    assert cli(["gate", str(d), "--policy", str(policy)]) == 1
    out = capsys.readouterr().out
    need = items_without_disagreement(0.95, 1 - sum((auto.count(v) / n) ** 2 for v in (0.0, 1.0)))
    assert f"label at least {need - n} more answers of this cell" in out, out
    assert ("no 95% CI: " if n < 10 else "95% CI [0.824, 1.000] (exact bound") in out
    assert "1.000, 1.000" not in out


def test_calibrate_reports_no_interval_for_four_agreeing_answers(tmp_path, capsys):
    from tests.calibration.test_gate_agreement import big_cell, label_rows

    auto = [1.0, 0.0, 1.0, 0.0]
    d = big_cell(tmp_path / "exp", auto)
    labels = label_rows(tmp_path / "labels.jsonl", d, {i: int(v) for i, v in enumerate(auto)})
    assert cli(["calibrate", str(d), "--labels", str(labels)]) == 0
    out = capsys.readouterr().out
    assert "1.00 [no CI]" in out and "[1.00, 1.00]" not in out
    assert "no CI for correct: 4 labelled answers, fewer than the 10 an interval needs" in out
    assert cli(["calibrate", str(d), "--labels", str(labels), "--json"]) == 0
    (correct,) = [m for m in json.loads(capsys.readouterr().out)["measures"] if m["measure"] == "correct"]
    assert correct["kappa"] == 1 and correct["kappa_ci"] == [None, None]
    assert correct["kappa_ci_note"].startswith("4 labelled answers")


# --- 11. one kappa per meaning of `correct` -----------------------------------------------------

KETTLEBY_LABELS = REPO / "rag_bench" / "datasets" / "kettleby" / "labels.jsonl"


@pytest.mark.parametrize("a,b,groups", [
    ("eval.answer_match=contains", "eval.answer_match=em", ["eval.answer_match=contains", "eval.answer_match=em"]),
    ("eval.answer_match=f1", "eval.answer_match=f1 eval.f1_threshold=0.8",
     ["eval.answer_match=f1, eval.f1_threshold=0.5", "eval.answer_match=f1, eval.f1_threshold=0.8"]),
    ("eval.answer_match=contains", "eval.answer_match=contains eval.f1_threshold=0.8", []),  # f1_threshold unused
])
def test_calibrate_does_not_pool_cells_whose_correct_means_different_things(tmp_path, capsys, a, b, groups):
    """The review's case: an experiment swept eval.answer_match=contains,em and calibrate reported one
    kappa for `correct`, the first cell's in id order."""
    cells = [run(tmp_path, "experiment.name=match", *ov.split(), dataset=None) for ov in (a, b)]
    assert cli(["calibrate", str(tmp_path / "match"), "--labels", str(KETTLEBY_LABELS), "--json"]) == 0
    measured = json.loads(capsys.readouterr().out)["measures"]
    correct = [m for m in measured if m["measure"].split(" ")[0] == "correct"]
    assert [m["measure"] for m in correct] == (["correct"] if not groups else [f"correct ({g})" for g in groups])
    for m in correct if groups else ():  # each group: the numbers of its own cell, calibrated alone
        (cell,) = [c for c in cells if c.name == m["cells"][0]["cell"]]
        assert cli(["calibrate", str(cell), "--labels", str(KETTLEBY_LABELS), "--json"]) == 0
        (alone,) = [x for x in json.loads(capsys.readouterr().out)["measures"] if x["measure"] == "correct"]
        assert (m["n"], m["kappa"], m["confusion"]) == (alone["n"], alone["kappa"], alone["confusion"])
        assert len(m["cells"]) == 1 and m["parameters"]


def test_export_lines_decode_to_the_stored_answer_and_show_no_raw_controls(tmp_path, capsys):
    """export writes JSON with ensure_ascii=False: DEL, C1 and bidi characters came out raw. Written as
    \\uXXXX escapes they reach no terminal raw, and each line still decodes to the stored answer."""
    cell = run(tmp_path, "experiment.name=demo", dataset=None)
    r = pd.read_parquet(cell / "records.parquet")
    r["answer"] = [a + "\x7f\x85\u202e\x1b[2J" for a in r["answer"]]
    r.to_parquet(cell / "records.parquet")
    assert cli(["export", str(cell)]) == 0
    out = capsys.readouterr().out
    assert not any(c in out for c in "\x7f\x85\u202e\x1b")
    lines = [json.loads(x) for x in out.splitlines()]
    assert [x["answer"] for x in lines] == list(r["answer"])
